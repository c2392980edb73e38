//! What the core shows: process lists, its status, and snapshots for the metrics endpoint.

use baton_core::{Nanos, XQueueId};
use baton_protocol::{
    DaemonStatus, LaunchWindow, MAX_LIST_PROCESSES, MAX_LIST_QUEUES, PROTOCOL_VERSION, ProcessList,
    ProcessRow, QueueId, QueueRow, WireLevel, sanitize_text,
};
use prometheus_client::metrics::histogram::Histogram;

use super::sight::Sight;
use super::{Core, QueueRec, priority};
use crate::service::ServiceHandles;
use crate::trace::Trace;

/// Everything `/metrics` and `/status` show, taken at one moment.
pub(crate) struct Snapshot {
    pub(crate) status: DaemonStatus,
    pub(crate) list: ProcessList,
    /// Every queue, by daemon-wide id.
    pub(crate) queues: Vec<QueueSample>,
    pub(crate) latency: Histogram,
    /// Job and preemption latencies, device time and suspensions, by priority.
    pub(crate) service: ServiceHandles,
    /// The running policy's name and its counters (guard: whether lower work runs free…).
    pub(crate) policy: (&'static str, Vec<(&'static str, u64)>),
    /// Queues stalled now, and stalls since the start (`stall.rs`).
    pub(crate) stalls: (u32, u64),
}

/// One queue as `/metrics` shows it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct QueueSample {
    /// The daemon-wide id: never reused while the daemon runs.
    pub(crate) id: XQueueId,
    pub(crate) pid: u32,
    pub(crate) queue: QueueId,
    pub(crate) device: String,
    /// The priority in force (the queue's, else its process's).
    pub(crate) priority: i32,
    pub(crate) ready: bool,
    pub(crate) suspended: bool,
    pub(crate) in_flight: u32,
    /// Its recent share of its device's time, 0 to 1.
    pub(crate) device_share: f64,
    /// Commands completed per second, recently.
    pub(crate) commands_per_sec: f64,
    pub(crate) counts: QueueCounts,
}

/// What a queue has done since it was created; each only grows.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct QueueCounts {
    pub(crate) launched: u64,
    pub(crate) completed: u64,
    /// Time with a command in flight, as its agent measured it.
    pub(crate) busy_secs: f64,
    pub(crate) suspended_secs: f64,
    pub(crate) suspensions: u64,
}

impl QueueRec {
    fn row(&self, now: Nanos) -> QueueRow {
        let last = self.counters.last.map(|(_, s)| s);
        let attention = self.proxy.attention();
        QueueRow {
            queue: self.queue,
            label: self.label.clone(),
            device: self.device.clone(),
            ready: self.ready,
            suspended: self.suspended,
            since_ns: (now - self.since).0,
            level: WireLevel::from(self.level),
            max_level: WireLevel::from(self.max_level),
            launch: LaunchWindow::from(self.launch),
            in_flight: last.map_or(0, |s| s.in_flight),
            buffered: last.map_or(0, |s| s.buffered),
            launched: last.map_or(0, |s| s.launched),
            completed: last.map_or(0, |s| s.completed),
            commands_per_sec: self.counters.commands_per_sec,
            device_share: self.counters.device_share,
            unbounded: attention.unbounded,
            remeasure: attention.remeasure,
            hold: attention.hold,
            leading: attention.leading,
            hints: self.hints.to_vec(),
        }
    }

    /// Seconds spent suspended so far.
    fn suspended_secs(&self, now: Nanos) -> f64 {
        let open = self.suspended_since.map_or(0, |s| (now - s).0);
        (self.suspended_ns + open) as f64 / 1e9
    }

    /// The queue for `/metrics`.
    fn sample(&self, id: XQueueId, priority: i32, now: Nanos) -> QueueSample {
        let last = self.counters.last.map(|(_, s)| s);
        QueueSample {
            id,
            pid: self.pid,
            queue: self.queue,
            device: self.device.id.clone(),
            priority,
            ready: self.ready,
            suspended: self.suspended,
            in_flight: last.map_or(0, |s| s.in_flight),
            device_share: self.counters.device_share / 100.0,
            commands_per_sec: self.counters.commands_per_sec,
            counts: QueueCounts {
                launched: last.map_or(0, |s| s.launched),
                completed: last.map_or(0, |s| s.completed),
                busy_secs: last.map_or(0.0, |s| Nanos(s.busy_ns).as_secs_f64()),
                suspended_secs: self.suspended_secs(now),
                suspensions: self.suspensions,
            },
        }
    }
}

