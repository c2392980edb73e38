/* A program that uses Baton's C ABI (include/baton.h, linked with -lbaton) on the driver API
 * (-lcuda). Its first argument says how it was started and so what every call must answer:
 *
 *   absent    no `baton run`: every call is BATON_ERR_NOT_LOADED, versions and messages work;
 *   local     under the interposer, a scheduler in the process: priorities, hints, status;
 *   global    the same under `baton run` with a daemon; then it waits for the file named by
 *             BATON_TEST_GO, so the test can read the daemon's listing meanwhile;
 *   app       BATON_SCHEDULER=app: the program suspends and resumes its own stream;
 *   disabled  BATON_ENABLE=off: BATON_ERR_DISABLED.
 *
 * It prints one line, "<mode> ok", and exits 0, or names the first check that failed. */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baton.h"
#include "driver_api.h"

static const char *mode;

#define FAIL(...)                                  \
    do {                                           \
        fprintf(stderr, "capi %s: ", mode);        \
        fprintf(stderr, __VA_ARGS__);              \
        fprintf(stderr, "\n");                     \
        return 1;                                  \
    } while (0)

#define CU(call)                                                  \
    do {                                                          \
        CUresult s_ = (call);                                     \
        if (s_ != 0) FAIL("%s returned CUDA error %d", #call, s_); \
    } while (0)

/* `call` must return `code`. */
#define EXPECT(call, code)                                                                     \
    do {                                                                                       \
        int32_t r_ = (call);                                                                   \
        if (r_ != (code))                                                                      \
            FAIL("%s returned %d (%s: %s), not %s", #call, r_, baton_error_message(r_),        \
                 baton_last_error(), #code);                                                   \
    } while (0)

/* Stream `s`'s priority must be `p`. */
#define PRIORITY_IS(s, p)                                                        \
    do {                                                                         \
        int32_t got_ = -1000;                                                    \
        EXPECT(baton_get_stream_priority((s), &got_), BATON_OK);                 \
        if (got_ != (p)) FAIL("priority of %s is %d, not %d", #s, got_, (int)(p)); \
    } while (0)

static CUfunction append;

/* append_tag(int* log, int* counter, int tag) */
static CUresult tag(CUstream s, CUdeviceptr log, CUdeviceptr counter, int t) {
    void *params[3] = {&log, &counter, &t};
    return cuLaunchKernel(append, 1, 1, 1, 32, 1, 1, 0, s, params, NULL);
}

static int absent(void) {
    BatonHint h = {BATON_HINT_DEADLINE, 0, 20000000, 0, 0.0};
    BatonStatus st;
    BatonQueue q[2];
    size_t n = 0;
    int32_t p = 0;
    if (baton_abi_version() >> 16 != BATON_ABI_VERSION_MAJOR) FAIL("ABI major %u", baton_abi_version() >> 16);
    if (strstr(baton_error_message(BATON_ERR_NOT_LOADED), "baton run") == NULL) FAIL("message");
    if (strcmp(baton_error_message(12345), "unknown error code") != 0) FAIL("unknown code message");
    EXPECT(baton_set_thread_priority(10), BATON_ERR_NOT_LOADED);
    EXPECT(baton_clear_thread_priority(), BATON_ERR_NOT_LOADED);
    EXPECT(baton_set_stream_priority(NULL, 10), BATON_ERR_NOT_LOADED);
    EXPECT(baton_clear_stream_priority(NULL), BATON_ERR_NOT_LOADED);
    EXPECT(baton_get_stream_priority(NULL, &p), BATON_ERR_NOT_LOADED);
    EXPECT(baton_get_stream_own_priority(NULL, &p), BATON_ERR_NOT_LOADED);
    EXPECT(baton_set_process_priority(10), BATON_ERR_NOT_LOADED);
    EXPECT(baton_hint_stream(NULL, &h), BATON_ERR_NOT_LOADED);
    EXPECT(baton_hint_process(&h), BATON_ERR_NOT_LOADED);
    EXPECT(baton_suspend_stream(NULL), BATON_ERR_NOT_LOADED);
    EXPECT(baton_resume_stream(NULL), BATON_ERR_NOT_LOADED);
    EXPECT(baton_status(&st), BATON_ERR_NOT_LOADED);
    EXPECT(baton_queues(q, 2, &n), BATON_ERR_NOT_LOADED);
    if (strstr(baton_last_error(), "baton run") == NULL) FAIL("last error: %s", baton_last_error());
    return 0;
}

/* What a scheduled process (local or global) must answer. `s0` and `s1` are its streams. */
static int scheduled(CUstream s0, CUstream s1, CUdeviceptr log, CUdeviceptr counter, int global) {
    int32_t p = 0;
    BatonStatus st;
    BatonQueue q[64];
    size_t n = 0;
    BatonHint deadline = {BATON_HINT_DEADLINE, 0, 20000000, 0, 0.0};
    BatonHint upcoming = {BATON_HINT_UPCOMING, 0, 2000000, 3000000, 0.0};
    BatonHint util = {BATON_HINT_UTILIZATION, 0, 0, 0, 30.0};
    BatonHint lax = {BATON_HINT_LAXITY, 50, 1000000, 0, 0.0};
    BatonHint clear = {BATON_HINT_DEADLINE | BATON_HINT_CLEAR, 0, 0, 0, 0.0};
    BatonHint unknown = {42, 0, 0, 0, 0.0};
    BatonHint too_short = {BATON_HINT_DEADLINE, 0, 5, 0, 0.0};

    /* A stream's own priority. */
    PRIORITY_IS(s0, 0);
    EXPECT(baton_get_stream_own_priority(s0, &p), BATON_OK);
    if (p != BATON_NO_PRIORITY) FAIL("own priority %d before any", p);
    EXPECT(baton_set_stream_priority(s0, 10), BATON_OK);
    EXPECT(baton_get_stream_own_priority(s0, &p), BATON_OK);
    if (p != 10) FAIL("own priority %d", p);
    if (baton_last_error()[0] != '\0') FAIL("last error after success: %s", baton_last_error());
    PRIORITY_IS(s0, 10);
    /* Bad calls. */
    EXPECT(baton_set_stream_priority(s0, 101), BATON_ERR_OUT_OF_RANGE);
    if (strstr(baton_last_error(), "between -100 and 100") == NULL) FAIL("detail: %s", baton_last_error());
    EXPECT(baton_set_thread_priority(-101), BATON_ERR_OUT_OF_RANGE);
    EXPECT(baton_set_process_priority(1000), BATON_ERR_OUT_OF_RANGE);
    EXPECT(baton_set_stream_priority((void *)0xdead0, 5), BATON_ERR_UNKNOWN_STREAM);
    if (strstr(baton_last_error(), "0xdead0") == NULL) FAIL("detail: %s", baton_last_error());
    EXPECT(baton_get_stream_priority(s0, NULL), BATON_ERR_INVALID_ARGUMENT);
    EXPECT(baton_hint_stream(s0, NULL), BATON_ERR_INVALID_ARGUMENT);
    EXPECT(baton_hint_stream(s0, &unknown), BATON_ERR_INVALID_ARGUMENT);
    EXPECT(baton_hint_stream(s0, &too_short), BATON_ERR_OUT_OF_RANGE);
    EXPECT(baton_status(NULL), BATON_ERR_INVALID_ARGUMENT);
    EXPECT(baton_suspend_stream(s0), BATON_ERR_NOT_APP_MANAGED);
    PRIORITY_IS(s0, 10);

    /* A thread's priority follows its work onto the streams it launches on, and leaves. */
    EXPECT(baton_set_thread_priority(7), BATON_OK);
    PRIORITY_IS(s1, 0);
    CU(tag(s1, log, counter, 1));
    PRIORITY_IS(s1, 7);
    CU(tag(s0, log, counter, 2));
    PRIORITY_IS(s0, 7);
    EXPECT(baton_clear_thread_priority(), BATON_OK);
    CU(tag(s1, log, counter, 3));
    CU(tag(s0, log, counter, 4));
    PRIORITY_IS(s1, 0);
    PRIORITY_IS(s0, 10);

    /* The process's priority moves streams without their own. */
    EXPECT(baton_set_process_priority(3), BATON_OK);
    PRIORITY_IS(s1, 3);
    PRIORITY_IS(s0, 10);
    EXPECT(baton_clear_stream_priority(s0), BATON_OK);
    PRIORITY_IS(s0, 3);
    EXPECT(baton_set_stream_priority(s0, 10), BATON_OK);

    /* Hints. */
    EXPECT(baton_hint_stream(s0, &deadline), BATON_OK);
    EXPECT(baton_hint_stream(s0, &upcoming), BATON_OK);
    EXPECT(baton_hint_stream(s0, &lax), BATON_OK);
    EXPECT(baton_hint_process(&util), BATON_OK);
    EXPECT(baton_hint_stream(s1, &deadline), BATON_OK);
    EXPECT(baton_hint_stream(s1, &clear), BATON_OK);

    /* Status and queues. The agent connects to the daemon in the background (what was set
     * before is sent once it has): on a loaded machine the first status can come before the
     * connection, so wait for it (20 s at most) rather than race it. */
    EXPECT(baton_status(&st), BATON_OK);
    for (int i = 0; global && st.connected != 1 && i < 2000; i++) {
        usleep(10000);
        EXPECT(baton_status(&st), BATON_OK);
    }
    if (st.scheduler != (global ? BATON_SCHEDULER_GLOBAL : BATON_SCHEDULER_LOCAL)) FAIL("scheduler %u", st.scheduler);
    if (st.process_priority != 3) FAIL("process priority %d", st.process_priority);
    if (st.queues < 2) FAIL("%u queues", st.queues);
    if (st.abi_version != BATON_ABI_VERSION) FAIL("status ABI %#x", st.abi_version);
    if (!global && strcmp(st.policy, "hpf") != 0) FAIL("policy '%s'", st.policy);
    if (global && st.connected != 1) FAIL("not connected to the daemon");
    EXPECT(baton_queues(q, 0, &n), BATON_ERR_BUFFER_TOO_SMALL);
    if (n != st.queues) FAIL("count %zu, status %u", n, st.queues);
    EXPECT(baton_queues(q, 64, &n), BATON_OK);
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        if (q[i].stream == (uint64_t)(uintptr_t)s0) {
            found = 1;
            if (q[i].priority != 10 || q[i].kind != BATON_STREAM_REGULAR || q[i].submitted < 2)
                FAIL("queue of s0: priority %d kind %u submitted %llu", q[i].priority, q[i].kind,
                     (unsigned long long)q[i].submitted);
        }
    }
    if (!found) FAIL("s0 not among the queues");
    return 0;
}

/* An application that schedules its own queues. */
static int app(CUstream s0, CUdeviceptr log, CUdeviceptr counter) {
    BatonQueue q[64];
    size_t n = 0;
    EXPECT(baton_set_stream_priority(s0, 10), BATON_ERR_APP_MANAGED);
    EXPECT(baton_set_thread_priority(1), BATON_ERR_APP_MANAGED);
    EXPECT(baton_suspend_stream(s0), BATON_OK);
    for (int t = 0; t < 4; t++) CU(tag(s0, log, counter, 10 + t));
    usleep(50000);
    EXPECT(baton_queues(q, 64, &n), BATON_OK);
    for (size_t i = 0; i < n; i++) {
        if (q[i].stream == (uint64_t)(uintptr_t)s0 && (q[i].suspended != 1 || q[i].pending != 4))
            FAIL("suspended s0: suspended %u pending %llu", q[i].suspended, (unsigned long long)q[i].pending);
    }
    /* (A copy on the legacy stream here would launch them: it waits for s0, as CUDA says.) */
    int tags[4] = {0};
    EXPECT(baton_resume_stream(s0), BATON_OK);
    CU(cuStreamSynchronize(s0));
    CU(cuMemcpyDtoH_v2(tags, log, sizeof(tags)));
    for (int t = 0; t < 4; t++)
        if (tags[t] != 10 + t) FAIL("tag %d is %d after resuming", t, tags[t]);
    /* Synchronizing the whole context while its own stream is suspended: the program is the
       only one that could resume it, so what it holds runs rather than wait for ever. */
    EXPECT(baton_suspend_stream(s0), BATON_OK);
    for (int t = 4; t < 8; t++) CU(tag(s0, log, counter, 10 + t));
    CU(cuCtxSynchronize());
    int more[8] = {0};
    CU(cuMemcpyDtoH_v2(more, log, sizeof(more)));
    for (int t = 4; t < 8; t++)
        if (more[t] != 10 + t) FAIL("tag %d is %d after synchronizing the context", t, more[t]);
    EXPECT(baton_resume_stream(s0), BATON_OK);
    return 0;
}

int main(int argc, char **argv) {
    static const char image[] = ".fake_cuda_module append_tag";
    CUdevice dev;
    CUcontext ctx;
    CUmodule module;
    CUstream s0, s1;
    CUdeviceptr log, counter;
    mode = argc > 1 ? argv[1] : "?";
    CU(cuInit(0));
    CU(cuDeviceGet(&dev, 0));
    CU(cuCtxCreate_v2(&ctx, 0, dev));
    CU(cuModuleLoadData(&module, image));
    CU(cuModuleGetFunction(&append, module, "append_tag"));
    CU(cuStreamCreate(&s0, 0));
    CU(cuStreamCreate(&s1, 0));
    CU(cuMemAlloc_v2(&log, 64 * sizeof(int)));
    CU(cuMemAlloc_v2(&counter, sizeof(int)));
    CU(cuMemsetD32_v2(counter, 0, 1));
    int failed;
    if (strcmp(mode, "absent") == 0) {
        failed = absent();
    } else if (strcmp(mode, "local") == 0 || strcmp(mode, "global") == 0) {
        int global = strcmp(mode, "global") == 0;
        failed = scheduled(s0, s1, log, counter, global);
        if (!failed && global) {
            const char *go = getenv("BATON_TEST_GO");
            printf("ready\n");
            fflush(stdout);
            for (int i = 0; go != NULL && access(go, F_OK) != 0; i++) {
                if (i > 30000) FAIL("no go file");
                usleep(2000);
            }
        }
    } else if (strcmp(mode, "app") == 0) {
        failed = app(s0, log, counter);
    } else if (strcmp(mode, "disabled") == 0) {
        EXPECT(baton_set_stream_priority(s0, 10), BATON_ERR_DISABLED);
        EXPECT(baton_status(&(BatonStatus){0}), BATON_ERR_DISABLED);
        failed = 0;
    } else {
        FAIL("unknown mode");
    }
    if (failed) return 1;
    CU(cuStreamSynchronize(s0));
    CU(cuStreamSynchronize(s1));
    printf("%s ok\n", mode);
    return 0;
}
