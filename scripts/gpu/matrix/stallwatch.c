// stallwatch: finds the moments a CPU of this machine ran nothing of the guest's.
//
//   stallwatch OUT.json [PERIOD_US [THRESHOLD_US]]
//
// One thread per CPU, pinned to it, under SCHED_FIFO when allowed (else at the lowest nice
// value), wakes every PERIOD_US (default 1000) and reads CLOCK_MONOTONIC. A wake-up later than
// THRESHOLD_US (default 5000) after the previous one is a gap: nothing that thread's CPU ran
// could have let it run (a real-time thread preempts every ordinary one at once), so on a VM it
// is the virtual CPU being off its host CPU, which the guest cannot see otherwise (no steal,
// no context switch of the thread that was running). On SIGTERM or SIGINT writes OUT.json:
// {"schema": "baton.stallwatch/1", "clock": "CLOCK_MONOTONIC", "fifo": bool, "period_us",
//  "threshold_us", "cpus", "gaps": [[cpu, start_s, end_s], ...]} and exits.
// Build: gcc -O2 -pthread -o stallwatch stallwatch.c
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_GAPS 200000

static double gaps[MAX_GAPS][3];
static long n_gaps;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long period_us = 1000, threshold_us = 5000;
static int fifo_ok = 1;
static volatile sig_atomic_t stop;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *watch(void *arg) {
    long cpu = (long)arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    struct sched_param sp = {.sched_priority = 1};
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) != 0) {
        fifo_ok = 0;
        setpriority(PRIO_PROCESS, 0, -20);
    }
    struct timespec sl = {.tv_sec = 0, .tv_nsec = period_us * 1000};
    double last = now_s();
    while (!stop) {
        nanosleep(&sl, NULL);
        double t = now_s();
        if ((t - last) * 1e6 > (double)threshold_us) {
            pthread_mutex_lock(&lock);
            if (n_gaps < MAX_GAPS) {
                gaps[n_gaps][0] = (double)cpu;
                gaps[n_gaps][1] = last;
                gaps[n_gaps][2] = t;
                n_gaps++;
            }
            pthread_mutex_unlock(&lock);
        }
        last = t;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUT.json [PERIOD_US [THRESHOLD_US]]\n", argv[0]);
        return 2;
    }
    if (argc > 2) period_us = atol(argv[2]);
    if (argc > 3) threshold_us = atol(argv[3]);
    if (period_us <= 0 || threshold_us <= period_us) {
        fprintf(stderr, "stallwatch: need 0 < PERIOD_US < THRESHOLD_US\n");
        return 2;
    }
    // The watchers inherit these blocked; the main thread takes them with sigwait.
    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGTERM);
    sigaddset(&ss, SIGINT);
    pthread_sigmask(SIG_BLOCK, &ss, NULL);
    cpu_set_t mine;
    sched_getaffinity(0, sizeof mine, &mine);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    pthread_t th[1024];
    long cpus[1024], n = 0;
    for (long c = 0; c < ncpu && n < 1024; c++) {
        if (!CPU_ISSET(c, &mine)) continue;
        if (pthread_create(&th[n], NULL, watch, (void *)c) != 0) {
            fprintf(stderr, "stallwatch: cannot start a thread for CPU %ld: %s\n", c, strerror(errno));
            return 1;
        }
        cpus[n++] = c;
    }
    int sig;
    sigwait(&ss, &sig);
    stop = 1;
    for (long i = 0; i < n; i++) pthread_join(th[i], NULL);
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        fprintf(stderr, "stallwatch: cannot write %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    fprintf(f, "{\"schema\": \"baton.stallwatch/1\", \"clock\": \"CLOCK_MONOTONIC\", \"fifo\": %s, "
               "\"period_us\": %ld, \"threshold_us\": %ld, \"cpus\": [",
            fifo_ok ? "true" : "false", period_us, threshold_us);
    for (long i = 0; i < n; i++) fprintf(f, "%s%ld", i ? ", " : "", cpus[i]);
    fprintf(f, "], \"gaps\": [");
    for (long i = 0; i < n_gaps; i++)
        fprintf(f, "%s[%d, %.6f, %.6f]", i ? ", " : "", (int)gaps[i][0], gaps[i][1], gaps[i][2]);
    fprintf(f, "]}\n");
    fclose(f);
    return 0;
}
