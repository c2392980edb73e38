//! What a policy sees.

use baton_core::{Nanos, XQueueId};

use crate::{Dependency, GlobalHints, ProcessHints, QueueHints};

/// Identifies a device (GPU index, or the simulated device's number).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeviceId(pub u32);

/// One queue as a policy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueView {
    /// The queue.
    pub id: XQueueId,
    /// The process that owns it.
    pub pid: u32,
    /// The device its hardware queue is on.
    pub device: DeviceId,
    /// Whether it has unfinished work.
    pub ready: bool,
    /// When it last became ready or idle (while ready: when its current job was released).
    pub since: Nanos,
    /// Whether it is currently suspended.
    pub suspended: bool,
    /// Device time the scheduler attributes to it so far: while it is ready and not suspended,
    /// each moment is split evenly between the ready, running queues of its device.
    pub served: Nanos,
    /// How many jobs (periods of readiness) it has completed.
    pub jobs: u64,
    /// How long its last completed job took, release to completion.
    pub last_job: Option<Nanos>,
    /// Its hints.
    pub hints: QueueHints,
}

impl QueueView {
    /// A ready or idle queue with default hints and no history: for tests and examples.
    pub fn new(id: u64, pid: u32, device: u32, ready: bool) -> QueueView {
        QueueView {
            id: XQueueId(id),
            pid,
            device: DeviceId(device),
            ready,
            since: Nanos::ZERO,
            suspended: false,
            served: Nanos::ZERO,
            jobs: 0,
            last_job: None,
            hints: QueueHints::default(),
        }
    }

    /// Whether it has work now, or announced work whose announcement still holds
    /// (pre-preemption treats such a queue as ready).
    pub fn wants_device(&self, now: Nanos) -> bool {
        self.ready || self.hints.upcoming.is_some_and(|u| u.live(now))
    }
}

/// One process as a policy sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessView {
    /// Its process id.
    pub pid: u32,
    /// Its owner.
    pub uid: u32,
    /// Its OS scheduling niceness, −20 (most favoured) ..= 19 (read by the agent).
    pub nice: i32,
    /// Its hints.
    pub hints: ProcessHints,
}

/// Everything a policy may look at when deciding.
#[derive(Clone, Copy, Debug)]
pub struct Snapshot<'a> {
    /// The time of the decision.
    pub now: Nanos,
    /// Every managed queue, in a stable order (by id).
    pub queues: &'a [QueueView],
    /// Every process owning a queue, by pid.
    pub processes: &'a [ProcessView],
    /// Scheduler-wide hints.
    pub global: GlobalHints,
    /// Queues waiting on other queues (the scheduler keeps the waited-on ones running).
    pub deps: &'a [Dependency],
}

impl<'a> Snapshot<'a> {
    /// A snapshot of `queues` at `now`, with no processes, global hints or dependencies.
    pub fn new(now: Nanos, queues: &'a [QueueView]) -> Snapshot<'a> {
        Snapshot {
            now,
            queues,
            processes: &[],
            global: GlobalHints::default(),
            deps: &[],
        }
    }

    /// Queues on `device`.
    pub fn on_device(&self, device: DeviceId) -> impl Iterator<Item = &QueueView> {
        self.queues.iter().filter(move |q| q.device == device)
    }

    /// The distinct devices, in ascending order.
    pub fn devices(&self) -> Vec<DeviceId> {
        let mut d: Vec<DeviceId> = self.queues.iter().map(|q| q.device).collect();
        d.sort_unstable();
        d.dedup();
        d
    }

    /// The process `pid`, if the scheduler knows it.
    pub fn process(&self, pid: u32) -> Option<&ProcessView> {
        self.processes.iter().find(|p| p.pid == pid)
    }

    /// Whether `q` is ready, or pre-ready through live announced work.
    pub fn wants(&self, q: &QueueView) -> bool {
        q.wants_device(self.now)
    }
}
