//! The demo's results: percentiles, ratios, the table and the summary.

use std::fmt::Write as _;

use baton_core::{Level, Nanos, percentile};
use baton_sim::TimeMode;

use crate::summary::{
    DemoDevice, DemoFigures, DemoSummary, DemoTime, ScenarioSummary, SimulatedDetails,
};
use crate::{Phase, PhaseResult, Scenario};

/// Everything a demo run measured, with the targets it is judged by.
#[derive(Clone, Debug)]
pub struct DemoReport {
    scenario: Scenario,
    mode: TimeMode,
    level: Level,
    phases: Vec<(Phase, PhaseResult)>,
}

/// The HP p99 under Baton may exceed standalone by at most this factor.
pub const HP_P99_TARGET: f64 = 1.05;
/// BE under Baton must keep at least this share of the device time HP leaves idle.
pub const BE_IDLE_SHARE_TARGET: f64 = 0.90;

impl DemoReport {
    pub(crate) fn new(scenario: &Scenario, mode: TimeMode, results: Vec<PhaseResult>) -> Self {
        DemoReport {
            level: scenario.effective_level(),
            scenario: scenario.clone(),
            mode,
            phases: Phase::ALL.into_iter().zip(results).collect(),
        }
    }

    /// One phase's measurements.
    pub fn phase(&self, p: Phase) -> &PhaseResult {
        &self
            .phases
            .iter()
            .find(|(q, _)| *q == p)
            .expect("every phase runs")
            .1
    }

    /// HP latency percentile `q` in `phase`, in microseconds.
    pub fn hp_us(&self, phase: Phase, q: f64) -> f64 {
        percentile(&self.phase(phase).hp_latencies, q).as_micros_f64()
    }

    /// Fraction of the time HP keeps the device busy when alone.
    pub fn hp_busy_fraction(&self) -> f64 {
        self.phase(Phase::HpAlone).hp_busy_fraction()
    }

    /// `phase`'s HP p99 over the standalone HP p99.
    pub fn p99_ratio(&self, phase: Phase) -> f64 {
        ratio(self.hp_us(phase, 0.99), self.hp_us(Phase::HpAlone, 0.99))
    }

    /// Share of the device time HP leaves idle that BE used under Baton:
    /// `be_baton_tput / (be_alone_tput × (1 − hp_busy_fraction))`.
    pub fn be_idle_share(&self) -> f64 {
        let alone = self.phase(Phase::BeAlone).be_throughput();
        ratio(
            self.phase(Phase::Baton).be_throughput(),
            alone * (1.0 - self.hp_busy_fraction()),
        )
    }

    /// Whether Baton met both targets: HP p99 within ×1.05 of standalone, and BE keeping at
    /// least 90 % of the time HP leaves idle.
    pub fn meets_targets(&self) -> bool {
        self.p99_ratio(Phase::Baton) <= HP_P99_TARGET
            && self.be_idle_share() >= BE_IDLE_SHARE_TARGET
    }

    /// The four phases' figures.
    pub fn figures(&self) -> DemoFigures {
        let be = |p: Phase| self.phase(p).be_throughput();
        DemoFigures {
            hp_alone_p50_us: self.hp_us(Phase::HpAlone, 0.50),
            hp_alone_p99_us: self.hp_us(Phase::HpAlone, 0.99),
            hp_native_p50_us: self.hp_us(Phase::Native, 0.50),
            hp_native_p99_us: self.hp_us(Phase::Native, 0.99),
            hp_baton_p50_us: self.hp_us(Phase::Baton, 0.50),
            hp_baton_p99_us: self.hp_us(Phase::Baton, 0.99),
            be_alone_tput: be(Phase::BeAlone),
            be_native_tput: be(Phase::Native),
            be_baton_tput: be(Phase::Baton),
            hp_busy_fraction: self.hp_busy_fraction(),
        }
    }

