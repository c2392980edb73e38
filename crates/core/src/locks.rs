//! Locks that outlive a panicking holder: the one way the project takes a `std` lock.
//!
//! A `std` lock whose holder panicked is *poisoned*: every later `lock()` returns an error.
//! Baton completes each change to shared state before any call that could panic, so the data
//! behind a poisoned lock is consistent; and code running inside an application (the
//! interposer, the agent) must not turn one failed thread into the failure of every thread
//! that touches the same queue. So locks are taken through these functions, which take the
//! data back from the poison. (Inside this crate, `sync` routes the same calls to loom's
//! locks when the XQueue is model-checked.)

use std::sync::{
    Condvar, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard,
};
use std::time::Duration;

/// Locks `m`, recovering the data if a panicking thread poisoned it.
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Locks `l` for reading, recovering like [`lock`].
pub fn read<T: ?Sized>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

/// Locks `l` for writing, recovering like [`lock`].
pub fn write<T: ?Sized>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `cv`, recovering like [`lock`].
pub fn wait<'a, T>(cv: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    cv.wait(guard).unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `cv` for at most `timeout`, recovering like [`lock`]. Whether it timed out is
/// not said: callers look at the guarded state, which is what counts.
pub fn wait_timeout<'a, T>(
    cv: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: Duration,
) -> MutexGuard<'a, T> {
    match cv.wait_timeout(guard, timeout) {
        Ok((g, _)) => g,
        Err(poisoned) => poisoned.into_inner().0,
    }
}

/// The data of a mutex held exclusively, recovering like [`lock`].
pub fn get_mut<T: ?Sized>(m: &mut Mutex<T>) -> &mut T {
    m.get_mut().unwrap_or_else(PoisonError::into_inner)
}

/// The data of a mutex no one else holds, recovering like [`lock`].
pub fn into_inner<T>(m: Mutex<T>) -> T {
    m.into_inner().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// Runs `f` on a thread that panics (poisoning whatever lock it holds then).
    fn poison(f: impl FnOnce() + Send + 'static) {
        let r = std::thread::spawn(f).join();
        assert!(r.is_err(), "the holder panicked");
    }

    #[test]
    fn a_poisoned_mutex_still_gives_its_data() {
        let m = Arc::new(Mutex::new(1));
        let m2 = Arc::clone(&m);
        poison(move || {
            let mut g = m2.lock().unwrap();
            *g = 2;
            panic!("holder fails");
        });
        assert!(m.is_poisoned());
        assert_eq!(*lock(&m), 2);
        let cv = Condvar::new();
        let g = wait_timeout(&cv, lock(&m), Duration::from_millis(1));
        assert_eq!(*g, 2);
        drop(g);
        let mut m = Arc::try_unwrap(m).unwrap();
        *get_mut(&mut m) = 3;
        assert_eq!(into_inner(m), 3);
    }

    #[test]
    fn a_poisoned_rwlock_still_gives_its_data() {
        let l = Arc::new(RwLock::new(vec![1]));
        let l2 = Arc::clone(&l);
        poison(move || {
            l2.write().unwrap().push(2);
            let _g = l2.write().unwrap();
            panic!("holder fails");
        });
        assert!(l.is_poisoned());
        assert_eq!(*read(&l), vec![1, 2]);
        write(&l).push(3);
        assert_eq!(read(&l).len(), 3);
    }
}
