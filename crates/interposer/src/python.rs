//! Python's interpreter lock, seen from a launch call.
//!
//! A thread Baton holds back inside a launch while it holds the interpreter lock stops every
//! other Python thread of the process too. The report counts such holds per stream, so a
//! one-process slowdown can be told apart from the GPU's; with `BATON_RELEASE_PYTHON_LOCK`
//! the lock is released for the wait ([`Released`]). Python is found by name in the process
//! (`PyGILState_Check`, `PyEval_SaveThread`, `PyEval_RestoreThread`, exported by the
//! interpreter or libpython) when first needed; without Python the answer is always no.

use std::ffi::c_int;
use std::sync::atomic::{AtomicPtr, Ordering};

type GilCheck = unsafe extern "C" fn() -> c_int;

static CHECK: AtomicPtr<std::ffi::c_void> = AtomicPtr::new(std::ptr::null_mut());

/// Whether this thread holds the interpreter lock. Looks Python up until it is found (holds
/// are rare, so the lookup is not on any fast path).
pub(crate) fn holds_gil() -> bool {
    let mut p = CHECK.load(Ordering::Acquire);
    if p.is_null() {
        p = crate::dlsym::lookup(libc::RTLD_DEFAULT, c"PyGILState_Check".as_ptr());
        if p.is_null() {
            return false;
        }
        CHECK.store(p, Ordering::Release);
    }
    // SAFETY: `p` is the interpreter's `PyGILState_Check`, `int (void)`, callable from any
    // thread, with or without a thread state.
    unsafe { std::mem::transmute::<*mut std::ffi::c_void, GilCheck>(p)() == 1 }
}

type SaveThread = unsafe extern "C" fn() -> *mut std::ffi::c_void;
type RestoreThread = unsafe extern "C" fn(*mut std::ffi::c_void);

/// The interpreter lock released by this thread, taken back on drop.
pub(crate) struct Released {
    state: *mut std::ffi::c_void,
    restore: RestoreThread,
}

impl Released {
    /// Releases the interpreter lock if this thread holds it (`None` otherwise, or without
    /// Python).
    pub(crate) fn if_held() -> Option<Released> {
        if !holds_gil() {
            return None;
        }
        let save = crate::dlsym::lookup(libc::RTLD_DEFAULT, c"PyEval_SaveThread".as_ptr());
        let restore = crate::dlsym::lookup(libc::RTLD_DEFAULT, c"PyEval_RestoreThread".as_ptr());
        if save.is_null() || restore.is_null() {
            return None;
        }
        // SAFETY: the interpreter's own functions, `PyThreadState *(void)` and
        // `void (PyThreadState *)`; this thread holds the lock (checked above), which is what
        // `PyEval_SaveThread` requires; the state it returns is handed back on drop, on this
        // thread (the value is not `Send`).
        unsafe {
            let save = std::mem::transmute::<*mut std::ffi::c_void, SaveThread>(save);
            let restore = std::mem::transmute::<*mut std::ffi::c_void, RestoreThread>(restore);
            Some(Released {
                state: save(),
                restore,
            })
        }
    }
}

impl Drop for Released {
    fn drop(&mut self) {
        // SAFETY: `state` came from `PyEval_SaveThread` on this thread (the value is not
        // `Send`), and is restored exactly once.
        unsafe { (self.restore)(self.state) }
    }
}
