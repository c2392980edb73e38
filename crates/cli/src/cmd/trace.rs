//! `baton trace --seconds S --out FILE`: a timeline of the daemon's decisions for Perfetto or
//! `chrome://tracing`: per queue, a track of running/suspended spans and ready/idle marks;
//! a scheduler track of decisions (their latency as duration) and hints.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use baton_protocol::{Reply, Request, SpanState, TraceRecord};
use clap::Args;
use serde_json::{Value, json};

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
const SCHEDULER_PID: u32 = 0;

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// Chrome-trace events for `records`.
pub fn chrome_events(records: &[TraceRecord]) -> Vec<Value> {
    let mut ev = vec![
        json!({"ph": "M", "name": "process_name", "pid": SCHEDULER_PID,
        "args": {"name": "baton scheduler"}}),
    ];
    for r in records {
        match r {
            TraceRecord::Process { pid, name } => ev.push(json!({"ph": "M",
                "name": "process_name", "pid": pid, "args": {"name": format!("{name} ({pid})")}})),
            TraceRecord::Queue {
                pid,
                queue,
                device,
                label,
            } => ev.push(json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": queue.0,
                "args": {"name": format!("{queue} {device} {label}").trim().to_string()}})),
            TraceRecord::Span {
                pid,
                queue,
                state,
                start_ns,
                end_ns,
            } => ev.push(json!({"ph": "X", "cat": "span", "pid": pid, "tid": queue.0,
                "name": match state { SpanState::Running => "running", SpanState::Suspended => "suspended" },
                "ts": us(*start_ns), "dur": us(end_ns.saturating_sub(*start_ns))})),
            TraceRecord::QueueState {
                pid,
                queue,
                ready,
                at_ns,
            } => ev.push(json!({"ph": "i", "s": "t", "cat": "state", "pid": pid, "tid": queue.0,
                "name": if *ready { "ready" } else { "idle" }, "ts": us(*at_ns)})),
            TraceRecord::Decision {
                at_ns,
                latency_ns,
                cause,
                suspended,
                resumed,
            } => ev.push(json!({"ph": "X", "cat": "decision", "pid": SCHEDULER_PID, "tid": 0,
                "name": "decision", "ts": us(*at_ns), "dur": us(*latency_ns),
                "args": {"cause": cause, "suspended": suspended, "resumed": resumed}})),
            TraceRecord::Hint {
                at_ns,
                target,
                hint,
            } => ev.push(json!({"ph": "i", "s": "p", "cat": "hint", "pid": SCHEDULER_PID,
                "tid": 1, "name": "hint", "ts": us(*at_ns),
                "args": {"target": target, "hint": hint}})),
        }
    }
    ev
}

pub fn run(args: TraceArgs, socket: Option<&Path>) -> anyhow::Result<ExitCode> {
    if !(args.seconds.is_finite() && args.seconds > 0.0 && args.seconds <= 3600.0) {
        bail!("--seconds must be between 0 and 3600, not {}", args.seconds);
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
    let doc = json!({"traceEvents": chrome_events(&records), "displayTimeUnit": "ms",
        "otherData": {"records": records.len(), "dropped": dropped}});
    std::fs::write(&args.out, serde_json::to_vec(&doc)?)
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
