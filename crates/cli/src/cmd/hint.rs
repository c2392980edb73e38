//! `baton hint TARGET KIND …`: every hint the scheduler understands.

use std::path::Path;
use std::process::ExitCode;

use baton_protocol::{Hint, HintKind, QueueRef, Request, Target, WirePriority};
use clap::{Args, Subcommand, ValueEnum};

use crate::client::Client;

#[derive(Debug, Args)]
#[group(id = "target", required = true, multiple = false)]
pub struct HintTarget {
    /// A process, by pid.
    #[arg(long, value_name = "PID", group = "target")]
    pid: Option<u32>,
    /// One queue: PID:qN.
    #[arg(long, value_name = "PID:qN", group = "target")]
    queue: Option<QueueRef>,
    /// A device, by the id `baton list` shows (GPU-…, sim-0).
    #[arg(long, value_name = "ID", group = "target")]
    device: Option<String>,
    /// Every device.
    #[arg(long, group = "target")]
    all: bool,
}

impl HintTarget {
    fn target(&self) -> Target {
        if let Some(q) = self.queue {
            Target::Queue(q)
        } else if let Some(pid) = self.pid {
            Target::Process { pid }
        } else if let Some(id) = &self.device {
            Target::Device { id: id.clone() }
        } else {
            Target::All
        }
    }
}

#[derive(Debug, Args)]
pub struct HintArgs {
    #[command(flatten)]
    target: HintTarget,
    #[command(subcommand)]
    hint: HintCmd,
}

#[derive(Debug, Subcommand)]
enum HintCmd {
    /// Priority, −100 to 100, higher first (queue or process).
    Priority {
        #[arg(allow_negative_numbers = true)]
        value: i32,
    },
    /// Share of the device's time to reserve, 1–100 % (queue or process).
    Utilization { percent: u8 },
    /// Time slice when sharing by turns, in µs (1 µs – 10 s; queue or process).
    TimeSlice { us: u64 },
    /// Each piece of work must finish within this many µs of becoming ready (queue or
    /// process).
    Deadline { us: u64 },
    /// k for k-EDF: queues allowed to run at once (device or --all).
    K { k: u32 },
    /// Run at LAX priority while the work may wait, at CRITICAL once it waited LAXITY µs.
    Laxity {
        #[arg(value_name = "LAXITY_US")]
        laxity_us: u64,
        #[arg(long, allow_negative_numbers = true, default_value_t = 0)]
        lax_priority: i32,
        #[arg(long, allow_negative_numbers = true, default_value_t = 100)]
        critical_priority: i32,
    },
    /// Whether the process owns the focused window (process only).
    ActiveWindow { state: OnOff },
    /// Work arrives in ARRIVES µs: start evicting lower work now; void after EXPIRES µs.
    Upcoming {
        #[arg(value_name = "ARRIVES_US")]
        arrives_us: u64,
        #[arg(value_name = "EXPIRES_US")]
        expires_us: u64,
    },
    /// Remove the hint of a kind from the target.
    Clear { kind: Kind },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum OnOff {
    On,
    Off,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Kind {
    Priority,
    Utilization,
    TimeSlice,
    Deadline,
    K,
    Laxity,
    ActiveWindow,
    Upcoming,
}

fn us(v: u64) -> u64 {
    v.saturating_mul(1000)
}

impl HintCmd {
    fn hint(&self) -> Hint {
        match *self {
            HintCmd::Priority { value } => Hint::Priority(WirePriority(value)),
            HintCmd::Utilization { percent } => Hint::Utilization { percent },
            HintCmd::TimeSlice { us: t } => Hint::TimeSlice { slice_ns: us(t) },
            HintCmd::Deadline { us: d } => Hint::Deadline { deadline_ns: us(d) },
            HintCmd::K { k } => Hint::KEdf { k },
            HintCmd::Laxity {
                laxity_us,
                lax_priority,
                critical_priority,
            } => Hint::Laxity {
                laxity_ns: us(laxity_us),
                lax_priority: WirePriority(lax_priority),
                critical_priority: WirePriority(critical_priority),
            },
            HintCmd::ActiveWindow { state } => Hint::ActiveWindow {
                active: matches!(state, OnOff::On),
            },
            HintCmd::Upcoming {
                arrives_us,
                expires_us,
            } => Hint::Upcoming {
                arrives_in_ns: us(arrives_us),
                expires_in_ns: us(expires_us),
            },
            HintCmd::Clear { kind } => Hint::Clear(match kind {
                Kind::Priority => HintKind::Priority,
                Kind::Utilization => HintKind::Utilization,
                Kind::TimeSlice => HintKind::TimeSlice,
                Kind::Deadline => HintKind::Deadline,
                Kind::K => HintKind::KEdf,
                Kind::Laxity => HintKind::Laxity,
                Kind::ActiveWindow => HintKind::ActiveWindow,
                Kind::Upcoming => HintKind::Upcoming,
            }),
        }
    }
}

pub fn run(args: HintArgs, socket: Option<&Path>) -> anyhow::Result<ExitCode> {
    let target = args.target.target();
    let hint = args.hint.hint();
    // Checked here too, so a bad value is explained without a daemon.
    hint.validate()?;
    hint.check_scope(target.scope())?;
    let mut c = Client::connect(socket)?;
    c.done(&Request::Hint { target, hint })?;
    Ok(ExitCode::SUCCESS)
}
