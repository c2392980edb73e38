//! `baton list`: scheduled processes and their queues.

use std::path::Path;
use std::process::ExitCode;

use anyhow::bail;
use baton_protocol::{Hint, OthersRow, ProcessList, QueueRow, Reply, Request};
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
    /// One entry per device instead (by UUID: the same GPU whatever ordinal
    /// CUDA_VISIBLE_DEVICES gives it in each process), with its queues.
    #[arg(long)]
    by_device: bool,
    /// Only queues that have had work: launched or hold back a command, or are ready
    /// (PyTorch registers pools of streams it never uses, dozens a process).
    #[arg(long)]
    used: bool,
}

pub fn run(args: ListArgs, socket: Option<&Path>) -> anyhow::Result<ExitCode> {
    let mut c = Client::connect(socket)?;
    let mut list = match c.request(&Request::List { pid: args.pid })? {
        Reply::List(l) => l,
        r => bail!("unexpected answer from the daemon: {}", r.name()),
    };
    if args.used {
        keep_used(&mut list);
    }
    match (args.json, args.by_device) {
        (true, false) => println!("{}", serde_json::to_string_pretty(&list)?),
        (true, true) => println!("{}", serde_json::to_string_pretty(&by_device(&list))?),
        // As `kubectl get` does: a table with no rows says so, on standard error.
        (false, _) if list.processes.is_empty() && list.others.is_empty() => {
            eprintln!("no program is scheduled on this daemon (start one with `baton run`)");
        }
        (false, false) => print!("{}", table(&list)),
        (false, true) => print!("{}", device_table(&list)),
    }
    Ok(ExitCode::SUCCESS)
}

/// Drops every queue that never had work (nothing launched or held back, not ready); each
/// process stays listed.
pub fn keep_used(list: &mut ProcessList) {
    for p in &mut list.processes {
        p.queues
            .retain(|q| q.launched > 0 || q.buffered > 0 || q.ready);
    }
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
            Hint::Gang { id } => format!("gang={id:016x}"),
            Hint::Isolated { sms } => format!("isolated={sms}sms"),
            Hint::Yielding { slice_ns } => format!("yielding={}us", slice_ns / 1000),
            Hint::Confining { sms } => format!("confining={sms}sms"),
            Hint::ConfinedHeld { sms } => format!("confined-held={sms}sms"),
            Hint::CommandTime { command_ns } => format!("command={}us", command_ns / 1000),
            Hint::Readiness {
                ready_permille,
                waiting_permille,
            } => format!("ready={ready_permille}‰ waiting={waiting_permille}‰"),
            Hint::TimeSliced => "time-sliced".to_string(),
            Hint::SharedContext => "shared-context".to_string(),
            Hint::Clear(k) => format!("clear {k}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// How a queue launches: `kept` (its in-flight window and sync points, its work in flight
/// bounded by device time too, as any queue a decision may hold back), `count` (the window
/// by count alone: suspendable, but not held back, as a job that yields by its time slice
/// beside a program bound by its launching), `off` (without them: nothing can suspend it
/// now), `lead` (off, and it leads its device: it outranks other work there, which gives the
/// GPU up to it), or `measured` (off only because its commands were measured short, so it
/// keeps the window now and then to be measured again).
fn window_text(q: &QueueRow) -> &'static str {
    match (q.unbounded, q.remeasure, q.hold) {
        (false, _, true) => "kept",
        (false, _, false) => "count",
        (true, false, _) if q.leading => "lead",
        (true, false, _) => "off",
        (true, true, _) => "measured",
    }
}

/// The list as a table, one line per queue.
pub fn table(list: &ProcessList) -> String {
    let mut out = format!(
        "{:>8}  {:<16} {:<8} {:<14} {:<6} {:<10} {:>3} {:<8} {:>8} {:>10}  {}\n",
        "PID",
        "COMMAND",
        "QUEUE",
        "DEVICE",
        "STATE",
        "RUN",
        "LVL",
        "WINDOW",
        "INFLIGHT",
        "LAUNCHED",
        "HINTS"
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
                "{:>8}  {:<16} {:<8} {:<14} {:<6} {:<10} {:>3} {:<8} {:>8} {:>10}  {}\n",
                p.pid,
                short(&p.name, 16),
                q.queue.to_string(),
                short(&q.device.id, 14),
                if q.ready { "ready" } else { "idle" },
                if q.suspended { "suspended" } else { "running" },
                q.level.0,
                window_text(q),
                q.in_flight,
                q.launched,
                hints.trim()
            ));
        }
    }
    for o in &list.others {
        out.push_str(&format!("{:>8}  {}\n", "-", others_text(o)));
    }
    if list.truncated {
        out.push_str("(list truncated: ask for one process with --pid)\n");
    }
    out
}

