//! `baton trace --seconds S --out FILE`: a timeline of the daemon's decisions for Perfetto or
//! `chrome://tracing`: per queue, a track of running/suspended spans and ready/idle marks;
//! a scheduler track of decisions (their latency as duration) and hints.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use baton_demo::chrome_trace::{ChromeTrace, InstantScope, NameArgs, RecordCounts, TraceEvent};
use baton_protocol::{DecisionCause, Hint, Reply, Request, SpanState, Target, TraceRecord};
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::client::Client;

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// How long to record.
    #[arg(long, value_name = "S", default_value_t = 5.0)]
    seconds: f64,
    /// Where to write the Chrome-trace JSON.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Records to keep at most (later ones are counted as dropped).
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    capacity: u32,
}

/// The pid of the scheduler's own track.
const SCHEDULER_PID: u64 = 0;

/// The arguments of the daemon trace's events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DaemonEventArgs {
    /// A track's name.
    Name(NameArgs),
    /// A decision's cause and effect.
    Decision {
        /// What prompted it.
        cause: DecisionCause,
        /// Queues it suspended.
        suspended: u32,
        /// Queues it resumed.
        resumed: u32,
    },
    /// A hint given.
    Hint {
        /// What it was about.
        target: Target,
        /// The hint.
        hint: Hint,
    },
}

