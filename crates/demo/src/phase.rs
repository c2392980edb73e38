//! The phases of a demo run and what each one measured.

use std::fmt;

use baton_core::Nanos;
use baton_scheduler::OpKind;
use baton_sim::Completion;

/// One phase of the demo.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// The HP service alone: its standalone latency.
    HpAlone,
    /// The BE flood alone: its standalone throughput.
    BeAlone,
    /// Both, each in its own context, nothing scheduling them but the device's time slices.
    Native,
    /// Both on XQueues under Baton's HPF policy.
    Baton,
}

impl Phase {
    /// Every phase, in the order the demo runs them.
    pub const ALL: [Phase; 4] = [Phase::HpAlone, Phase::BeAlone, Phase::Native, Phase::Baton];

    /// Whether the HP client runs in this phase.
    pub fn has_hp(self) -> bool {
        self != Phase::BeAlone
    }

    /// Whether the BE client runs in this phase.
    pub fn has_be(self) -> bool {
        self != Phase::HpAlone
    }

    /// A short name for tables and traces.
    pub fn name(self) -> &'static str {
        match self {
            Phase::HpAlone => "HP alone",
            Phase::BeAlone => "BE alone",
            Phase::Native => "HP+BE native",
            Phase::Baton => "HP+BE Baton",
        }
    }

    /// The JSON key stem (`hp_alone`, `native`, …).
    pub fn key(self) -> &'static str {
        match self {
            Phase::HpAlone => "hp_alone",
            Phase::BeAlone => "be_alone",
            Phase::Native => "native",
            Phase::Baton => "baton",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which client a command or operation belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The latency-critical service.
    Hp,
    /// The best-effort flood.
    Be,
}

/// What one phase measured.
#[derive(Clone, Debug, Default)]
pub struct PhaseResult {
    /// HP request latencies (release to last kernel done), sorted ascending.
    pub hp_latencies: Vec<Nanos>,
    /// BE kernels completed within the phase.
    pub be_completed: u64,
    /// The phase's length.
    pub duration: Nanos,
    /// Time HP's context had kernels on SMs.
    pub hp_busy: Nanos,
    /// Time BE's context had kernels on SMs.
    pub be_busy: Nanos,
    /// Context switches the device made.
    pub switches: u64,
    /// Scheduler decisions taken (Baton phase).
    pub decisions: u64,
    /// Commands that started within the trace window, with their client.
    pub(crate) trace_commands: Vec<(Role, Completion)>,
    /// Suspend/resume operations within the trace window.
    pub(crate) trace_ops: Vec<(Nanos, Role, OpKind)>,
}

impl PhaseResult {
    /// BE kernels completed per second.
    pub fn be_throughput(&self) -> f64 {
        let s = self.duration.as_secs_f64();
        if s > 0.0 {
            self.be_completed as f64 / s
        } else {
            0.0
        }
    }

    /// Fraction of the phase HP's context computed.
    pub fn hp_busy_fraction(&self) -> f64 {
        let d = self.duration.0 as f64;
        if d > 0.0 {
            self.hp_busy.0 as f64 / d
        } else {
            0.0
        }
    }
}
