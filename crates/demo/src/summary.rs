//! The demo's machine-readable report (`baton demo --json`): one document for both devices.
//!
//! Every demo, simulated or on a GPU, reports the same [`DemoFigures`]: HP latency alone,
//! beside BE natively and under Baton, BE throughput in the same phases, and how busy HP
//! keeps the device alone. A simulated run adds what only the simulated device knows
//! ([`SimulatedDetails`]: the scenario, ratios, targets, context switches, decisions).

use serde::{Deserialize, Serialize};

/// Where a demo ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DemoDevice {
    /// The simulated device.
    Simulated,
    /// A CUDA GPU, with real processes.
    Gpu,
}

/// Which clock a simulated run used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DemoTime {
    /// Virtual time: deterministic.
    Virtual,
    /// The wall clock, with live threads.
    Real,
}

/// `baton demo --json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DemoSummary {
    /// [`DemoSummary::SCHEMA`].
    pub schema: String,
    /// Where it ran.
    pub device: DemoDevice,
    /// What every demo reports.
    #[serde(flatten)]
    pub figures: DemoFigures,
    /// What only the simulated device reports (absent on a GPU).
    #[serde(flatten)]
    pub simulated: Option<SimulatedDetails>,
}

impl DemoSummary {
    /// The document's schema.
    pub const SCHEMA: &'static str = "baton.demo/1";
}

/// The figures every demo reports. Latencies are of whole HP requests, in µs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DemoFigures {
    /// HP p50 alone.
    pub hp_alone_p50_us: f64,
    /// HP p99 alone.
    pub hp_alone_p99_us: f64,
    /// HP p50 beside BE, natively.
    pub hp_native_p50_us: f64,
    /// HP p99 beside BE, natively.
    pub hp_native_p99_us: f64,
    /// HP p50 beside BE, under Baton.
    pub hp_baton_p50_us: f64,
    /// HP p99 beside BE, under Baton.
    pub hp_baton_p99_us: f64,
    /// BE throughput alone: kernels per second on the simulated device, GPU-seconds of work
    /// per second on a GPU.
    pub be_alone_tput: f64,
    /// BE throughput beside HP, natively.
    pub be_native_tput: f64,
    /// BE throughput beside HP, under Baton.
    pub be_baton_tput: f64,
    /// The fraction of the time HP keeps the device busy alone.
    pub hp_busy_fraction: f64,
}

/// What only a simulated run reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimulatedDetails {
    /// Its clock.
    pub time: DemoTime,
    /// The policy of the Baton phase.
    pub policy: String,
    /// The level BE was suspended with.
    pub level: u8,
    /// Each phase's length, in seconds.
    pub duration_s: f64,
    /// The scenario.
    pub scenario: ScenarioSummary,
    /// HP p99 under Baton over HP p99 alone.
    pub hp_baton_p99_ratio: f64,
    /// HP p99 natively over HP p99 alone.
    pub hp_native_p99_ratio: f64,
    /// The share of the device time HP leaves idle that BE used under Baton.
    pub be_baton_idle_share: f64,
    /// Whether Baton met both targets.
    pub meets_targets: bool,
    /// HP requests completed alone.
    pub hp_alone_requests: usize,
    /// HP requests completed natively.
    pub hp_native_requests: usize,
    /// HP requests completed under Baton.
    pub hp_baton_requests: usize,
    /// Context switches with HP alone.
    pub hp_alone_switches: u64,
    /// Context switches with BE alone.
    pub be_alone_switches: u64,
    /// Context switches natively.
    pub native_switches: u64,
    /// Context switches under Baton.
    pub baton_switches: u64,
    /// Scheduler decisions under Baton.
    pub baton_decisions: u64,
}

/// A simulated run's scenario, in the units of its flags.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioSummary {
    /// Kernels per HP request.
    pub hp_kernels: u32,
    /// HP kernel durations, lowest and highest, µs.
    pub hp_kernel_us: [f64; 2],
    /// The HP request period, µs.
    pub hp_period_us: f64,
    /// SMs per HP kernel.
    pub hp_sms: u32,
    /// BE kernel durations, lowest and highest, µs.
    pub be_kernel_us: [f64; 2],
    /// SMs per BE kernel.
    pub be_sms: u32,
    /// BE kernels kept queued.
    pub be_depth: u32,
    /// Commands in flight per queue.
    pub threshold: u32,
    /// Commands between sync points.
    pub batch: u32,
    /// The seed of every draw.
    pub seed: u64,
    /// SMs of the simulated device.
    pub sm_count: u32,
    /// Its context time slice, µs.
    pub timeslice_us: f64,
    /// Its context switch cost, µs.
    pub switch_us: f64,
    /// Its Level-3 interrupt latency, µs.
    pub interrupt_us: f64,
}