/// Processes this user may not see, on one device, in words.
pub fn others_text(o: &OthersRow) -> String {
    let priorities = if o.priority_min == o.priority_max {
        format!("priority {}", o.priority_min)
    } else {
        format!("priorities {}..{}", o.priority_min, o.priority_max)
    };
    format!(
        "{} other process{} on {}: {} queue{} ({} ready, {} suspended), {priorities}, {:.0} % of the device",
        o.processes,
        if o.processes == 1 { "" } else { "es" },
        short(&o.device, 14),
        o.queues,
        if o.queues == 1 { "" } else { "s" },
        o.ready,
        o.suspended,
        o.device_share
    )
}

/// `baton list --by-device --json`: each device and the queues on it.
#[derive(Debug, serde::Serialize)]
pub struct DeviceList {
    /// `baton.devices/2`.
    pub schema: &'static str,
    /// Every device with a queue, by UUID.
    pub devices: Vec<DeviceEntry>,
    /// Whether the daemon's list was cut to its limits.
    pub truncated: bool,
}

/// One device in a [`DeviceList`].
#[derive(Debug, serde::Serialize)]
pub struct DeviceEntry {
    /// Its id: the GPU's (or MIG instance's) UUID, as the driver reports it.
    pub id: String,
    /// Processes with a queue on it.
    pub processes: Vec<u32>,
    /// Its queues.
    pub queues: Vec<DeviceQueue>,
    /// What this user may not see on it: other tenants' processes, folded.
    pub others: Option<OthersRow>,
}

/// One queue in a [`DeviceEntry`].
#[derive(Debug, serde::Serialize)]
pub struct DeviceQueue {
    /// Its process.
    pub pid: u32,
    /// The process's name.
    pub name: String,
    /// Its id in the process.
    pub queue: u64,
    /// The device's ordinal in that process (after `CUDA_VISIBLE_DEVICES`).
    pub ordinal: u32,
    /// Whether it has work.
    pub ready: bool,
    /// Whether it is held back.
    pub suspended: bool,
    /// The process's gang, if it declared one.
    pub gang: Option<String>,
}

/// The list regrouped by device.
pub fn by_device(list: &ProcessList) -> DeviceList {
    let mut devices: Vec<DeviceEntry> = Vec::new();
    for p in &list.processes {
        let gang = p.hints.iter().find_map(|h| match h {
            Hint::Gang { id } => Some(format!("{id:016x}")),
            _ => None,
        });
        for q in &p.queues {
            let i = match devices.iter().position(|d| d.id == q.device.id) {
                Some(i) => i,
                None => {
                    devices.push(DeviceEntry {
                        id: q.device.id.clone(),
                        processes: Vec::new(),
                        queues: Vec::new(),
                        others: None,
                    });
                    devices.len() - 1
                }
            };
            let d = &mut devices[i];
            if !d.processes.contains(&p.pid) {
                d.processes.push(p.pid);
            }
            d.queues.push(DeviceQueue {
                pid: p.pid,
                name: p.name.clone(),
                queue: q.queue.0,
                ordinal: q.device.ordinal,
                ready: q.ready,
                suspended: q.suspended,
                gang: gang.clone(),
            });
        }
    }
    for o in &list.others {
        match devices.iter_mut().find(|d| d.id == o.device) {
            Some(d) => d.others = Some(o.clone()),
            None => devices.push(DeviceEntry {
                id: o.device.clone(),
                processes: Vec::new(),
                queues: Vec::new(),
                others: Some(o.clone()),
            }),
        }
    }
    devices.sort_by(|a, b| a.id.cmp(&b.id));
    DeviceList {
        schema: "baton.devices/2",
        devices,
        truncated: list.truncated,
    }
}

