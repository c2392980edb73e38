/*
 * Baton's C ABI: priorities, hints and queue status from a program's own code.
 *
 * Generated from crates/capi and crates/libbaton by cbindgen; do not edit
 * (`BATON_BLESS=1 cargo test -p baton-libbaton --test header` regenerates it).
 *
 * Link with -lbaton. Under `baton run` every call reaches the interposer Baton preloaded;
 * without it, every call returns BATON_ERR_NOT_LOADED. Streams are CUstream handles
 * (cudaStream_t is the same pointer); NULL names the calling thread's default stream.
 */

#ifndef BATON_H
#define BATON_H

#include <stddef.h>
#include <stdint.h>

// The ABI's major version: incompatible changes.
#define BATON_ABI_VERSION_MAJOR 1

// The ABI's minor version: additions.
#define BATON_ABI_VERSION_MINOR 0

// `baton_abi_version()`'s answer: major in the high 16 bits, minor in the low 16.
#define BATON_ABI_VERSION ((BATON_ABI_VERSION_MAJOR << 16) | BATON_ABI_VERSION_MINOR)

// `baton_get_stream_own_priority`'s answer for a stream with no priority of its own.
#define BATON_NO_PRIORITY INT32_MIN

// Success.
#define BATON_OK 0

// Baton is not loaded in this process (it was not started under `baton run`).
#define BATON_ERR_NOT_LOADED 1

// Baton is loaded but switched off (`BATON_ENABLE=off`).
#define BATON_ERR_DISABLED 2

// Baton is loaded but could not open the CUDA driver; nothing is scheduled.
#define BATON_ERR_NO_DRIVER 3

// An argument is invalid: a null pointer, an unknown hint kind.
#define BATON_ERR_INVALID_ARGUMENT 4

// A value is out of its range (a priority outside −100..=100, a deadline over an hour…).
#define BATON_ERR_OUT_OF_RANGE 5

// The stream is not a live CUDA stream, or a default stream was named with no current
// context on the calling thread.
#define BATON_ERR_UNKNOWN_STREAM 6

// A scheduler suspends and resumes this process's queues; the application may only when it
// schedules them itself (`BATON_SCHEDULER=app`).
#define BATON_ERR_NOT_APP_MANAGED 7

// The application schedules its queues itself (`BATON_SCHEDULER=app`): priorities and hints
// have no scheduler to go to.
#define BATON_ERR_APP_MANAGED 8

// The caller's buffer holds fewer entries than there are; the count says how many.
#define BATON_ERR_BUFFER_TOO_SMALL 9

// Baton failed inside; the process goes on unchanged.
#define BATON_ERR_INTERNAL 10

// Hint kind (`BatonHint::kind`): each job of the stream should finish within `value_ns` of its release (10 µs..=1 h).
#define BATON_HINT_DEADLINE 1

// Hint kind: reserve `percent` % of the device's time (0.1..=100; whole percents in global mode).
#define BATON_HINT_UTILIZATION 2

// Hint kind: after waiting `value_ns` (0..=1 h), a job runs at `priority` (the critical priority).
#define BATON_HINT_LAXITY 3

// Hint kind: work arrives in `value_ns` (0..=10 s); the hint lapses `until_ns` after that if none came
// (0..=10 s): pre-preemption starts making room before the work arrives.
#define BATON_HINT_UPCOMING 4

// OR-ed with a hint kind: removes the hint of that kind instead of giving one.
#define BATON_HINT_CLEAR 256

// Scheduler (`BatonStatus::scheduler`): the application suspends and resumes its queues itself.
#define BATON_SCHEDULER_APP 1

// Scheduler: a policy on a thread of this process.
#define BATON_SCHEDULER_LOCAL 2

// Scheduler: the daemon, over every process.
#define BATON_SCHEDULER_GLOBAL 3

// Stream kind (`BatonQueue::kind`): a context's legacy default stream.
#define BATON_STREAM_LEGACY 1

// Stream kind: a thread's per-thread default stream.
#define BATON_STREAM_PER_THREAD 2

// Stream kind: a stream the application created.
#define BATON_STREAM_REGULAR 3

// A hint about a stream's work or the whole process's. Fields a kind does not use are
// ignored (set them to zero).
typedef struct {
  // `BATON_HINT_*`, optionally OR-ed with `BATON_HINT_CLEAR`.
  uint32_t kind;
  // Laxity: the critical priority (−100..=100).
  int32_t priority;
  // Deadline, laxity or upcoming lead time, in nanoseconds.
  uint64_t value_ns;
  // Upcoming: how long after the expected arrival the hint stays, in nanoseconds.
  uint64_t until_ns;
  // Utilization, in percent of the device's time.
  double percent;
} BatonHint;

