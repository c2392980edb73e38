//! What a policy sees.

use baton_core::{Nanos, XQueueId};

use crate::QueueHints;

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
    /// When it last became ready or idle.
    pub since: Nanos,
    /// Whether it is currently suspended.
    pub suspended: bool,
    /// Its hints.
    pub hints: QueueHints,
}

/// Everything a policy may look at when deciding.
#[derive(Clone, Copy, Debug)]
pub struct Snapshot<'a> {
    /// The time of the decision.
    pub now: Nanos,
    /// Every managed queue, in a stable order (by id).
    pub queues: &'a [QueueView],
}

impl Snapshot<'_> {
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
}
