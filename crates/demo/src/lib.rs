//! The demo: a latency-critical (HP) service and a best-effort (BE) flood sharing one device.
//!
//! A [`Scenario`] describes the two clients: HP releases a request of `hp_kernels` short
//! kernels every `hp_period`; BE keeps `be_depth` long kernels queued at all times. The demo
//! runs four phases on the simulated device — HP alone, BE alone, both natively (two
//! time-sliced contexts, nothing scheduling them), both under Baton (XQueues and the HPF
//! policy) — and reports HP latency percentiles, BE throughput, and the ratios that matter
//! ([`DemoReport`]; as JSON, [`DemoSummary`]). Every phase replays the same kernels:
//! durations are drawn from one seed.
//!
//! Phases run in [`TimeMode::Virtual`](baton_sim::TimeMode) (deterministic, a simulated second
//! takes milliseconds) or in real time (threads, the wall clock, the XQueues' launch workers
//! and a scheduler thread: what a live process does).
//!
//! [`gpu`] runs the same four phases on a CUDA GPU with real processes and reports the same
//! [`DemoFigures`]. [`chrome_trace`] is the Chrome-trace writer of the demo's [`Trace`] and of
//! `baton trace`.
#![forbid(unsafe_code)]

pub mod chrome_trace;
mod clients;
pub mod gpu;
mod jobs;
mod phase;
mod real_time;
mod report;
mod route;
mod scenario;
mod summary;
mod trace;
mod virtual_time;

pub use jobs::{Job, JobTracker};
pub use phase::{Phase, PhaseResult, Role};
pub use report::DemoReport;
pub use route::Route;
pub use scenario::{Scenario, ScenarioError, SpanRange, SpanRangeError};
pub use summary::{
    DemoDevice, DemoFigures, DemoSummary, DemoTime, ScenarioSummary, SimulatedDetails,
};
pub use trace::{DemoEventArgs, Trace};

use baton_core::XQueueError;
use baton_sim::TimeMode;

/// A demo run could not complete.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// A scenario parameter is out of range.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A queue refused work (a bug: the simulated device accepts everything).
    #[error("the demo's {role:?} queue failed: {source}")]
    Queue {
        /// Whose queue.
        role: Role,
        /// What it said.
        source: XQueueError,
    },
    /// A client thread could not be started (real-time mode).
    #[error("cannot start a demo thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// Progress of a demo run, for a progress indicator.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// The phase running.
    pub phase: Phase,
    /// Its position among the phases (0-based) and how many there are.
    pub index: usize,
    /// How many phases there are.
    pub count: usize,
    /// Fraction of this phase done, 0.0 to 1.0.
    pub fraction: f64,
}

/// Runs every phase of `scenario` and gathers the report. `progress` is called as phases
/// advance; `trace`, if given, receives the first part of each phase's timeline.
pub fn run(
    scenario: &Scenario,
    mode: TimeMode,
    mut trace: Option<&mut Trace>,
    progress: &mut dyn FnMut(Progress),
) -> Result<DemoReport, DemoError> {
    scenario.validate()?;
    let mut results = Vec::new();
    for (index, phase) in Phase::ALL.into_iter().enumerate() {
        let mut report = |fraction: f64| {
            progress(Progress {
                phase,
                index,
                count: Phase::ALL.len(),
                fraction,
            })
        };
        let result = match mode {
            TimeMode::Virtual => virtual_time::run_phase(scenario, phase, &mut report),
            TimeMode::RealTime => real_time::run_phase(scenario, phase, &mut report),
        }?;
        if let Some(t) = trace.as_deref_mut() {
            t.add_phase(phase, &result, scenario.trace_window);
        }
        results.push(result);
    }
    Ok(DemoReport::new(scenario, mode, results))
}