// The process as Baton runs it (`baton_status`).
typedef struct {
  // `BATON_ABI_VERSION` of the library that answered.
  uint32_t abi_version;
  // `BATON_SCHEDULER_*`.
  uint32_t scheduler;
  // The process's priority (`BATON_PRIORITY`, or `baton_set_process_priority`).
  int32_t process_priority;
  // The preemption level asked for (1–3; a queue may use less: see its `level`).
  uint32_t level;
  // Queues (streams) Baton schedules in this process.
  uint32_t queues;
  // Of those, how many are held suspended now.
  uint32_t suspended_queues;
  // 1 when connected to the daemon (global scheduling), else 0.
  uint32_t connected;
  // The local policy's name (local scheduling), NUL-terminated; empty otherwise.
  char policy[32];
} BatonStatus;

// One of the process's queues (`baton_queues`).
typedef struct {
  // The stream's handle as the application names it (1 for a legacy default stream).
  uint64_t stream;
  // Its context's handle.
  uint64_t context;
  // Its device's ordinal in this process.
  int32_t device;
  // `BATON_STREAM_*`.
  uint32_t kind;
  // The priority its work is scheduled at now.
  int32_t priority;
  // The preemption level it uses (1–3).
  uint32_t level;
  // 1 if held suspended now.
  uint32_t suspended;
  // 1 if it has unfinished work.
  uint32_t ready;
  // Commands submitted so far.
  uint64_t submitted;
  // Commands known complete.
  uint64_t completed;
  // Commands held back, not yet given to the driver.
  uint64_t pending;
  // Commands given to the driver, not known complete.
  uint64_t in_flight;
} BatonQueue;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

// The ABI version of the library that answers: major in the high 16 bits, minor in the low.
uint32_t baton_abi_version(void);

// A static, NUL-terminated message for an error code (never NULL).
const char *baton_error_message(int32_t code);

// The calling thread's last error in detail (what exactly was wrong), NUL-terminated and
// valid until the thread's next Baton call; an empty string if the last call succeeded.
const char *baton_last_error(void);

// Schedules the work this thread issues from now on at `priority` (−100..=100, higher
// first): each stream it launches on takes that priority while the thread's work is on it.
int32_t baton_set_thread_priority(int32_t priority);

// Ends the calling thread's priority: its work takes its streams' own priorities again.
int32_t baton_clear_thread_priority(void);

// Gives `stream`'s work a priority of its own (−100..=100), over the process's.
int32_t baton_set_stream_priority(void *stream, int32_t priority);

// Removes `stream`'s own priority: it follows the process's again (less its CUDA priority).
int32_t baton_clear_stream_priority(void *stream);

// The priority `stream`'s work is scheduled at now, in `*priority`.
int32_t baton_get_stream_priority(void *stream, int32_t *priority);

// The priority `stream` has of its own in `*priority`, or `BATON_NO_PRIORITY` when it has
// none (then it follows the process's).
int32_t baton_get_stream_own_priority(void *stream, int32_t *priority);

// Sets the whole process's priority (−100..=100): every stream without a priority of its
// own follows it (a stream created with a CUDA priority keeps its offset).
int32_t baton_set_process_priority(int32_t priority);

// Gives (or, with `BATON_HINT_CLEAR`, removes) a hint about `stream`'s work.
int32_t baton_hint_stream(void *stream, const BatonHint *hint);

// Gives (or removes) a hint about the whole process's work.
int32_t baton_hint_process(const BatonHint *hint);

// Holds back `stream`'s work not yet given to the driver (`BATON_SCHEDULER=app` only).
int32_t baton_suspend_stream(void *stream);

// Lets `stream`'s work go again (`BATON_SCHEDULER=app` only).
int32_t baton_resume_stream(void *stream);

// How Baton runs this process, in `*status`.
int32_t baton_status(BatonStatus *status);

// The process's queues: up to `capacity` of them in `queues`, and how many there are in
// `*count` (`BATON_ERR_BUFFER_TOO_SMALL` when that is more than `capacity`; call with
// `capacity` 0 to learn the count).
int32_t baton_queues(BatonQueue *queues, size_t capacity, size_t *count);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* BATON_H */