/// The list by device: a heading per device, then its queues.
pub fn device_table(list: &ProcessList) -> String {
    let mut out = String::new();
    let doc = by_device(list);
    for d in &doc.devices {
        let count = |f: fn(&DeviceQueue) -> bool| d.queues.iter().filter(|q| f(q)).count();
        out.push_str(&format!(
            "{}  {} processes, {} queues ({} ready, {} suspended)\n",
            d.id,
            d.processes.len(),
            d.queues.len(),
            count(|q| q.ready),
            count(|q| q.suspended)
        ));
        if let Some(o) = &d.others {
            out.push_str(&format!("  {}\n", others_text(o)));
        }
        for q in &d.queues {
            out.push_str(&format!(
                "  {:>8}  {:<16} {:<8} ordinal {:<3} {:<6} {:<10} {}\n",
                q.pid,
                short(&q.name, 16),
                q.queue,
                q.ordinal,
                if q.ready { "ready" } else { "idle" },
                if q.suspended { "suspended" } else { "running" },
                q.gang
                    .as_deref()
                    .map(|g| format!("gang={g}"))
                    .unwrap_or_default()
            ));
        }
    }
    if doc.truncated {
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

#[cfg(test)]
mod tests {
    use baton_protocol::{
        Backend, ClientId, DeviceRef, LaunchWindow, ProcessRow, QueueId, QueueRow, WireLevel,
    };

    use super::*;

    fn queue(q: u64, uuid: &str, ordinal: u32, suspended: bool) -> QueueRow {
        QueueRow {
            queue: QueueId(q),
            label: String::new(),
            device: DeviceRef {
                backend: Backend::Cuda,
                id: uuid.into(),
                ordinal,
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
            in_flight: 0,
            buffered: 0,
            launched: 0,
            completed: 0,
            commands_per_sec: 0.0,
            device_share: 0.0,
            unbounded: false,
            remeasure: false,
            hold: true,
            leading: false,
            hints: vec![],
        }
    }

    fn process(pid: u32, hints: Vec<Hint>, queues: Vec<QueueRow>) -> ProcessRow {
        ProcessRow {
            pid,
            uid: 0,
            client: ClientId(u64::from(pid)),
            name: format!("p{pid}"),
            command: String::new(),
            connected_ns: 0,
            hints,
            queues,
        }
    }

    /// One GPU seen as ordinal 0 by one process and ordinal 1 by another is one device; a
    /// process on two GPUs appears under both.
    #[test]
    fn queues_are_grouped_by_device_uuid_whatever_their_ordinal() {
        let (a, b) = ("GPU-00ba704e-0000", "GPU-01ba704e-0000");
        let list = ProcessList {
            processes: vec![
                process(10, vec![], vec![queue(1, b, 0, false)]),
                process(
                    20,
                    vec![Hint::Gang { id: 0xab }],
                    vec![queue(1, a, 0, true), queue(2, b, 1, true)],
                ),
            ],
            truncated: false,
            others: vec![],
        };
        let doc = by_device(&list);
        assert_eq!(doc.schema, "baton.devices/2");
        let ids: Vec<&str> = doc.devices.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, [a, b]);
        assert_eq!(doc.devices[1].processes, [10, 20]);
        let ordinals: Vec<u32> = doc.devices[1].queues.iter().map(|q| q.ordinal).collect();
        assert_eq!(ordinals, [0, 1]);
        assert_eq!(
            doc.devices[0].queues[0].gang.as_deref(),
            Some("00000000000000ab")
        );
        let t = device_table(&list);
        assert!(
            t.contains("GPU-01ba704e-0000  2 processes, 2 queues (2 ready, 1 suspended)"),
            "{t}"
        );
        assert!(t.contains("gang=00000000000000ab"), "{t}");
    }

    #[test]
    fn used_keeps_the_queues_that_had_work_and_every_process() {
        let uuid = "GPU-00ba704e-0000";
        let mut idle = queue(1, uuid, 0, false);
        idle.ready = false;
        let mut launched = idle.clone();
        launched.queue = QueueId(2);
        launched.launched = 12;
        let mut buffered = idle.clone();
        buffered.queue = QueueId(3);
        buffered.buffered = 1;
        let ready = queue(4, uuid, 0, true);
        let mut list = ProcessList {
            processes: vec![
                process(10, vec![], vec![idle.clone(), launched, buffered, ready]),
                process(20, vec![], vec![idle]),
            ],
            truncated: false,
            others: vec![],
        };
        keep_used(&mut list);
        let kept: Vec<u64> = list.processes[0].queues.iter().map(|q| q.queue.0).collect();
        assert_eq!(kept, [2, 3, 4]);
        assert_eq!(list.processes.len(), 2);
        assert!(list.processes[1].queues.is_empty());
    }

    #[test]
    fn the_table_says_how_each_queue_launches() {
        let uuid = "GPU-00ba704e-0000";
        let mut spared = queue(2, uuid, 0, false);
        (spared.unbounded, spared.remeasure) = (true, true);
        let mut free = queue(3, uuid, 0, false);
        free.unbounded = true;
        let mut yielding = queue(4, uuid, 0, true);
        yielding.hold = false;
        let mut service = queue(5, uuid, 0, true);
        (service.unbounded, service.leading) = (true, true);
        let list = ProcessList {
            processes: vec![process(
                10,
                vec![],
                vec![queue(1, uuid, 0, true), spared, free, yielding, service],
            )],
            truncated: false,
            others: vec![],
        };
        let t = table(&list);
        let header = t.lines().next().unwrap();
        // In characters: the device column shortens with a multi-byte ellipsis.
        let at = header[..header.find("WINDOW").expect("a WINDOW column")]
            .chars()
            .count();
        let column: Vec<String> = t
            .lines()
            .skip(1)
            .map(|l| l.chars().skip(at).take_while(|c| *c != ' ').collect())
            .collect();
        assert_eq!(column, ["kept", "measured", "off", "count", "lead"], "{t}");
    }

    #[test]
    fn other_tenants_processes_show_as_one_line_per_device() {
        let (a, b) = ("GPU-00ba704e-0000", "GPU-01ba704e-0000");
        let others = |device: &str| OthersRow {
            device: device.into(),
            processes: 2,
            queues: 3,
            ready: 1,
            suspended: 2,
            priority_min: 0,
            priority_max: 10,
            device_share: 61.5,
        };
        let list = ProcessList {
            processes: vec![process(10, vec![], vec![queue(1, a, 0, true)])],
            truncated: false,
            others: vec![others(a), others(b)],
        };
        let t = table(&list);
        let want = "2 other processes on GPU-00ba704e-…: 3 queues (1 ready, 2 suspended), \
                    priorities 0..10, 62 % of the device";
        assert!(t.contains(want), "{t}");
        // A device only others use is listed by device too.
        let doc = by_device(&list);
        assert_eq!(doc.devices.len(), 2);
        assert!(doc.devices[1].queues.is_empty() && doc.devices[1].others.is_some());
        let json = serde_json::to_value(&doc).unwrap();
        assert_eq!(json["devices"][0]["others"]["processes"], 2);
        assert!(device_table(&list).contains("  2 other processes on GPU-01ba704e-…"));
    }
}
