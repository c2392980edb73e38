//! The calling process and thread, and state that belongs to one process.
//!
//! # Fork safety
//!
//! A [`PerProcess`] value records the pid that created it. [`PerProcess::get`] compares that pid
//! with the caller's: in a child created by `fork()`, the first call finds the parent's value,
//! leaves it untouched (its locks may be held by threads that do not exist in the child, so it
//! is leaked, never dropped or locked) and installs a fresh one.

use std::sync::atomic::{AtomicPtr, Ordering};

/// The calling process's id.
pub(crate) fn current_pid() -> u32 {
    // SAFETY: getpid has no preconditions and cannot fail.
    let pid = unsafe { libc::getpid() };
    pid.unsigned_abs()
}

/// The calling thread's kernel thread id.
pub(crate) fn current_tid() -> u32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    let tid = unsafe { libc::gettid() };
    tid.unsigned_abs()
}

/// A value and the process it belongs to.
struct Owned<T> {
    pid: u32,
    value: T,
}

/// A process-wide value, made on first use in each process (see the module documentation).
///
/// Values are leaked, never freed: a `&'static` to one stays valid for the process's life.
pub(crate) struct PerProcess<T> {
    current: AtomicPtr<Owned<T>>,
}

impl<T: Send + Sync> PerProcess<T> {
    pub const fn new() -> Self {
        Self {
            current: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The value of the calling process, if it has made one.
    pub fn existing(&'static self) -> Option<&'static T> {
        let seen = self.current.load(Ordering::Acquire);
        if seen.is_null() {
            return None;
        }
        // SAFETY: a non-NULL pointer here points to an `Owned` leaked by Box::into_raw in `get`
        // and never freed, so it is valid for 'static.
        let existing = unsafe { &*seen };
        (existing.pid == current_pid()).then_some(&existing.value)
    }

    /// The value of the calling process, made by `make(pid)` on first use (and anew in a
    /// forked child). `make` may run more than once when threads race; one value wins.
    pub fn get(&'static self, make: impl Fn(u32) -> T) -> &'static T {
        let pid = current_pid();
        loop {
            let seen = self.current.load(Ordering::Acquire);
            if !seen.is_null() {
                // SAFETY: a non-NULL pointer here points to an `Owned` leaked by Box::into_raw
                // below and never freed, so it is valid for 'static.
                let existing = unsafe { &*seen };
                if existing.pid == pid {
                    return &existing.value;
                }
            }
            let fresh = Box::into_raw(Box::new(Owned {
                pid,
                value: make(pid),
            }));
            match self
                .current
                .compare_exchange(seen, fresh, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    // SAFETY: `fresh` came from Box::into_raw and is now owned by `current`
                    // forever.
                    return unsafe { &(*fresh).value };
                }
                Err(_) => {
                    // SAFETY: `fresh` was never shared: the exchange failed, so we still own it.
                    drop(unsafe { Box::from_raw(fresh) });
                }
            }
        }
    }
}