    /// The machine-readable report.
    pub fn summary(&self) -> DemoSummary {
        let sc = &self.scenario;
        let us = |n: Nanos| n.as_micros_f64();
        let requests = |p: Phase| self.phase(p).hp_latencies.len();
        let switches = |p: Phase| self.phase(p).switches;
        DemoSummary {
            schema: DemoSummary::SCHEMA.into(),
            device: DemoDevice::Simulated,
            figures: self.figures(),
            simulated: Some(SimulatedDetails {
                time: match self.mode {
                    TimeMode::Virtual => DemoTime::Virtual,
                    TimeMode::RealTime => DemoTime::Real,
                },
                policy: "hpf".into(),
                level: self.level.number(),
                duration_s: sc.duration.as_secs_f64(),
                scenario: ScenarioSummary {
                    hp_kernels: sc.hp_kernels,
                    hp_kernel_us: [us(sc.hp_kernel.low), us(sc.hp_kernel.high)],
                    hp_period_us: us(sc.hp_period),
                    hp_sms: sc.hp_sms,
                    be_kernel_us: [us(sc.be_kernel.low), us(sc.be_kernel.high)],
                    be_sms: sc.be_sms,
                    be_depth: sc.be_depth,
                    threshold: sc.launch.threshold(),
                    batch: sc.launch.batch(),
                    seed: sc.seed,
                    sm_count: sc.device.sm_count,
                    timeslice_us: us(sc.device.timeslice),
                    switch_us: us(sc.device.switch_cost),
                    interrupt_us: us(sc.device.interrupt_latency),
                },
                hp_baton_p99_ratio: self.p99_ratio(Phase::Baton),
                hp_native_p99_ratio: self.p99_ratio(Phase::Native),
                be_baton_idle_share: self.be_idle_share(),
                meets_targets: self.meets_targets(),
                hp_alone_requests: requests(Phase::HpAlone),
                hp_native_requests: requests(Phase::Native),
                hp_baton_requests: requests(Phase::Baton),
                hp_alone_switches: switches(Phase::HpAlone),
                be_alone_switches: switches(Phase::BeAlone),
                native_switches: switches(Phase::Native),
                baton_switches: switches(Phase::Baton),
                baton_decisions: self.phase(Phase::Baton).decisions,
            }),
        }
    }

    /// The human-readable report.
    pub fn table(&self) -> String {
        let sc = &self.scenario;
        let mut s = String::new();
        let time = match self.mode {
            TimeMode::Virtual => "virtual time",
            TimeMode::RealTime => "real time",
        };
        let _ = writeln!(
            s,
            "Baton demo — simulated device ({} SMs, {} ms time slices), {time}, {:.1} s per phase",
            sc.device.sm_count,
            sc.device.timeslice.as_micros_f64() / 1000.0,
            sc.duration.as_secs_f64()
        );
        let _ = writeln!(
            s,
            "HP: {} kernels of {} every {:.1} ms   BE: kernels of {}, {} queued   Baton: HPF at {}",
            sc.hp_kernels,
            sc.hp_kernel,
            sc.hp_period.as_micros_f64() / 1000.0,
            sc.be_kernel,
            sc.be_depth,
            self.level
        );
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "{:<14} {:>10} {:>10} {:>11} {:>13} {:>8}",
            "phase", "HP p50", "HP p99", "p99 ×alone", "BE kernels/s", "×alone"
        );
        let be_alone = self.phase(Phase::BeAlone).be_throughput();
        for (phase, r) in &self.phases {
            let (p50, p99, x) = if phase.has_hp() {
                (
                    ms(self.hp_us(*phase, 0.5)),
                    ms(self.hp_us(*phase, 0.99)),
                    format!("{:.2}", self.p99_ratio(*phase)),
                )
            } else {
                ("—".into(), "—".into(), "—".into())
            };
            let (tput, tx) = if phase.has_be() {
                (
                    format!("{:.1}", r.be_throughput()),
                    format!("{:.2}", ratio(r.be_throughput(), be_alone)),
                )
            } else {
                ("—".into(), "—".into())
            };
            let _ = writeln!(
                s,
                "{:<14} {:>10} {:>10} {:>11} {:>13} {:>8}",
                phase.name(),
                p50,
                p99,
                x,
                tput,
                tx
            );
        }
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "HP alone keeps the device busy {:.1}% of the time.",
            self.hp_busy_fraction() * 100.0
        );
        let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
        let r = self.p99_ratio(Phase::Baton);
        let _ = writeln!(
            s,
            "HP p99 under Baton: ×{r:.3} of standalone (target ≤ ×{HP_P99_TARGET}: {}); natively ×{:.2}.",
            verdict(r <= HP_P99_TARGET),
            self.p99_ratio(Phase::Native)
        );
        let share = self.be_idle_share();
        let _ = writeln!(
            s,
            "BE under Baton used {:.1}% of the device time HP leaves idle (target ≥ {:.0}%: {}).",
            share * 100.0,
            BE_IDLE_SHARE_TARGET * 100.0,
            verdict(share >= BE_IDLE_SHARE_TARGET)
        );
        s
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

fn ms(us: f64) -> String {
    format!("{:.3} ms", us / 1000.0)
}
