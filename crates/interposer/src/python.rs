//! Whether the calling thread holds Python's interpreter lock, for the report.
//!
//! A thread Baton holds back inside a launch while it holds the interpreter lock stops every
//! other Python thread of the process too. The report counts such holds per stream, so a
//! one-process slowdown can be told apart from the GPU's (PyTorch releases the lock around
//! its operators, and measured none: docs/benchmarks/one-process/README.md). Python is found by
//! name in the process (`PyGILState_Check`, exported by the interpreter or libpython) when the
//! first hold happens; without Python the answer is always no.

use std::ffi::c_int;
use std::sync::atomic::{AtomicPtr, Ordering};

type GilCheck = unsafe extern "C" fn() -> c_int;

static CHECK: AtomicPtr<std::ffi::c_void> = AtomicPtr::new(std::ptr::null_mut());

/// Whether this thread holds the interpreter lock. Looks Python up until it is found (holds
/// are rare, so the lookup is not on any fast path).
pub(crate) fn holds_gil() -> bool {
    let mut p = CHECK.load(Ordering::Acquire);
    if p.is_null() {
        p = crate::libdl::lookup(libc::RTLD_DEFAULT, c"PyGILState_Check".as_ptr());
        if p.is_null() {
            return false;
        }
        CHECK.store(p, Ordering::Release);
    }
    // SAFETY: `p` is the interpreter's `PyGILState_Check`, `int (void)`, callable from any
    // thread, with or without a thread state.
    unsafe { std::mem::transmute::<*mut std::ffi::c_void, GilCheck>(p)() == 1 }
}
