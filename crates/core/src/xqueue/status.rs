//! What a scheduler sees of a queue and may do with it, whatever its hardware.

use super::options::{ResumeFlags, SuspendFlags};
use crate::{LaunchConfig, Level, QueueState, XQueueError, XQueueId};

/// A snapshot of one XQueue, as a scheduler sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XQueueStatus {
    /// The queue.
    pub id: XQueueId,
    /// Idle or Ready.
    pub state: QueueState,
    /// Whether a scheduler suspended it.
    pub suspended: bool,
    /// The level suspension uses.
    pub level: Level,
    /// The highest level its hardware supports.
    pub max_level: Level,
    /// Its launch window.
    pub config: LaunchConfig,
    /// Commands buffered, not yet launched.
    pub pending: u64,
    /// Commands launched, not known complete.
    pub inflight: u64,
    /// Commands ever submitted.
    pub submitted: u64,
    /// Commands known complete.
    pub completed: u64,
    /// Idle/Ready transitions so far (see [`QueueEvent::transition`](crate::QueueEvent)).
    pub transitions: u64,
}

/// How a queue is to run between decisions: what its scheduler computed from its policy's
/// answer for it ([`QueueControl::set_attention`]), once, wherever the policy runs (in the
/// process or in the daemon, which sends it whole to the queue's process).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attention {
    /// Report Idle/Ready transitions ([`XQueue::set_reporting`](crate::XQueue::set_reporting)):
    /// the policy's decisions depend on them, or the queue is in a dependency.
    pub report: bool,
    /// Launch without the in-flight window and its sync points
    /// ([`XQueue::set_unbounded`](crate::XQueue::set_unbounded)): nothing can suspend it now.
    pub unbounded: bool,
    /// A scheduler may hold it back now, not only keep it suspendable; its work in flight is
    /// bounded by device time only then
    /// ([`XQueue::set_holdable`](crate::XQueue::set_holdable)).
    pub hold: bool,
    /// It outranks other work on its device while it runs unbounded: it reports and nothing
    /// can suspend it ([`XQueue::set_leading`](crate::XQueue::set_leading)).
    pub leading: bool,
    /// It runs unbounded only for what was measured of its commands: keep the window now and
    /// then to measure them again ([`XQueue::set_remeasure`](crate::XQueue::set_remeasure)).
    pub remeasure: bool,
    /// Notice going idle even if the application never synchronizes
    /// ([`XQueue::set_idle_watch`](crate::XQueue::set_idle_watch)).
    pub watch: bool,
}

impl Attention {
    /// What a newly created queue does until told otherwise: reports, keeps its window, may
    /// be held, leads nothing, is not measured again, is watched.
    pub const INITIAL: Attention = Attention {
        report: true,
        unbounded: false,
        hold: true,
        leading: false,
        remeasure: false,
        watch: true,
    };
}

impl Default for Attention {
    fn default() -> Attention {
        Attention::INITIAL
    }
}

/// What a scheduler can do with a queue, whatever its hardware: the object-safe face of
/// [`XQueue`](crate::XQueue).
pub trait QueueControl: Send + Sync {
    /// The queue's identity.
    fn id(&self) -> XQueueId;
    /// Its current state.
    fn status(&self) -> XQueueStatus;
    /// Stops it from running; see [`XQueue::suspend`](crate::XQueue::suspend).
    fn suspend(&self, flags: SuspendFlags) -> Result<(), XQueueError>;
    /// Lets it run again; see [`XQueue::resume`](crate::XQueue::resume).
    fn resume(&self, flags: ResumeFlags) -> Result<(), XQueueError>;
    /// Chooses the level suspension uses.
    fn set_level(&self, level: Level) -> Result<(), XQueueError>;
    /// Changes the launch window.
    fn set_launch_config(&self, config: LaunchConfig);
    /// How the queue is to run between decisions (what it reports, whether it keeps its
    /// window, may be held, leads, is measured again, is watched for going idle): its
    /// scheduler's whole answer for it, given whole whenever a part changes. An XQueue applies
    /// each part through its setter ([`XQueue::set_attention`](crate::XQueue::set_attention)).
    fn set_attention(&self, attention: Attention);
}
