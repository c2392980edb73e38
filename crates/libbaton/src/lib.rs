//! `libbaton.so`: Baton's C ABI (`include/baton.h`) for programs to link against.
//!
//! Every function here answers as if Baton were absent: the real ones are the interposer's,
//! which `baton run` preloads, so they come first in the dynamic linker's lookup and a program
//! started under Baton never reaches these. A program started without Baton gets
//! `BATON_ERR_NOT_LOADED` from every call (and the ABI version and messages, which need no
//! interposer), never a crash or an unresolved symbol. See `baton-capi` for the types.
//!
//! The signatures must stay those of the interposer's `capi.rs`: the C test
//! (`crates/cuda-testapps/tests/capi.rs`) compiles a program against the generated header and
//! runs it against both.

use std::ffi::{c_char, c_void};

use baton_capi::{
    BATON_ABI_VERSION, BATON_ERR_NOT_LOADED, BatonHint, BatonQueue, BatonStatus, error_message,
};

/// The ABI version of the library that answers: major in the high 16 bits, minor in the low.
#[unsafe(no_mangle)]
pub extern "C" fn baton_abi_version() -> u32 {
    BATON_ABI_VERSION
}

/// A static, NUL-terminated message for an error code (never NULL).
#[unsafe(no_mangle)]
pub extern "C" fn baton_error_message(code: i32) -> *const c_char {
    error_message(code).as_ptr()
}

/// The calling thread's last error in detail (what exactly was wrong), NUL-terminated and
/// valid until the thread's next Baton call; an empty string if the last call succeeded.
#[unsafe(no_mangle)]
pub extern "C" fn baton_last_error() -> *const c_char {
    error_message(BATON_ERR_NOT_LOADED).as_ptr()
}

/// Schedules the work this thread issues from now on at `priority` (−100..=100, higher
/// first): each stream it launches on takes that priority while the thread's work is on it.
#[unsafe(no_mangle)]
pub extern "C" fn baton_set_thread_priority(priority: i32) -> i32 {
    let _ = priority;
    BATON_ERR_NOT_LOADED
}

/// Ends the calling thread's priority: its work takes its streams' own priorities again.
#[unsafe(no_mangle)]
pub extern "C" fn baton_clear_thread_priority() -> i32 {
    BATON_ERR_NOT_LOADED
}

/// Gives `stream`'s work a priority of its own (−100..=100), over the process's.
#[unsafe(no_mangle)]
pub extern "C" fn baton_set_stream_priority(stream: *mut c_void, priority: i32) -> i32 {
    let _ = (stream, priority);
    BATON_ERR_NOT_LOADED
}

/// Removes `stream`'s own priority: it follows the process's again (less its CUDA priority).
#[unsafe(no_mangle)]
pub extern "C" fn baton_clear_stream_priority(stream: *mut c_void) -> i32 {
    let _ = stream;
    BATON_ERR_NOT_LOADED
}

/// The priority `stream`'s work is scheduled at now, in `*priority`.
#[unsafe(no_mangle)]
pub extern "C" fn baton_get_stream_priority(stream: *mut c_void, priority: *mut i32) -> i32 {
    let _ = (stream, priority);
    BATON_ERR_NOT_LOADED
}

/// The priority `stream` has of its own in `*priority`, or `BATON_NO_PRIORITY` when it has
/// none (then it follows the process's).
#[unsafe(no_mangle)]
pub extern "C" fn baton_get_stream_own_priority(stream: *mut c_void, priority: *mut i32) -> i32 {
    let _ = (stream, priority);
    BATON_ERR_NOT_LOADED
}

/// Sets the whole process's priority (−100..=100): every stream without a priority of its
/// own follows it (a stream created with a CUDA priority keeps its offset).
#[unsafe(no_mangle)]
pub extern "C" fn baton_set_process_priority(priority: i32) -> i32 {
    let _ = priority;
    BATON_ERR_NOT_LOADED
}

/// Gives (or, with `BATON_HINT_CLEAR`, removes) a hint about `stream`'s work.
#[unsafe(no_mangle)]
pub extern "C" fn baton_hint_stream(stream: *mut c_void, hint: *const BatonHint) -> i32 {
    let _ = (stream, hint);
    BATON_ERR_NOT_LOADED
}

/// Gives (or removes) a hint about the whole process's work.
#[unsafe(no_mangle)]
pub extern "C" fn baton_hint_process(hint: *const BatonHint) -> i32 {
    let _ = hint;
    BATON_ERR_NOT_LOADED
}

/// Holds back `stream`'s work not yet given to the driver (`BATON_SCHEDULER=app` only).
#[unsafe(no_mangle)]
pub extern "C" fn baton_suspend_stream(stream: *mut c_void) -> i32 {
    let _ = stream;
    BATON_ERR_NOT_LOADED
}

/// Lets `stream`'s work go again (`BATON_SCHEDULER=app` only).
#[unsafe(no_mangle)]
pub extern "C" fn baton_resume_stream(stream: *mut c_void) -> i32 {
    let _ = stream;
    BATON_ERR_NOT_LOADED
}

/// How Baton runs this process, in `*status`.
#[unsafe(no_mangle)]
pub extern "C" fn baton_status(status: *mut BatonStatus) -> i32 {
    let _ = status;
    BATON_ERR_NOT_LOADED
}

/// The process's queues: up to `capacity` of them in `queues`, and how many there are in
/// `*count` (`BATON_ERR_BUFFER_TOO_SMALL` when that is more than `capacity`; call with
/// `capacity` 0 to learn the count).
#[unsafe(no_mangle)]
pub extern "C" fn baton_queues(queues: *mut BatonQueue, capacity: usize, count: *mut usize) -> i32 {
    let _ = (queues, capacity, count);
    BATON_ERR_NOT_LOADED
}
