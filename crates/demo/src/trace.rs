//! Perfetto / chrome://tracing timelines of demo phases.

use std::io;
use std::path::Path;

use baton_core::Nanos;
use baton_scheduler::OpKind;
use serde_json::{Value, json};

use crate::phase::Role;
use crate::{Phase, PhaseResult};

/// A timeline in the Chrome trace event format: one process per phase, one track per queue for
/// its commands and one for its suspended spans.
#[derive(Debug, Default)]
pub struct Trace {
    events: Vec<Value>,
}

fn track(role: Role, suspended: bool) -> (u32, &'static str) {
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
        let pid = Phase::ALL.iter().position(|p| *p == phase).unwrap_or(0) + 1;
        self.events
            .push(json!({"ph": "M", "name": "process_name", "pid": pid,
            "args": {"name": phase.name()}}));
        for role in [Role::Hp, Role::Be] {
            for suspended in [false, true] {
                let (tid, name) = track(role, suspended);
                self.events.push(
                    json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                    "args": {"name": name}}),
                );
            }
        }
        for (role, c) in &r.trace_commands {
            let (tid, _) = track(*role, false);
            let name = match role {
                Role::Hp => format!("HP req {} {}", c.tag, c.kind),
                Role::Be => format!("BE {} {}", c.kind, c.tag),
            };
            self.events.push(
                json!({"ph": "X", "name": name, "cat": "command", "pid": pid, "tid": tid,
                "ts": us(c.started_at), "dur": us(c.ended_at - c.started_at),
                "args": {"launched_us": us(c.launched_at), "index": c.index}}),
            );
        }
        for role in [Role::Hp, Role::Be] {
            let (tid, _) = track(role, true);
            let mut since: Option<Nanos> = None;
            for (at, r2, kind) in &r.trace_ops {
                if *r2 != role {
                    continue;
                }
                match (kind, since) {
                    (OpKind::Suspend, None) => since = Some(*at),
                    (OpKind::Resume, Some(s)) => {
                        self.events
                            .push(json!({"ph": "X", "name": "suspended", "cat": "schedule",
                            "pid": pid, "tid": tid, "ts": us(s), "dur": us(*at - s)}));
                        since = None;
                    }
                    _ => {}
                }
            }
            if let Some(s) = since {
                let end = window.max(s);
                self.events
                    .push(json!({"ph": "X", "name": "suspended", "cat": "schedule",
                    "pid": pid, "tid": tid, "ts": us(s), "dur": us(end - s)}));
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

    /// The trace as JSON.
    pub fn to_json(&self) -> Value {
        json!({"traceEvents": self.events, "displayTimeUnit": "ms"})
    }

    /// Writes the trace to `path`.
    pub fn write(&self, path: &Path) -> io::Result<()> {
        let text = serde_json::to_string(&self.to_json()).map_err(io::Error::other)?;
        std::fs::write(path, text)
    }
}
