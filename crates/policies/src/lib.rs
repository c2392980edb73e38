//! Scheduling policies: pure functions of a status snapshot plus hints.
//!
//! A [`Policy`] sees a [`Snapshot`] — every queue the scheduler manages (ready or idle, since
//! when, suspended or not, the device time attributed to it, its last job's latency, its
//! [`QueueHints`]), every process owning one (pid, uid, OS niceness, [`ProcessHints`]), the
//! scheduler-wide [`GlobalHints`] and the [`Dependency`] edges between queues — and answers a
//! [`Decision`]: which queues to suspend (all others run), optionally when to be asked again,
//! and a [`QueuePlan`] per queue (what the scheduler must hear from it, whether it may be
//! suspended or held before the next decision). It keeps whatever state it likes between calls (`&mut self`), but performs no I/O
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
pub use decision::{Decision, QueuePlan};
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

    /// Decides which queues run now, and plans how each is to run until the next decision
    /// ([`Decision::plans`]: what it reports, whether it may be suspended or held, whether it
    /// is measured again). Called on every queue event, hint change and requested wake-up;
    /// must be cheap (a decision across 100 processes within tens of microseconds).
    fn decide(&mut self, snapshot: &Snapshot<'_>) -> Decision;

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
}

/// `x` nanoseconds as [`Nanos`], rounded down; negative and NaN give zero, overflow saturates.
#[expect(
    clippy::cast_possible_truncation,
    reason = "float-to-int casts saturate, which is the intent"
)]
pub(crate) fn nanos_f64(x: f64) -> baton_core::Nanos {
    baton_core::Nanos(x.max(0.0) as u64)
}
