/*
 * spank_baton: runs every task of a job step under Baton.
 *
 * The priority of a step is the job's --gpu-priority=N, else the priority plugstack.conf gives
 * the job's QoS (qos:NAME=N), else the site default; never above the site cap.
 *
 * In slurmstepd, as root and before the step's tasks are started (init_post_opt), it records
 * that priority where the job cannot write: one file per step, STEPS/job_<JOB>.step_<STEP>
 * (STEP a number, or batch, extern or interactive, as in Slurm's cgroup paths), written aside
 * and renamed into place, mode 0644 in a directory of mode 0755, both root's. The record names
 * slurmstepd (its pid and start time), so that it holds only while this slurmstepd lives; the
 * plugin removes it when the step ends (exit). The node's daemon (`baton daemon --system
 * --slurm-steps STEPS`) finds each connecting process's step (its cgroup, else its ancestry)
 * and holds it to the record: whatever the job sets in BATON_PRIORITY, root included. A step
 * whose record cannot be written does not start.
 *
 * In each task's environment it sets LD_PRELOAD (the interposer first), BATON_SCHEDULER=global,
 * BATON_SOCKET and BATON_PRIORITY (the step's priority, as its default).
 *
 * plugstack.conf:
 *   required /usr/lib/x86_64-linux-gnu/slurm/spank_baton.so default=0 max=50 \
 *       qos:high=50 qos:normal=0 qos:scavenger=-50 \
 *       interposer=/var/lib/baton/lib/libbaton_interposer.so socket=/run/baton/baton.sock \
 *       steps=/run/baton/slurm
 *
 * Build: cc -shared -fPIC -o spank_baton.so spank_baton.c (needs slurm/spank.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <slurm/spank.h>

/* The step ids Slurm gives its special steps (slurm/slurm.h). */
#ifndef SLURM_BATCH_SCRIPT
#define SLURM_BATCH_SCRIPT 0xfffffffb
#endif
#ifndef SLURM_EXTERN_CONT
#define SLURM_EXTERN_CONT 0xfffffffc
#endif
#ifndef SLURM_INTERACTIVE_STEP
#define SLURM_INTERACTIVE_STEP 0xfffffffa
#endif

SPANK_PLUGIN(baton, 1);

#define MAX_QOS 32

static int site_default = 0;
static int site_max = 100;
static int asked = 0, asked_set = 0;
static const char *interposer = "/var/lib/baton/lib/libbaton_interposer.so";
static const char *socket_path = "/run/baton/baton.sock";
static const char *steps_dir = "/run/baton/slurm";
/* The step's priority, decided once in slurmstepd (init_post_opt); its tasks, forked from it,
 * inherit it. */
static int step_priority = 0, step_priority_set = 0;
/* The record this slurmstepd wrote, removed when the step ends. */
static char record_path[4096];
static struct { char name[64]; int priority; } qos[MAX_QOS];
static int n_qos = 0;

static int parse_priority(const char *s, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v < -100 || v > 100)
		return -1;
	*out = (int)v;
	return 0;
}

static int gpu_priority_cb(int val, const char *optarg, int remote)
{
	(void)val;
	(void)remote;
	if (optarg == NULL || parse_priority(optarg, &asked) != 0) {
		slurm_error("baton: --gpu-priority takes an integer from -100 to 100");
		return -1;
	}
	asked_set = 1;
	return 0;
}

/* Registered from slurm_spank_init in every context: an exported spank_options table reaches
 * srun and slurmstepd only, so sbatch and salloc would refuse the option. */
static struct spank_option gpu_priority_option = {
	"gpu-priority", "N", "Baton priority of the job's GPU work (-100..100; capped by the site)",
	1, 0, (spank_opt_cb_f)gpu_priority_cb
};

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	if (spank_option_register(sp, &gpu_priority_option) != ESPANK_SUCCESS) {
		slurm_error("baton: could not register --gpu-priority");
		return -1;
	}
	for (int i = 0; i < ac; i++) {
		const char *a = av[i];
		int bad = 0;
		if (strncmp(a, "default=", 8) == 0)
			bad = parse_priority(a + 8, &site_default);
		else if (strncmp(a, "max=", 4) == 0)
			bad = parse_priority(a + 4, &site_max);
		else if (strncmp(a, "interposer=", 11) == 0)
			interposer = a + 11;
		else if (strncmp(a, "socket=", 7) == 0)
			socket_path = a + 7;
		else if (strncmp(a, "steps=", 6) == 0 && a[6] == '/')
			steps_dir = a + 6;
		else if (strncmp(a, "qos:", 4) == 0 && strchr(a, '=') != NULL && n_qos < MAX_QOS) {
			const char *eq = strchr(a, '=');
			size_t n = (size_t)(eq - (a + 4));
			if (n == 0 || n >= sizeof qos[0].name)
				bad = 1;
			else {
				memcpy(qos[n_qos].name, a + 4, n);
				qos[n_qos].name[n] = '\0';
				bad = parse_priority(eq + 1, &qos[n_qos].priority);
				n_qos += !bad;
			}
		} else
			bad = 1;
		if (bad) {
			slurm_error("baton: plugstack.conf argument '%s' not understood", a);
			return -1;
		}
	}
	return 0;
}

/* The job's QoS, as the step's environment names it. */
static int qos_priority(spank_t sp, int *out)
{
	char name[64];
	if (spank_getenv(sp, "SLURM_JOB_QOS", name, sizeof name) != ESPANK_SUCCESS)
		return -1;
	for (int i = 0; i < n_qos; i++)
		if (strcmp(qos[i].name, name) == 0) {
			*out = qos[i].priority;
			return 0;
		}
	return -1;
}

