//! Perfetto / chrome://tracing timelines of demo phases.

use std::io;
use std::path::Path;

use baton_core::Nanos;
use baton_scheduler::OpKind;
use serde::{Deserialize, Serialize};

use crate::chrome_trace::{ChromeTrace, NameArgs, TraceEvent};
use crate::phase::Role;
use crate::{Phase, PhaseResult};

/// A timeline in the Chrome trace event format: one process per phase, one track per queue for
/// its commands and one for its suspended spans.
#[derive(Debug, Default)]
pub struct Trace {
    events: Vec<TraceEvent<DemoEventArgs>>,
}

/// The arguments of the demo's trace events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DemoEventArgs {
    /// A track's name.
    Name(NameArgs),
    /// A command's launch.
    Command {
        /// When it was launched (it starts later), µs.
        launched_us: f64,
        /// Its position in its queue.
        index: u64,
    },
}

impl From<NameArgs> for DemoEventArgs {
    fn from(n: NameArgs) -> DemoEventArgs {
        DemoEventArgs::Name(n)
    }
}

fn track(role: Role, suspended: bool) -> (u64, &'static str) {
    match (role, suspended) {
        (Role::Hp, false) => (1, "HP queue: commands"),
        (Role::Hp, true) => (2, "HP queue: suspended"),
        (Role::Be, false) => (3, "BE queue: commands"),
        (Role::Be, true) => (4, "BE queue: suspended"),
    }
}

fn us(n: Nanos) -> f64 {
    n.as_micros_f64()
}

impl Trace {
    /// An empty trace.
    pub fn new() -> Trace {
        Trace::default()
    }

    /// Adds the first `window` of `phase`'s timeline.
    pub fn add_phase(&mut self, phase: Phase, r: &PhaseResult, window: Nanos) {
        let pid = Phase::ALL.iter().position(|p| *p == phase).unwrap_or(0) as u64 + 1;
        self.events
            .push(TraceEvent::process_name(pid, phase.name()));
        for role in [Role::Hp, Role::Be] {
            for suspended in [false, true] {
                let (tid, name) = track(role, suspended);
                self.events.push(TraceEvent::thread_name(pid, tid, name));
            }
        }
        for (role, c) in &r.trace_commands {
            let (tid, _) = track(*role, false);
            let name = match role {
                Role::Hp => format!("HP req {} {}", c.tag, c.kind),
                Role::Be => format!("BE {} {}", c.kind, c.tag),
            };
            self.events.push(
                TraceEvent::complete(
                    "command",
                    name,
                    (pid, tid),
                    us(c.started_at),
                    us(c.ended_at - c.started_at),
                )
                .with_args(DemoEventArgs::Command {
                    launched_us: us(c.launched_at),
                    index: c.index,
                }),
            );
        }
        for role in [Role::Hp, Role::Be] {
            let (tid, _) = track(role, true);
            let suspended = |from: Nanos, to: Nanos| {
                TraceEvent::complete("schedule", "suspended", (pid, tid), us(from), us(to - from))
            };
            let mut since: Option<Nanos> = None;
            for (at, r2, kind) in &r.trace_ops {
                if *r2 != role {
                    continue;
                }
                match (kind, since) {
                    (OpKind::Suspend, None) => since = Some(*at),
                    (OpKind::Resume, Some(s)) => {
                        self.events.push(suspended(s, *at));
                        since = None;
                    }
                    _ => {}
                }
            }
            if let Some(s) = since {
                self.events.push(suspended(s, window.max(s)));
            }
        }
    }

    /// How many events the trace holds.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The trace document.
    pub fn document(&self) -> ChromeTrace<DemoEventArgs> {
        ChromeTrace::new(self.events.clone())
    }

    /// Writes the trace to `path`.
    pub fn write(&self, path: &Path) -> io::Result<()> {
        self.document().write(path)
    }
}

#[cfg(test)]
mod tests {
    use baton_core::CommandKind;
    use baton_sim::{Completion, StreamId};
    use serde_json::json;

    use super::*;

    #[test]
    fn a_phase_becomes_tracks_commands_and_suspended_spans() {
        let c = Completion {
            stream: StreamId(0),
            index: 4,
            kind: CommandKind::Kernel,
            tag: 2,
            launched_at: Nanos(1_000),
            started_at: Nanos(25_000),
            ended_at: Nanos(87_500),
        };
        let r = PhaseResult {
            trace_commands: vec![(Role::Hp, c), (Role::Be, c)],
            trace_ops: vec![
                (Nanos(10_000), Role::Be, OpKind::Suspend),
                (Nanos(30_000), Role::Be, OpKind::Resume),
                (Nanos(40_000), Role::Be, OpKind::Suspend),
            ],
            ..PhaseResult::default()
        };
        let mut t = Trace::new();
        t.add_phase(Phase::Baton, &r, Nanos::from_millis(100));
        assert_eq!(t.len(), 1 + 4 + 2 + 2);
        let v = serde_json::to_value(t.document()).unwrap();
        assert_eq!(v["schema"], "baton.trace/1");
        assert_eq!(v["displayTimeUnit"], "ms");
        assert!(v.get("otherData").is_none());
        let ev = v["traceEvents"].as_array().unwrap();
        assert_eq!(
            ev[0],
            json!({"ph": "M", "name": "process_name", "pid": 4, "args": {"name": "HP+BE Baton"}})
        );
        assert_eq!(
            ev[4],
            json!({"ph": "M", "name": "thread_name", "pid": 4, "tid": 4,
                   "args": {"name": "BE queue: suspended"}})
        );
        assert_eq!(
            ev[5],
            json!({"ph": "X", "name": "HP req 2 kernel", "cat": "command", "pid": 4, "tid": 1,
                   "ts": 25.0, "dur": 62.5, "args": {"launched_us": 1.0, "index": 4}})
        );
        assert_eq!(ev[6]["name"], "BE kernel 2");
        assert_eq!(
            ev[7],
            json!({"ph": "X", "name": "suspended", "cat": "schedule", "pid": 4, "tid": 4,
                   "ts": 10.0, "dur": 20.0})
        );
        // Still suspended at the end of the window.
        assert_eq!(ev[8]["ts"], 40.0);
        assert_eq!(ev[8]["dur"], 100_000.0 - 40.0);
    }
}
