//! Concurrency primitives, through one door so the same code is model-checked under loom.
//!
//! Built normally these are `std`'s; built with `RUSTFLAGS="--cfg loom"` they are loom's, and
//! the loom tests in `xqueue` explore every interleaving of the XQueue's threads.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, AtomicUsize};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(loom)]
pub(crate) use loom::thread;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU64, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::thread;

// Outside loom the project-wide helpers are used as they are.
#[cfg(not(loom))]
pub(crate) use crate::locks::{lock, wait, wait_timeout};

/// Locks `m` if no other thread holds it (a poisoned lock counts as held).
pub(crate) fn try_lock<T>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    m.try_lock().ok()
}

/// Locks `m`, recovering the data if a panicking thread poisoned it (as [`crate::locks::lock`]).
#[cfg(loom)]
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits on `cv`, recovering from poisoning like [`lock`].
#[cfg(loom)]
pub(crate) fn wait<'a, T>(cv: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    cv.wait(guard)
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits on `cv` for at most `timeout`, recovering from poisoning like [`lock`].
#[cfg(loom)]
pub(crate) fn wait_timeout<'a, T>(
    cv: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: std::time::Duration,
) -> MutexGuard<'a, T> {
    match cv.wait_timeout(guard, timeout) {
        Ok((g, _)) => g,
        Err(poisoned) => poisoned.into_inner().0,
    }
}
