//! The interposer's link to whoever schedules its queues: the scheduler (this process's own,
//! or the agent of the daemon's), and what the process as a whole asked of it — its priority,
//! the hints code gave it, whether it claimed to yield by time slice.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard};

use baton_agent::AgentScheduler;
use baton_capi::Request;
use baton_cuda::core::locks;

/// See the module documentation.
pub(crate) struct SchedLink {
    /// The scheduler; `None` when the application suspends its own queues
    /// (`BATON_SCHEDULER=app`) or Baton is disabled.
    pub(crate) sched: Option<AgentScheduler>,
    /// The process's priority: `BATON_PRIORITY`, or what code set since (`capi.rs`).
    process_priority: AtomicI32,
    /// Serializes priority changes, so a queue's last change is the one its scheduler has.
    priority_lock: Mutex<()>,
    /// Hints code gave the whole process, for queues made later (local scheduling only).
    process_requests: Mutex<Vec<Request>>,
    /// Whether the process has told the daemon it yields (`Hint::Yielding`, once).
    yield_claimed: AtomicBool,
}

impl SchedLink {
    /// A link to `sched` for a process of priority `priority`.
    pub(crate) fn new(sched: Option<AgentScheduler>, priority: i32) -> SchedLink {
        SchedLink {
            sched,
            process_priority: AtomicI32::new(priority),
            priority_lock: Mutex::new(()),
            process_requests: Mutex::new(Vec::new()),
            yield_claimed: AtomicBool::new(false),
        }
    }

    /// The process's priority now.
    pub(crate) fn process_priority(&self) -> i32 {
        self.process_priority.load(Ordering::Relaxed)
    }

    /// Holds priority changes off while the caller changes one (see `priority_lock`).
    pub(crate) fn priority_change(&self) -> MutexGuard<'_, ()> {
        locks::lock(&self.priority_lock)
    }

    /// Sets the process's priority, under the priority-change lock.
    pub(crate) fn set_process_priority(&self, p: i32) {
        let _g = self.priority_change();
        self.process_priority.store(p, Ordering::Relaxed);
    }

    /// Keeps `req` for the queues made from now on.
    pub(crate) fn keep_process_request(&self, req: Request) {
        locks::lock(&self.process_requests).push(req);
    }

    /// The hints code gave the whole process so far.
    pub(crate) fn process_requests(&self) -> Vec<Request> {
        locks::lock(&self.process_requests).clone()
    }

    /// Whether this call is the first to claim that the process yields (it says so once).
    pub(crate) fn claim_yield(&self) -> bool {
        !self.yield_claimed.swap(true, Ordering::AcqRel)
    }
}
