//! Locking and waiting that ignore poisoning (through `baton_core::locks`, the project's one
//! way to take a lock): a panic is already turned into an error code at the export boundary,
//! and the state it leaves is still the best the fake has.

use std::sync::{Condvar, MutexGuard};
use std::time::Instant;

pub(crate) use baton_core::locks::{lock, wait};

/// Waits on `condvar` until `deadline`, ignoring poisoning.
pub(crate) fn wait_until<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    deadline: Instant,
) -> MutexGuard<'a, T> {
    let timeout = deadline.saturating_duration_since(Instant::now());
    baton_core::locks::wait_timeout(condvar, guard, timeout)
}