impl Core {
    /// Every scheduled process `sight` shows (or one of them), by pid, within the list limits;
    /// the others folded per device.
    pub(crate) fn list(&self, only: Option<u32>, sight: &Sight) -> ProcessList {
        let now = self.now();
        let mut clients: Vec<_> = self
            .clients
            .values()
            .filter(|c| only.is_none_or(|p| p == c.peer.pid) && self.sees(sight, c))
            .collect();
        clients.sort_by_key(|c| c.peer.pid);
        let mut processes = Vec::new();
        let mut queues_left = MAX_LIST_QUEUES;
        let mut truncated = false;
        for c in clients {
            if processes.len() == MAX_LIST_PROCESSES || queues_left == 0 {
                truncated = true;
                break;
            }
            let mut rows: Vec<QueueRow> = c
                .queues
                .values()
                .filter_map(|g| self.queues.get(g))
                .map(|r| r.row(now))
                .collect();
            if rows.len() > queues_left {
                rows.truncate(queues_left);
                truncated = true;
            }
            queues_left -= rows.len();
            processes.push(ProcessRow {
                pid: c.peer.pid,
                uid: c.peer.uid,
                client: c.id,
                name: sanitize_text(&c.name, baton_protocol::MAX_NAME_LEN),
                command: c.command.clone(),
                connected_ns: (now - c.connected).0,
                hints: c.hints.to_vec(),
                queues: rows,
            });
        }
        ProcessList {
            processes,
            truncated,
            others: self.others(sight),
        }
    }

    /// The daemon's state.
    pub(crate) fn status(&self) -> DaemonStatus {
        let count = |f: fn(&QueueRec) -> bool| {
            u32::try_from(self.queues.values().filter(|r| f(r)).count()).unwrap_or(u32::MAX)
        };
        let mut devices: Vec<&str> = self.queues.values().map(|r| r.device.id.as_str()).collect();
        devices.sort_unstable();
        devices.dedup();
        let n = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
        DaemonStatus {
            software: self.ident.software.clone(),
            protocol: PROTOCOL_VERSION,
            pid: self.ident.pid,
            policy: self.sched.policy_name().to_string(),
            uptime_ns: (self.now() - self.started).0,
            agents: n(self.clients.len()),
            clis: self.clis,
            processes: n(self.by_pid.len()),
            queues: n(self.queues.len()),
            ready_queues: count(|r| r.ready),
            suspended_queues: count(|r| r.suspended),
            devices: n(devices.len()),
            decisions: self.sched.decisions(),
            decision_latency: self.latencies.summary(),
            operations_sent: self.operations_sent,
            tracing: matches!(self.trace, Trace::Recording(_)),
            socket: sanitize_text(
                &self.ident.socket.to_string_lossy(),
                baton_protocol::MAX_SOCKET_PATH_LEN,
            ),
            metrics: self.ident.metrics.clone(),
        }
    }

    /// A snapshot for the metrics endpoint.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let now = self.now();
        let mut queues: Vec<QueueSample> = self
            .queues
            .iter()
            .map(|(id, r)| r.sample(*id, priority(r, self.clients.get(&r.client)), now))
            .collect();
        queues.sort_unstable_by_key(|q| q.id);
        // The endpoint is the node's (loopback only): it shows every queue, and every
        // process's name and command line only when told to (`--metrics-commands`).
        let mut list = self.list(None, &Sight::All);
        if !self.ident.metrics_commands {
            for p in &mut list.processes {
                p.name.clear();
                p.command.clear();
            }
        }
        Snapshot {
            status: self.status(),
            list,
            queues,
            latency: self.latencies.histogram(),
            service: self.service.handles(),
            policy: (self.sched.policy_name(), self.sched.policy_counters()),
            stalls: (self.stalled_queues(), self.stalls),
        }
    }
}
