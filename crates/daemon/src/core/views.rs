//! What the core shows: process lists, its status, and snapshots for the metrics endpoint.

use baton_core::Nanos;
use baton_protocol::{
    DaemonStatus, LaunchWindow, MAX_LIST_PROCESSES, MAX_LIST_QUEUES, PROTOCOL_VERSION, ProcessList,
    ProcessRow, QueueRow, WireLevel, sanitize_text,
};
use prometheus_client::metrics::histogram::Histogram;

use super::{Core, QueueRec};
use crate::trace::Trace;

/// Everything `/metrics` and `/status` show, taken at one moment.
pub(crate) struct Snapshot {
    pub(crate) status: DaemonStatus,
    pub(crate) list: ProcessList,
    /// Per queue: pid, queue id, device, seconds suspended so far.
    pub(crate) suspended_seconds: Vec<(u32, String, String, f64)>,
    pub(crate) latency: Histogram,
    /// The running policy's name and its counters (guard: whether lower work runs free…).
    pub(crate) policy: (&'static str, Vec<(&'static str, u64)>),
}

impl QueueRec {
    fn row(&self, now: Nanos) -> QueueRow {
        let last = self.counters.last.map(|(_, s)| s);
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
            hints: self.hints.to_vec(),
        }
    }

    /// Seconds spent suspended so far.
    fn suspended_secs(&self, now: Nanos) -> f64 {
        let open = self.suspended_since.map_or(0, |s| (now - s).0);
        (self.suspended_ns + open) as f64 / 1e9
    }
}

impl Core {
    /// Every scheduled process (or one), by pid, within the list limits.
    pub(crate) fn list(&self, only: Option<u32>) -> ProcessList {
        let now = self.now();
        let mut clients: Vec<_> = self
            .clients
            .values()
            .filter(|c| only.is_none_or(|p| p == c.peer.pid))
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
        Snapshot {
            status: self.status(),
            list: self.list(None),
            suspended_seconds: self
                .queues
                .values()
                .map(|r| {
                    (
                        r.pid,
                        r.queue.to_string(),
                        r.device.id.clone(),
                        r.suspended_secs(now),
                    )
                })
                .collect(),
            latency: self.latencies.histogram(),
            policy: (self.sched.policy_name(), self.sched.policy_counters()),
        }
    }
}
