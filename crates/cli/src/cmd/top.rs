//! `baton top`: a live view of every scheduled queue.
//!
//! Keys: `q`/Esc quit; `s` cycles the sort (pid, command, device share, commands/s); `p`,
//! `c`, `d`, `r` pick one. [`render`] draws one frame from a [`Model`], so the view is tested
//! with ratatui's `TestBackend`.

use std::io::IsTerminal as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::bail;
use baton_protocol::{DaemonStatus, ProcessList, Reply, Request};
use clap::Args;
use ratatui::Frame;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Paragraph, Row, Table};

use crate::client::Client;

#[derive(Debug, Args)]
pub struct TopArgs {
    /// Seconds between refreshes.
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    interval: f64,
}

/// How rows are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sort {
    Pid,
    Command,
    Share,
    Rate,
}

impl Sort {
    fn next(self) -> Sort {
        match self {
            Sort::Pid => Sort::Command,
            Sort::Command => Sort::Share,
            Sort::Share => Sort::Rate,
            Sort::Rate => Sort::Pid,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Sort::Pid => "pid",
            Sort::Command => "command",
            Sort::Share => "device share",
            Sort::Rate => "commands/s",
        }
    }
}

/// What one frame shows.
pub struct Model {
    pub status: Option<DaemonStatus>,
    pub list: ProcessList,
    pub sort: Sort,
    pub error: Option<String>,
}

/// One table row: pid, command, device, queue, state, run, level, in flight, rate, share.
fn rows(m: &Model) -> Vec<[String; 10]> {
    let mut v: Vec<(u32, String, f64, f64, [String; 10])> = Vec::new();
    for p in &m.list.processes {
        for q in &p.queues {
            v.push((
                p.pid,
                p.name.clone(),
                q.device_share,
                q.commands_per_sec,
                [
                    p.pid.to_string(),
                    p.name.clone(),
                    q.device.id.clone(),
                    q.queue.to_string(),
                    if q.ready { "ready" } else { "idle" }.into(),
                    if q.suspended { "suspended" } else { "running" }.into(),
                    format!("L{}", q.level.0),
                    q.in_flight.to_string(),
                    format!("{:.0}", q.commands_per_sec),
                    format!("{:.1}%", q.device_share),
                ],
            ));
        }
    }
    match m.sort {
        Sort::Pid => v.sort_by_key(|r| r.0),
        Sort::Command => v.sort_by(|a, b| a.1.cmp(&b.1)),
        Sort::Share => v.sort_by(|a, b| b.2.total_cmp(&a.2)),
        Sort::Rate => v.sort_by(|a, b| b.3.total_cmp(&a.3)),
    }
    v.into_iter().map(|r| r.4).collect()
}

/// One line of per-device counts: each device (by UUID, cut to its first group) with its
/// queues, how many are suspended, and its queues' summed share.
fn device_line(m: &Model) -> String {
    let doc = crate::cmd::list::by_device(&m.list);
    let parts: Vec<String> = doc
        .devices
        .iter()
        .map(|d| {
            let share: f64 = m
                .list
                .processes
                .iter()
                .flat_map(|p| &p.queues)
                .filter(|q| q.device.id == d.id)
                .map(|q| q.device_share)
                .sum();
            let id: String = d.id.splitn(3, '-').take(2).collect::<Vec<_>>().join("-");
            let others = d.others.as_ref().map_or(String::new(), |o| {
                format!(
                    " (+{} queues of {} others, {:.0}%)",
                    o.queues, o.processes, o.device_share
                )
            });
            format!(
                "{id}: {} queues, {} suspended, {share:.0}% busy{others}",
                d.queues.len(),
                d.queues.iter().filter(|q| q.suspended).count()
            )
        })
        .collect();
    if parts.is_empty() {
        "devices: none yet".into()
    } else {
        format!("devices: {}", parts.join(" · "))
    }
}

/// Draws one frame.
pub fn render(f: &mut Frame<'_>, m: &Model) {
    let [head, devices, body] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Length(1),
        Constraint::Min(0),
    ])
    .areas(f.area());
    let header = match (&m.status, &m.error) {
        (_, Some(e)) => format!("baton top — {e}"),
        (Some(s), None) => format!(
            "baton top — policy {} · {} processes · {} queues ({} ready, {} suspended) · decision p50 {:.1} µs p99 {:.1} µs\nsort: {} (s: next, p/c/d/r) · q: quit",
            s.policy,
            s.processes,
            s.queues,
            s.ready_queues,
            s.suspended_queues,
            s.decision_latency.p50_ns as f64 / 1000.0,
            s.decision_latency.p99_ns as f64 / 1000.0,
            m.sort.name()
        ),
        (None, None) => "baton top — connecting…".into(),
    };
    f.render_widget(Paragraph::new(header), head);
    f.render_widget(Paragraph::new(device_line(m)), devices);
    let widths = [
        Constraint::Length(8),
        Constraint::Length(16),
        Constraint::Length(14),
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Length(10),
        Constraint::Length(4),
        Constraint::Length(9),
        Constraint::Length(11),
        Constraint::Length(7),
    ];
    let title = [
        "PID",
        "COMMAND",
        "DEVICE",
        "QUEUE",
        "STATE",
        "RUN",
        "LVL",
        "INFLIGHT",
        "COMMANDS/S",
        "SHARE",
    ];
    let table = Table::new(rows(m).into_iter().map(Row::new), widths)
        .header(Row::new(title).style(Style::default().add_modifier(Modifier::BOLD)))
        .block(Block::default());
    f.render_widget(table, body);
}

