//! What a policy answers.

use baton_core::{Nanos, XQueueId};

/// The queues to suspend now (every other queue runs), when to decide again, and how each
/// queue is to run until then.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// Queues that must not run. Order does not matter; duplicates are harmless.
    pub suspend: Vec<XQueueId>,
    /// Ask again at this time even if nothing happens (time slices, deadlines, hint expiry).
    pub wake_at: Option<Nanos>,
    /// The policy's plan for each queue of the snapshot it decided on, in the snapshot's
    /// order; a queue past the end (every queue, for a policy that plans nothing) has
    /// [`QueuePlan::DEFAULT`]. Read through [`Decision::plan`].
    pub plans: Vec<QueuePlan>,
}

/// What a policy says of one queue besides whether it runs now: what the scheduler must hear
/// from it, and what may come to it before the next decision. The scheduler turns it into the
/// queue's [`Attention`](baton_core::Attention).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueuePlan {
    /// Its Idle/Ready transitions can change this policy's decisions. A queue for which it
    /// is not so is not asked to report them (each report wakes the scheduler).
    pub report: bool,
    /// This policy could suspend it in this situation. A queue it never suspends runs
    /// without Level 1's in-flight window and sync points, which exist only to bound how long
    /// a suspension waits.
    pub may_suspend: bool,
    /// This policy could hold it back for the queues that outrank it now, rather than keep it
    /// suspendable only so that it gives way by itself (HPF: a yielding queue beside programs
    /// bound by their launching). Its work in flight is bounded by device time only if so
    /// ([`XQueue::set_holdable`](baton_core::XQueue::set_holdable)): that bound exists to
    /// shorten what a hold waits for.
    pub may_hold: bool,
    /// It is never suspended now only for what its process measured of its commands
    /// ([`Hint::CommandTime`](crate::Hint::CommandTime): HPF spares a stream of short commands
    /// from other processes' work); its process then has it keep its window now and then to
    /// measure it again, so that commands turned long are heard. A queue let go for any other
    /// reason (nothing outranks it) is not measured again, which would cost it its window for
    /// nothing.
    pub remeasure: bool,
}

impl QueuePlan {
    /// Every transition reported, any queue suspendable and holdable, none measured again.
    pub const DEFAULT: QueuePlan = QueuePlan {
        report: true,
        may_suspend: true,
        may_hold: true,
        remeasure: false,
    };
}

impl Default for QueuePlan {
    fn default() -> QueuePlan {
        QueuePlan::DEFAULT
    }
}

impl Decision {
    /// Everything runs.
    pub fn run_all() -> Decision {
        Decision::default()
    }

    /// Whether `q` is to be suspended.
    pub fn suspends(&self, q: XQueueId) -> bool {
        self.suspend.contains(&q)
    }

    /// Asks to be woken at `t` too (the earliest request wins).
    pub fn wake(&mut self, t: Nanos) {
        self.wake_at = Some(self.wake_at.map_or(t, |w| w.min(t)));
    }

    /// The plan for the `i`-th queue of the snapshot decided on.
    pub fn plan(&self, i: usize) -> QueuePlan {
        self.plans.get(i).copied().unwrap_or(QueuePlan::DEFAULT)
    }
}