impl From<NameArgs> for DaemonEventArgs {
    fn from(n: NameArgs) -> DaemonEventArgs {
        DaemonEventArgs::Name(n)
    }
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// Chrome-trace events for `records`.
pub fn chrome_events(records: &[TraceRecord]) -> Vec<TraceEvent<DaemonEventArgs>> {
    let mut ev = vec![TraceEvent::process_name(SCHEDULER_PID, "baton scheduler")];
    for r in records {
        ev.push(match r {
            TraceRecord::Process { pid, name } => {
                TraceEvent::process_name(u64::from(*pid), format!("{name} ({pid})"))
            }
            TraceRecord::Queue {
                pid,
                queue,
                device,
                label,
            } => TraceEvent::thread_name(
                u64::from(*pid),
                queue.0,
                format!("{queue} {device} {label}").trim().to_string(),
            ),
            TraceRecord::Span {
                pid,
                queue,
                state,
                start_ns,
                end_ns,
            } => TraceEvent::complete(
                "span",
                match state {
                    SpanState::Running => "running",
                    SpanState::Suspended => "suspended",
                },
                (u64::from(*pid), queue.0),
                us(*start_ns),
                us(end_ns.saturating_sub(*start_ns)),
            ),
            TraceRecord::QueueState {
                pid,
                queue,
                ready,
                at_ns,
            } => TraceEvent::instant(
                "state",
                if *ready { "ready" } else { "idle" },
                (u64::from(*pid), queue.0),
                us(*at_ns),
                InstantScope::Thread,
            ),
            TraceRecord::Decision {
                at_ns,
                latency_ns,
                cause,
                suspended,
                resumed,
            } => TraceEvent::complete(
                "decision",
                "decision",
                (SCHEDULER_PID, 0),
                us(*at_ns),
                us(*latency_ns),
            )
            .with_args(DaemonEventArgs::Decision {
                cause: *cause,
                suspended: *suspended,
                resumed: *resumed,
            }),
            TraceRecord::Hint {
                at_ns,
                target,
                hint,
            } => TraceEvent::instant(
                "hint",
                "hint",
                (SCHEDULER_PID, 1),
                us(*at_ns),
                InstantScope::Process,
            )
            .with_args(DaemonEventArgs::Hint {
                target: target.clone(),
                hint: *hint,
            }),
        });
    }
    ev
}

pub fn run(args: TraceArgs, socket: Option<&Path>) -> anyhow::Result<ExitCode> {
    if !(args.seconds.is_finite() && args.seconds > 0.0 && args.seconds <= 3600.0) {
        return Err(super::Exit::usage(format!(
            "--seconds must be between 0 and 3600, not {}",
            args.seconds
        )));
    }
    let mut c = Client::connect(socket)?;
    c.done(&Request::TraceStart {
        capacity: args.capacity.clamp(1, baton_protocol::MAX_TRACE_CAPACITY),
    })?;
    std::thread::sleep(Duration::from_secs_f64(args.seconds));
    let dropped = match c.request(&Request::TraceStop)? {
        Reply::TraceStopped { dropped, .. } => dropped,
        r => bail!("unexpected answer from the daemon: {}", r.name()),
    };
    let mut records = Vec::new();
    let mut cursor = 0;
    loop {
        match c.request(&Request::TraceRead { cursor })? {
            Reply::Trace(chunk) => {
                records.extend(chunk.records);
                cursor = chunk.next;
                if chunk.complete {
                    break;
                }
            }
            r => bail!("unexpected answer from the daemon: {}", r.name()),
        }
    }
    let doc = ChromeTrace::new(chrome_events(&records)).with_counts(RecordCounts {
        records: records.len() as u64,
        dropped,
    });
    std::fs::write(&args.out, doc.to_vec()?)
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    eprintln!(
        "baton: {} records written to {}{} (open it in https://ui.perfetto.dev)",
        records.len(),
        args.out.display(),
        if dropped > 0 {
            format!("; {dropped} dropped: raise --capacity")
        } else {
            String::new()
        }
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use baton_protocol::{DecisionCause, Hint, QueueId, Target, WirePriority};
    use serde_json::json;

    use super::*;

    #[test]
    fn every_record_becomes_its_chrome_event() {
        let records = [
            TraceRecord::Process {
                pid: 42,
                name: "python".into(),
            },
            TraceRecord::Queue {
                pid: 42,
                queue: QueueId(3),
                device: "GPU-0".into(),
                label: String::new(),
            },
            TraceRecord::Span {
                pid: 42,
                queue: QueueId(3),
                state: SpanState::Suspended,
                start_ns: 1_500,
                end_ns: 4_000,
            },
            TraceRecord::Span {
                pid: 42,
                queue: QueueId(3),
                state: SpanState::Running,
                start_ns: 4_000,
                end_ns: 3_000,
            },
            TraceRecord::QueueState {
                pid: 42,
                queue: QueueId(3),
                ready: true,
                at_ns: 2_000,
            },
            TraceRecord::Decision {
                at_ns: 5_000,
                latency_ns: 250,
                cause: DecisionCause::Timer,
                suspended: 2,
                resumed: 1,
            },
            TraceRecord::Hint {
                at_ns: 6_000,
                target: Target::Process { pid: 42 },
                hint: Hint::Priority(WirePriority(5)),
            },
        ];
        let events = serde_json::to_value(chrome_events(&records)).unwrap();
        let expected = json!([
            {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "baton scheduler"}},
            {"ph": "M", "name": "process_name", "pid": 42, "args": {"name": "python (42)"}},
            {"ph": "M", "name": "thread_name", "pid": 42, "tid": 3, "args": {"name": "q3 GPU-0"}},
            {"ph": "X", "cat": "span", "pid": 42, "tid": 3, "name": "suspended", "ts": 1.5, "dur": 2.5},
            {"ph": "X", "cat": "span", "pid": 42, "tid": 3, "name": "running", "ts": 4.0, "dur": 0.0},
            {"ph": "i", "s": "t", "cat": "state", "pid": 42, "tid": 3, "name": "ready", "ts": 2.0},
            {"ph": "X", "cat": "decision", "pid": 0, "tid": 0, "name": "decision", "ts": 5.0,
             "dur": 0.25, "args": {"cause": "timer", "suspended": 2, "resumed": 1}},
            {"ph": "i", "s": "p", "cat": "hint", "pid": 0, "tid": 1, "name": "hint", "ts": 6.0,
             "args": {"target": {"process": {"pid": 42}}, "hint": {"priority": 5}}},
        ]);
        assert_eq!(events, expected);
    }
}
