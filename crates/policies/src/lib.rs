//! Scheduling policies: pure functions of a status snapshot plus hints.
//!
//! A [`Policy`] sees a [`Snapshot`] — every queue the scheduler manages (ready or idle, since
//! when, suspended or not, the device time attributed to it, its last job's latency, its
//! [`QueueHints`]), every process owning one (pid, uid, OS niceness, [`ProcessHints`]), the
//! scheduler-wide [`GlobalHints`] and the [`Dependency`] edges between queues — and answers a
//! [`Decision`]: which queues to suspend (all others run) and, optionally, when to be asked
//! again. It keeps whatever state it likes between calls (`&mut self`), but performs no I/O
//! and reads no clock: the snapshot carries the time.
//!
//! Adding a policy is one file implementing [`Policy`] and one line in [`registry`].
//!
//! Two concerns are handled outside the policies, for all of them:
//! - **pre-preemption** ([`PrePreempt`], applied by the registry): a queue with announced
//!   upcoming work is shown to the policy as ready until the work arrives or the announcement
//!   lapses, so lower work is evicted before the work arrives;
//! - **priority inheritance** ([`inherit`], applied by the scheduler): a queue some running
//!   queue waits on is never left suspended, so no policy can produce a circular wait.
//!
//! [`ProcessUnits`] makes any policy treat each process's queues as one unit; [`Gangs`] makes
//! it hold back and resume the processes of one multi-GPU job (a gang) together.
//!
//! [`Chaos`] (`chaos:SEED`) is a test mode, not a policy: it suspends and resumes queues at
//! random moments, so that transparency checks can run a program suspended at arbitrary points.
//!
//! **Architecture invariant:** nothing here touches an XQueue, a clock or the OS. The local
//! scheduler and the daemon turn decisions into suspend/resume operations.
#![forbid(unsafe_code)]

mod awf;
mod cfs;
mod chaos;
mod chpf;
mod decision;
mod dependency;
mod edge;
mod gang;
mod guard;
mod hhpf;
mod hint;
mod hpf;
mod kedf;
mod lax;
mod mlfq;
mod prepreempt;
mod process;
mod pup;
pub mod registry;
mod slo;
mod snapshot;
mod up;

pub use awf::Awf;
pub use cfs::{Cfs, weight as cfs_weight};
pub use chaos::{CHAOS_MAX_SPAN, CHAOS_MIN_SPAN, Chaos};
pub use chpf::Chpf;
pub use decision::Decision;
pub use dependency::inherit;
pub use edge::{Dependency, Until};
pub use gang::Gangs;
pub use guard::{
    GUARD_DWELL_MAX, GUARD_DWELL_MIN, GUARD_GROSS, GUARD_GROSS_DWELL, GUARD_GROSS_DWELL_MAX,
    GUARD_MIN_SAMPLES, GUARD_PROBE_MAX, GUARD_SAMPLES, GUARD_TOLERANCE, Guard,
};
pub use hhpf::Hhpf;
pub use hint::{
    GangId, GlobalHint, GlobalHints, Hint, HintError, Laxity, ProcessHint, ProcessHints,
    QueueHints, Readiness, Share, Upcoming,
};
pub use hpf::{Hpf, SHORT_COMMAND, YIELD_TURN};
pub use kedf::Kedf;
pub use lax::Lax;
pub use mlfq::Mlfq;
pub use prepreempt::PrePreempt;
pub use process::ProcessUnits;
pub use pup::Pup;
pub use registry::{PolicyInfo, UnknownPolicy, by_name, catalog};
pub use slo::Slo;
pub use snapshot::{DeviceId, ProcessView, QueueView, Snapshot};
pub use up::Up;

/// The policy a scheduler runs unless told otherwise.
pub const DEFAULT_POLICY: &str = "hpf";

/// A scheduling policy.
pub trait Policy: Send {
    /// The name it is registered under (`hpf`, `up`, …).
    fn name(&self) -> &'static str;