/* Whether the LD_PRELOAD list `list` (separated by colons or spaces) names `lib`. */
static int preloads(const char *list, const char *lib)
{
	size_t n = strlen(lib);
	for (const char *p = list; (p = strstr(p, lib)) != NULL; p += n) {
		int starts = p == list || p[-1] == ':' || p[-1] == ' ';
		int ends = p[n] == '\0' || p[n] == ':' || p[n] == ' ';
		if (starts && ends)
			return 1;
	}
	return 0;
}

/* The step's priority: --gpu-priority, else the QoS's, else the site default; at most the cap. */
static int priority_of(spank_t sp)
{
	if (step_priority_set)
		return step_priority;
	int p = site_default;
	if (asked_set)
		p = asked;
	else
		(void)qos_priority(sp, &p);
	if (p > site_max)
		p = site_max;
	step_priority = p;
	step_priority_set = 1;
	return p;
}

/* This process's start time (field 22 of /proc/self/stat), in clock ticks since boot. */
static int start_time(unsigned long long *out)
{
	char buf[1024];
	FILE *f = fopen("/proc/self/stat", "r");
	if (f == NULL)
		return -1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name, in parentheses, may hold anything: fields resume after the last ')'. */
	char *p = strrchr(buf, ')');
	if (p == NULL)
		return -1;
	/* p + 2 is field 3 (state); field 22 is 19 fields further on. */
	p += 2;
	for (int i = 0; i < 19 && p != NULL; i++) {
		p = strchr(p, ' ');
		p = p != NULL ? p + 1 : NULL;
	}
	if (p == NULL || sscanf(p, "%llu", out) != 1)
		return -1;
	return 0;
}

/* Makes `dir` (and missing parents) root's, mode 0755, and checks that it is: a directory
 * owned by root that no one else may write, so no job can put a record of its own there. */
static int trusted_dir(const char *dir)
{
	char path[4096];
	if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
		return -1;
	for (char *p = path + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		return -1;
	struct stat st;
	if (lstat(path, &st) != 0)
		return -1;
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022) != 0) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

/* Records the step's priority for the node's daemon (see the top of this file). */
static int write_record(spank_t sp, int priority)
{
	uint32_t job, step;
	unsigned long long start;
	char name[64], tmp[4096], text[256];
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS
	    || spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS) {
		slurm_error("baton: cannot tell the job step's id");
		return -1;
	}
	if (step == SLURM_BATCH_SCRIPT)
		snprintf(name, sizeof name, "batch");
	else if (step == SLURM_EXTERN_CONT)
		snprintf(name, sizeof name, "extern");
	else if (step == SLURM_INTERACTIVE_STEP)
		snprintf(name, sizeof name, "interactive");
	else
		snprintf(name, sizeof name, "%u", step);
	if (start_time(&start) != 0) {
		slurm_error("baton: cannot read slurmstepd's start time: %m");
		return -1;
	}
	if (trusted_dir(steps_dir) != 0) {
		slurm_error("baton: %s must be a directory of root's that no one else may write: %m",
			    steps_dir);
		return -1;
	}
	int n = snprintf(record_path, sizeof record_path, "%s/job_%u.step_%s", steps_dir, job, name);
	int m = snprintf(tmp, sizeof tmp, "%s/.job_%u.step_%s.%ld", steps_dir, job, name,
			 (long)getpid());
	int len = snprintf(text, sizeof text,
			   "job=%u\nstep=%s\npriority=%d\nstepd_pid=%ld\nstepd_start=%llu\n",
			   job, name, priority, (long)getpid(), start);
	if (n >= (int)sizeof record_path || m >= (int)sizeof tmp || len >= (int)sizeof text) {
		record_path[0] = '\0';
		slurm_error("baton: the record's path is too long");
		return -1;
	}
	(void)unlink(tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	int ok = fd >= 0 && fchmod(fd, 0644) == 0 && write(fd, text, (size_t)len) == len;
	if (fd >= 0 && close(fd) != 0)
		ok = 0;
	if (!ok || rename(tmp, record_path) != 0) {
		slurm_error("baton: cannot write %s: %m", record_path);
		(void)unlink(tmp);
		record_path[0] = '\0';
		return -1;
	}
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (!spank_remote(sp))
		return 0;
	return write_record(sp, priority_of(sp));
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_remote(sp) && record_path[0] != '\0' && unlink(record_path) != 0 && errno != ENOENT)
		slurm_error("baton: cannot remove %s: %m", record_path);
	return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	int p = priority_of(sp);
	char buf[4096], value[16];
	if (spank_getenv(sp, "LD_PRELOAD", buf, sizeof buf) == ESPANK_SUCCESS && buf[0] != '\0') {
		/* An srun inside a batch job inherits the batch task's LD_PRELOAD: keep it as is,
		 * rather than naming the interposer once more for every nested step. */
		if (!preloads(buf, interposer)) {
			char joined[4096 + 512];
			snprintf(joined, sizeof joined, "%s:%s", interposer, buf);
			spank_setenv(sp, "LD_PRELOAD", joined, 1);
		}
	} else
		spank_setenv(sp, "LD_PRELOAD", interposer, 1);
	spank_setenv(sp, "BATON_SCHEDULER", "global", 1);
	spank_setenv(sp, "BATON_SOCKET", socket_path, 1);
	snprintf(value, sizeof value, "%d", p);
	spank_setenv(sp, "BATON_PRIORITY", value, 1);
	return 0;
}
