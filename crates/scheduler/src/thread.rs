//! A local scheduler on its own thread, for live processes.

use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use baton_core::locks;
use baton_core::{Clock, Nanos, XQueueId};
use baton_policies::QueueHints;

use crate::{Inbox, LocalScheduler};

/// A change to one queue's hints, waiting for the scheduler's thread.
type HintChange = (XQueueId, Box<dyn FnOnce(&mut QueueHints, Nanos) + Send>);

struct Shared {
    sched: Mutex<LocalScheduler>,
    inbox: Arc<Inbox>,
    /// Hint changes posted from other threads, applied on the scheduler's.
    changes: Mutex<Vec<HintChange>>,
    clock: Arc<dyn Clock>,
    stop: std::sync::atomic::AtomicBool,
}

/// Runs a [`LocalScheduler`] on a thread: events from its [`Inbox`] and policy wake-ups are
/// handled there, never on the application threads that caused them. Process facts (niceness)
/// are read again every [`PROCESS_REFRESH`].
pub struct SchedulerThread {
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
}

impl SchedulerThread {
    /// Starts the thread. Queues must send their events to [`SchedulerThread::inbox`].
    pub fn start(sched: LocalScheduler, clock: Arc<dyn Clock>) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            sched: Mutex::new(sched),
            inbox: Arc::new(Inbox::new()),
            changes: Mutex::new(Vec::new()),
            clock,
            stop: std::sync::atomic::AtomicBool::new(false),
        });
        let s = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("baton-sched".into())
            .spawn(move || run(&s))?;
        Ok(SchedulerThread {
            shared,
            handle: Some(handle),
        })
    }

    /// The inbox queues report to.
    pub fn inbox(&self) -> Arc<Inbox> {
        Arc::clone(&self.shared.inbox)
    }

    /// Exclusive access to the scheduler (to register queues, give hints…). Events wait.
    pub fn lock(&self) -> MutexGuard<'_, LocalScheduler> {
        locks::lock(&self.shared.sched)
    }

    /// Changes queue `id`'s hints on the scheduler's thread, soon: for an application thread,
    /// which must never run the policy itself. A queue gone by then is skipped.
    pub fn post_hints(
        &self,
        id: XQueueId,
        change: impl FnOnce(&mut QueueHints, Nanos) + Send + 'static,
    ) {
        locks::lock(&self.shared.changes).push((id, Box::new(change)));
        self.shared.inbox.ring();
    }

    /// The scheduler's clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.shared.clock
    }

    /// Stops the thread and returns the scheduler.
    pub fn stop(mut self) -> LocalScheduler {
        self.halt();
        let shared = Arc::clone(&self.shared);
        drop(self);
        match Arc::try_unwrap(shared) {
            Ok(s) => locks::into_inner(s.sched),
            Err(_) => unreachable!("the thread was joined; no other owner remains"),
        }
    }

    fn halt(&mut self) {
        self.shared
            .stop
            .store(true, std::sync::atomic::Ordering::Release);
        self.shared.inbox.ring();
        if let Some(h) = self.handle.take() {
            // The thread only panics if the policy did; nothing more to do about it here.
            let _ = h.join();
        }
    }
}

impl Drop for SchedulerThread {
    fn drop(&mut self) {
        self.halt();
    }
}

/// How often process facts (niceness for CHPF) are read again, so a `renice` takes effect.
pub const PROCESS_REFRESH: Nanos = Nanos::from_secs(1);

fn run(s: &Shared) {
    let mut next_refresh = s.clock.now() + PROCESS_REFRESH;
    while !s.stop.load(std::sync::atomic::Ordering::Acquire) {
        let timeout = {
            let sched = locks::lock(&s.sched);
            let due = sched
                .next_wake()
                .map_or(next_refresh, |w| w.min(next_refresh));
            Some(Duration::from(due.saturating_sub(s.clock.now())))
        };
        let events = s.inbox.wait(timeout);
        let changes = std::mem::take(&mut *locks::lock(&s.changes));
        let now = s.clock.now();
        let mut sched = locks::lock(&s.sched);
        for (id, change) in changes {
            let _ = sched.update_hints(id, change, now);
        }
        if !events.is_empty() {
            sched.on_events(events, now);
        }
        sched.on_timer(now);
        if now >= next_refresh {
            sched.refresh_processes(now);
            next_refresh = now + PROCESS_REFRESH;
        }
    }
}