fn fetch(c: &mut Client) -> anyhow::Result<(DaemonStatus, ProcessList)> {
    let s = match c.request(&Request::Status)? {
        Reply::Status(s) => s,
        r => bail!("unexpected answer from the daemon: {}", r.name()),
    };
    let l = match c.request(&Request::List { pid: None })? {
        Reply::List(l) => l,
        r => bail!("unexpected answer from the daemon: {}", r.name()),
    };
    Ok((s, l))
}

pub fn run(args: TopArgs, socket: Option<&Path>) -> anyhow::Result<ExitCode> {
    if !(args.interval.is_finite() && (0.05..=60.0).contains(&args.interval)) {
        return Err(super::Exit::usage(
            "--interval must be between 0.05 and 60 seconds",
        ));
    }
    // The live view draws on a terminal and reads keys from it: without one (a pipe, CI, a
    // service) say so instead of failing inside the terminal library.
    if !(std::io::stdout().is_terminal() && std::io::stdin().is_terminal()) {
        bail!(
            "baton top is a live view and needs a terminal (its input or output is not one); \
             for a snapshot of the same figures use `baton list` (or `baton list --json`)"
        );
    }
    let mut client = Client::connect(socket)?;
    let every = Duration::from_secs_f64(args.interval);
    let mut term = ratatui::init();
    let mut m = Model {
        status: None,
        list: ProcessList {
            processes: vec![],
            truncated: false,
            others: vec![],
        },
        sort: Sort::Pid,
        error: None,
    };
    let result = (|| -> anyhow::Result<()> {
        loop {
            match fetch(&mut client) {
                Ok((s, l)) => {
                    m.status = Some(s);
                    m.list = l;
                    m.error = None;
                }
                Err(e) => m.error = Some(format!("{e:#}")),
            }
            term.draw(|f| render(f, &m))?;
            let until = Instant::now() + every;
            while let Some(left) = until.checked_duration_since(Instant::now()) {
                if !event::poll(left)? {
                    break;
                }
                if let Event::Key(k) = event::read()? {
                    if k.kind != KeyEventKind::Press {
                        continue;
                    }
                    match k.code {
                        KeyCode::Char('q') | KeyCode::Esc => return Ok(()),
                        KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                            return Ok(());
                        }
                        KeyCode::Char('s') => m.sort = m.sort.next(),
                        KeyCode::Char('p') => m.sort = Sort::Pid,
                        KeyCode::Char('c') => m.sort = Sort::Command,
                        KeyCode::Char('d') => m.sort = Sort::Share,
                        KeyCode::Char('r') => m.sort = Sort::Rate,
                        _ => continue,
                    }
                    term.draw(|f| render(f, &m))?;
                }
            }
        }
    })();
    ratatui::restore();
    result?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use baton_protocol::{
        Backend, ClientId, DeviceRef, LaunchWindow, ProcessRow, QueueId, QueueRow, WireLevel,
    };
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;

    fn queue(q: u64, suspended: bool, share: f64) -> QueueRow {
        QueueRow {
            queue: QueueId(q),
            label: String::new(),
            device: DeviceRef {
                backend: Backend::Sim,
                id: "sim-0".into(),
                ordinal: 0,
            },
            ready: true,
            suspended,
            since_ns: 0,
            level: WireLevel(1),
            max_level: WireLevel(1),
            launch: LaunchWindow {
                threshold: 16,
                batch: 8,
            },
            in_flight: 3,
            buffered: 0,
            launched: 10,
            completed: 7,
            commands_per_sec: 1234.0,
            device_share: share,
            unbounded: false,
            hold: true,
            remeasure: false,
            leading: false,
            hints: vec![],
        }
    }

    fn process(pid: u32, name: &str, q: QueueRow) -> ProcessRow {
        ProcessRow {
            pid,
            uid: 0,
            client: ClientId(1),
            name: name.into(),
            command: name.into(),
            connected_ns: 0,
            hints: vec![],
            queues: vec![q],
        }
    }

    fn screen(m: &Model) -> Vec<String> {
        let mut t = Terminal::new(TestBackend::new(110, 7)).unwrap();
        t.draw(|f| render(f, m)).unwrap();
        let b = t.backend().buffer().clone();
        (0..7)
            .map(|y| (0..110).map(|x| b[(x, y)].symbol().to_string()).collect())
            .collect()
    }

    #[test]
    fn rows_show_state_and_sort_by_share() {
        let mut m = Model {
            status: None,
            list: ProcessList {
                processes: vec![
                    process(10, "serve", queue(1, false, 20.0)),
                    process(20, "train", queue(1, true, 70.0)),
                ],
                truncated: false,
                others: vec![],
            },
            sort: Sort::Pid,
            error: None,
        };
        let s = screen(&m);
        assert!(
            s[2].contains("sim-0: 2 queues, 1 suspended, 90% busy"),
            "{s:#?}"
        );
        assert!(s[3].contains("PID") && s[3].contains("SHARE"), "{s:#?}");
        assert!(s[4].contains("serve") && s[4].contains("running"), "{s:#?}");
        assert!(s[5].contains("train") && s[5].contains("suspended") && s[5].contains("70.0%"));
        m.sort = Sort::Share;
        let s = screen(&m);
        assert!(s[4].contains("train"), "{s:#?}");
        m.error = Some("no Baton daemon answers".into());
        assert!(screen(&m)[0].contains("no Baton daemon answers"));
    }
}