    /// Decides which queues run now. Called on every queue event, hint change and requested
    /// wake-up; must be cheap (a decision across 100 processes within tens of microseconds).
    fn decide(&mut self, snapshot: &Snapshot<'_>) -> Decision;

    /// Whether `queue`'s Idle/Ready transitions can change this policy's decisions. Queues
    /// for which it says no are not asked to report them (each report wakes the scheduler);
    /// the answer is asked again after every decision. Default: every queue matters.
    fn wants_events(&self, snapshot: &Snapshot<'_>, queue: &QueueView) -> bool {
        let _ = (snapshot, queue);
        true
    }

    /// Whether this policy could suspend `queue` in the situation `snapshot` describes
    /// (asked again after every decision). A queue it never suspends runs without Level 1's
    /// in-flight window and sync points, which exist only to bound how long a suspension waits.
    /// Default: any queue may be suspended.
    fn may_suspend(&self, snapshot: &Snapshot<'_>, queue: &QueueView) -> bool {
        let _ = (snapshot, queue);
        true
    }

    /// Whether `queue`, which this policy never suspends now ([`Policy::may_suspend`] says no),
    /// would be suspendable but for what its process measured of its commands
    /// ([`Hint::CommandTime`]: HPF spares a stream of short commands from other processes'
    /// work). Its process then has it keep its window now and then to measure it again, so
    /// that commands turned long are heard; a queue let go for any other reason (nothing
    /// outranks it) is not measured again, which would cost it its window for nothing.
    /// Asked after every decision, only for queues that run without their window and carry a
    /// command time. Default: no queue is spared for its measure.
    fn remeasures(&self, snapshot: &Snapshot<'_>, queue: &QueueView) -> bool {
        let _ = (snapshot, queue);
        false
    }

    /// Whether this policy could hold `queue` back for the queues that outrank it now, rather
    /// than keep it suspendable only so that it gives way by itself (HPF: a yielding queue,
    /// whose context's time slice is short while it is outranked, is held back only by its own
    /// process's work, by programs measured keeping the device busy while they have work, and
    /// in turns with other yielding processes). Its work in flight is bounded by device time
    /// only if so ([`XQueue::set_holdable`](baton_core::XQueue::set_holdable)): that bound
    /// exists to shorten what a hold waits for. Asked after every decision, for queues it may
    /// suspend. Default: yes.
    fn may_hold(&self, snapshot: &Snapshot<'_>, queue: &QueueView) -> bool {
        let _ = (snapshot, queue);
        true
    }

    /// [`Policy::may_hold`] for every queue of `snapshot`, in its order. The default asks queue
    /// by queue; HPF answers for all in one pass. It must give the same answers as the method.
    fn holds(&self, snapshot: &Snapshot<'_>) -> Vec<bool> {
        snapshot
            .queues
            .iter()
            .map(|q| self.may_hold(snapshot, q))
            .collect()
    }

    /// [`Policy::wants_events`] and [`Policy::may_suspend`] for every queue of `snapshot`, in
    /// its order, as `(report, may_suspend)`. The scheduler asks this after every decision, over
    /// every queue; the default asks queue by queue, and a policy whose answers share work
    /// (HPF: one pass for each device's priority range) answers for all at once. It must give
    /// the same answers as the two methods.
    fn attention(&self, snapshot: &Snapshot<'_>) -> Vec<(bool, bool)> {
        snapshot
            .queues
            .iter()
            .map(|q| {
                (
                    self.wants_events(snapshot, q),
                    self.may_suspend(snapshot, q),
                )
            })
            .collect()
    }

    /// Counters worth reporting (deadline misses, feedback state…), by name.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

impl Policy for Box<dyn Policy> {
    fn name(&self) -> &'static str {
        (**self).name()
    }
    fn decide(&mut self, snapshot: &Snapshot<'_>) -> Decision {
        (**self).decide(snapshot)
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        (**self).counters()
    }
    fn wants_events(&self, snapshot: &Snapshot<'_>, queue: &QueueView) -> bool {
        (**self).wants_events(snapshot, queue)
    }
    fn may_suspend(&self, snapshot: &Snapshot<'_>, queue: &QueueView) -> bool {
        (**self).may_suspend(snapshot, queue)
    }
    fn attention(&self, snapshot: &Snapshot<'_>) -> Vec<(bool, bool)> {
        (**self).attention(snapshot)
    }
    fn remeasures(&self, snapshot: &Snapshot<'_>, queue: &QueueView) -> bool {
        (**self).remeasures(snapshot, queue)
    }
    fn may_hold(&self, snapshot: &Snapshot<'_>, queue: &QueueView) -> bool {
        (**self).may_hold(snapshot, queue)
    }
    fn holds(&self, snapshot: &Snapshot<'_>) -> Vec<bool> {
        (**self).holds(snapshot)
    }
}

/// `x` nanoseconds as [`Nanos`], rounded down; negative and NaN give zero, overflow saturates.
#[expect(
    clippy::cast_possible_truncation,
    reason = "float-to-int casts saturate, which is the intent"
)]
pub(crate) fn nanos_f64(x: f64) -> baton_core::Nanos {
    baton_core::Nanos(x.max(0.0) as u64)
}
