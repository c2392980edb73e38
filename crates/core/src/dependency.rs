//! Launch dependencies between queues.
//!
//! CUDA orders some commands across streams: a wait on an event follows the event's record, the
//! legacy default stream follows the blocking streams. When both sides go through XQueues, the
//! hardware only enforces that order if the commands reach it in that order. A [`Dependency`]
//! says "launch this command only after that queue has launched its first N commands"; the
//! dependent command waits in its own queue's buffer (the application's thread never blocks), and
//! the queue it depends on launches what is needed **even while suspended** — a suspended
//! low-priority queue must not hold back a queue that waits on it (priority inheritance at the
//! launch level, which makes circular waits through suspension impossible).
//!
//! Dependencies only ever point to commands submitted earlier, so they cannot form a cycle.

use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::sync::{self, AtomicU64, AtomicUsize, Condvar, Mutex};

/// Wakes a queue's launch worker when another queue needs its commands launched.
pub(crate) trait DemandWaker: Send + Sync {
    /// Someone raised the queue's launch demand.
    fn wake_for_demand(&self);
}

/// How many commands a queue has launched, observable without its lock, and how many other
/// queues need launched.
pub struct LaunchProgress {
    launched: AtomicU64,
    demanded: AtomicU64,
    waiters: AtomicUsize,
    lock: Mutex<()>,
    cv: Condvar,
    owner: Mutex<Option<Weak<dyn DemandWaker>>>,
}

impl LaunchProgress {
    pub(crate) fn new() -> LaunchProgress {
        LaunchProgress {
            launched: AtomicU64::new(0),
            demanded: AtomicU64::new(0),
            waiters: AtomicUsize::new(0),
            lock: Mutex::new(()),
            cv: Condvar::new(),
            owner: Mutex::new(None),
        }
    }

    pub(crate) fn set_owner(&self, owner: Weak<dyn DemandWaker>) {
        *sync::lock(&self.owner) = Some(owner);
    }

    /// Commands launched so far.
    pub fn launched(&self) -> u64 {
        self.launched.load(SeqCst)
    }

    /// The launch count other queues wait for.
    pub(crate) fn demanded(&self) -> u64 {
        self.demanded.load(SeqCst)
    }

    /// Publishes a new launch count and wakes queues waiting for it.
    ///
    /// The waiter registers (`waiters += 1`) and then checks `launched`; this stores `launched`
    /// and then checks `waiters`. With both sides sequentially consistent one of them sees the
    /// other, so the lock is only taken when someone waits. (loom models `SeqCst` as
    /// acquire/release only, so under loom the lock is always taken.)
    pub(crate) fn advance(&self, launched: u64) {
        self.launched.store(launched, SeqCst);
        if cfg!(loom) || self.waiters.load(SeqCst) > 0 {
            let _g = sync::lock(&self.lock);
            self.cv.notify_all();
        }
    }
}

/// "Launch only after `queue` has launched `target` commands."
#[derive(Clone)]
pub struct Dependency {
    progress: Arc<LaunchProgress>,
    target: u64,
}

impl std::fmt::Debug for Dependency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dependency")
            .field("launched", &self.progress.launched())
            .field("target", &self.target)
            .finish()
    }
}

impl Dependency {
    pub(crate) fn new(progress: Arc<LaunchProgress>, target: u64) -> Dependency {
        Dependency { progress, target }
    }

    /// Whether the commands depended on have been launched.
    pub fn is_satisfied(&self) -> bool {
        self.progress.launched() >= self.target
    }

    /// Asks the queue depended on to launch up to the target, suspended or not, and at Level 2
    /// to let it complete; does not wait.
    pub fn demand(&self) {
        // Raised even when already launched: a queue holding launched commands behind a
        // closed Level-2 gate must let them complete. Its owner is woken whenever the target
        // is not launched yet (as before), or when the mark rose.
        let before = self.progress.demanded.fetch_max(self.target, SeqCst);
        if self.is_satisfied() && before >= self.target {
            return;
        }
        let owner = sync::lock(&self.progress.owner)
            .as_ref()
            .and_then(Weak::upgrade);
        if let Some(o) = owner {
            o.wake_for_demand();
        }
    }

    /// Blocks until satisfied, asking the queue depended on to launch (suspended or not). The
    /// demand is made even when the commands are already launched: the caller is about to wait
    /// for them on the device, so a Level-2 queue must let them complete.
    pub fn wait_satisfied(&self) {
        self.demand();
        while !self.is_satisfied() {
            self.demand();
            self.wait(Duration::from_millis(2));
        }
    }

    /// Waits until satisfied or `timeout` passes; whether it is satisfied.
    pub(crate) fn wait(&self, timeout: Duration) -> bool {
        let p = &self.progress;
        let mut g = sync::lock(&p.lock);
        p.waiters.fetch_add(1, SeqCst);
        if !self.is_satisfied() {
            g = sync::wait_timeout(&p.cv, g, timeout);
        }
        p.waiters.fetch_sub(1, SeqCst);
        drop(g);
        self.is_satisfied()
    }
}
