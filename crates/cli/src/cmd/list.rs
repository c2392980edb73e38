//! `baton list`: scheduled processes and their queues.

use std::path::Path;
use std::process::ExitCode;

use anyhow::bail;
use baton_protocol::{Hint, ProcessList, Reply, Request};
use clap::Args;

use crate::client::Client;

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON (the daemon's `ProcessList`: field names are the keys).
    #[arg(long)]
    json: bool,
    /// Only this process.
    #[arg(long, value_name = "PID")]
    pid: Option<u32>,
}

pub fn run(args: ListArgs, socket: Option<&Path>) -> anyhow::Result<ExitCode> {
    let mut c = Client::connect(socket)?;
    let list = match c.request(&Request::List { pid: args.pid })? {
        Reply::List(l) => l,
        r => bail!("unexpected answer from the daemon: {}", r.name()),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&list)?);
    } else {
        print!("{}", table(&list));
    }
    Ok(ExitCode::SUCCESS)
}

/// Hints as `priority=10 utilization=30%`.
pub fn hints_text(h: &[Hint]) -> String {
    h.iter()
        .map(|h| match h {
            Hint::Priority(p) => format!("priority={}", p.0),
            Hint::Utilization { percent } => format!("utilization={percent}%"),
            Hint::TimeSlice { slice_ns } => format!("time-slice={}us", slice_ns / 1000),
            Hint::Deadline { deadline_ns } => format!("deadline={}us", deadline_ns / 1000),
            Hint::KEdf { k } => format!("k={k}"),
            Hint::Laxity { laxity_ns, .. } => format!("laxity={}us", laxity_ns / 1000),
            Hint::ActiveWindow { active } => format!("active-window={active}"),
            Hint::Upcoming { arrives_in_ns, .. } => format!("upcoming={}us", arrives_in_ns / 1000),
            Hint::Clear(k) => format!("clear {k}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The list as a table, one line per queue.
pub fn table(list: &ProcessList) -> String {
    let mut out = format!(
        "{:>8}  {:<16} {:<8} {:<14} {:<6} {:<10} {:>3} {:>8} {:>10}  {}\n",
        "PID", "COMMAND", "QUEUE", "DEVICE", "STATE", "RUN", "LVL", "INFLIGHT", "LAUNCHED", "HINTS"
    );
    for p in &list.processes {
        if p.queues.is_empty() {
            out.push_str(&format!(
                "{:>8}  {:<16} {:<8}  {}\n",
                p.pid,
                short(&p.name, 16),
                "-",
                hints_text(&p.hints)
            ));
        }
        for q in &p.queues {
            let mut hints = hints_text(&p.hints);
            let qh = hints_text(&q.hints);
            if !qh.is_empty() {
                hints = format!("{hints} [queue: {qh}]");
            }
            out.push_str(&format!(
                "{:>8}  {:<16} {:<8} {:<14} {:<6} {:<10} {:>3} {:>8} {:>10}  {}\n",
                p.pid,
                short(&p.name, 16),
                q.queue.to_string(),
                short(&q.device.id, 14),
                if q.ready { "ready" } else { "idle" },
                if q.suspended { "suspended" } else { "running" },
                q.level.0,
                q.in_flight,
                q.launched,
                hints.trim()
            ));
        }
    }
    if list.truncated {
        out.push_str("(list truncated: ask for one process with --pid)\n");
    }
    out
}

fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}
