//! The core: the one task that owns the scheduling state.
//!
//! Connection tasks send it events (`crate::event`); it handles them in arrival order, draining whatever
//! is queued before it ends a **round**: queue events of the round go to the scheduler
//! together (one decision), then every operation the round decided is sent, one
//! [`Operations`] frame per agent naming only the queues whose state changes, agents with
//! queues to suspend first. Decision latency is measured from the arrival of the round's
//! first event to the hand-off of its frames.
//!
//! The core knows no runtime: every time it reads comes from an injected [`Clock`] (the
//! monotonic clock in the daemon, a manual one in tests), and agents are [`AgentLink`]s.
//!
//! State, by owner: `clients` (one per agent connection, by [`ClientId`]; `by_pid` finds a
//! process's current connection), `queues` (every remote queue by its daemon-wide id, with
//! the state last sent to its agent), the `LocalScheduler` over their proxies, hints of the
//! wider scopes, the trace and the counters. Nothing else touches them.

mod agents;
mod cap;
mod cluster;
mod lease;
mod requests;
pub(crate) mod sight;
mod stall;
pub(crate) mod views;

use baton_core::{Clock, LaunchConfig, Level, Nanos, QueueEvent, XQueueId};
use baton_policies::DeviceId;
use baton_protocol::{
    ClientId, DaemonMessage, DecisionCause, DeviceRef, Operations, PolicyParam, QueueId, QueueStats,
};
use baton_scheduler::LocalScheduler;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use crate::auth::Authority;
use crate::hints::{HintSet, effective};
use crate::latency::Latencies;
use crate::peer::Peer;
use crate::proxy::{Outbox, RemoteQueue, Wanted};
use crate::service::ServiceStats;
use crate::trace::Trace;

/// Where a client's outgoing messages go: its connection's writer task, or a test's inbox.
pub(crate) trait AgentLink: Send {
    /// Queues `m` for the agent; false if the connection is gone.
    fn send(&self, m: DaemonMessage) -> bool;
}

/// A client's outgoing link.
pub(crate) type AgentTx = Box<dyn AgentLink>;

/// One agent connection and the process behind it.
pub(crate) struct Client {
    pub(crate) id: ClientId,
    pub(crate) peer: Peer,
    pub(crate) name: String,
    pub(crate) command: String,
    pub(crate) connected: Nanos,
    pub(crate) tx: AgentTx,
    pub(crate) queues: BTreeMap<QueueId, XQueueId>,
    pub(crate) hints: HintSet,
    next_seq: u64,
    /// When the agent last sent anything.
    pub(crate) heard: Nanos,
    /// A ping is out and unanswered.
    pub(crate) pinged: bool,
    /// Its lease lapsed: its queues are out of the scheduler until it speaks again.
    pub(crate) lapsed: bool,
}

/// Counters from an agent's stats, and rates derived from two reports.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counters {
    pub(crate) last: Option<(Nanos, QueueStats)>,
    pub(crate) commands_per_sec: f64,
    pub(crate) device_share: f64,
}

/// What the core knows of a queue's progress (`stall.rs`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Progress {
    /// When it last progressed (or was announced, or became ready).
    pub(crate) at: Nanos,
    /// Stalled: out of the scheduler until it progresses.
    pub(crate) stalled: bool,
}

impl Progress {
    /// A queue announced at `at`.
    pub(crate) fn new(at: Nanos) -> Progress {
        Progress { at, stalled: false }
    }
}

/// One remote queue.
pub(crate) struct QueueRec {
    pub(crate) client: ClientId,
    pub(crate) pid: u32,
    pub(crate) queue: QueueId,
    pub(crate) label: String,
    pub(crate) device: DeviceRef,
    pub(crate) level: Level,
    pub(crate) max_level: Level,
    pub(crate) launch: LaunchConfig,
    pub(crate) ready: bool,
    pub(crate) transition: u64,
    pub(crate) since: Nanos,
    /// Suspended as last sent to the agent.
    pub(crate) suspended: bool,
    /// Time spent suspended before `suspended_since`.
    pub(crate) suspended_ns: u64,
    pub(crate) suspended_since: Option<Nanos>,
    /// How many times it was told to suspend.
    pub(crate) suspensions: u64,
    pub(crate) hints: HintSet,
    pub(crate) counters: Counters,
    pub(crate) proxy: Arc<RemoteQueue>,
    /// When its work last progressed, and whether it is stalled (`stall.rs`).
    pub(crate) progress: Progress,
}

/// The priority in force for `rec`: its own, else its process's (`client`), else the default.
pub(crate) fn priority(rec: &QueueRec, client: Option<&Client>) -> i32 {
    let process = client.map(|c| &c.hints);
    let none = HintSet::default();
    effective(&rec.hints, process.unwrap_or(&none))
        .priority
        .get()
}

/// The daemon's identity, for welcomes and status.
pub(crate) struct Identity {
    pub(crate) pid: u32,
    pub(crate) software: String,
    pub(crate) socket: PathBuf,
    pub(crate) metrics: Option<String>,
    /// Whether the metrics endpoint shows processes' names and command lines.
    pub(crate) metrics_commands: bool,
    pub(crate) stats_interval_ms: u32,
    pub(crate) auth: Authority,
    /// How long a process holding others back may stay silent (`lease`).
    pub(crate) lease: Option<Nanos>,
    /// How long a ready queue's work in flight may make no progress before it stops holding
    /// others back (`stall`).
    pub(crate) stall: Option<Nanos>,
    /// Whether gangs are held back together (`DaemonConfig::gang`; `gang=` on a policy switch).
    pub(crate) gang: crate::config::GangMode,
    /// The highest priority a process not run by root may claim (`DaemonConfig`).
    pub(crate) max_priority: Option<i32>,
}

/// The scheduling state; see the module documentation.
pub(crate) struct Core {
    pub(crate) ident: Identity,
    sched: LocalScheduler,
    policy_params: Vec<PolicyParam>,
    pub(crate) clients: BTreeMap<ClientId, Client>,
    pub(crate) by_pid: HashMap<u32, ClientId>,
    pub(crate) queues: HashMap<XQueueId, QueueRec>,
    next_queue: u64,
    devices: HashMap<String, DeviceId>,
    device_hints: BTreeMap<String, HintSet>,
    all_hints: HintSet,
    outbox: Arc<Outbox>,
    /// Every time the core reads: injected, so tests run it in virtual time.
    clock: Arc<dyn Clock>,
    /// When the core started, for the status's uptime.
    started: Nanos,
    pub(crate) latencies: Latencies,
    /// What `/metrics` shows of the service given: job and preemption latencies and the like.
    pub(crate) service: ServiceStats,
    pub(crate) operations_sent: u64,
    /// Queues found stalled (`stall.rs`), since the start.
    pub(crate) stalls: u64,
    pub(crate) clis: u32,
    pub(crate) trace: Trace,
    /// Queue events of the current round.
    round_events: Vec<QueueEvent>,
    /// The arrival of the round's first scheduling input, and what it was.
    round_start: Option<(Nanos, DecisionCause)>,
    /// Set by a shutdown request.
    pub(crate) stopping: bool,
    /// Since when no agent has been connected.
    pub(crate) idle_since: Option<Nanos>,
    /// The cluster's pods or job steps and their priorities (`--kubernetes`, `--slurm-steps`).
    cluster: Option<crate::cluster::Cluster>,
}

impl Core {
    /// A core running `policy`, reading time from `clock`.
    pub(crate) fn new(
        ident: Identity,
        policy: Box<dyn baton_policies::Policy>,
        clock: Arc<dyn Clock>,
    ) -> Core {
        let now = clock.now();
        Core {
            ident,
            sched: LocalScheduler::new(policy),
            policy_params: Vec::new(),
            clients: BTreeMap::new(),
            by_pid: HashMap::new(),
            queues: HashMap::new(),
            next_queue: 1,
            devices: HashMap::new(),
            device_hints: BTreeMap::new(),
            all_hints: HintSet::default(),
            outbox: Arc::new(Outbox::default()),
            clock,
            started: now,
            latencies: Latencies::new(),
            service: ServiceStats::new(),
            operations_sent: 0,
            stalls: 0,
            clis: 0,
            trace: Trace::Idle,
            round_events: Vec::new(),
            round_start: None,
            stopping: false,
            idle_since: Some(now),
            cluster: None,
        }
    }

    /// The daemon's clock, for the scheduler and traces.
    pub(crate) fn now(&self) -> Nanos {
        self.clock.now()
    }

    /// Puts a scheduler-wide hint in force: the daemon's own settings, a machine-wide k.
    pub(crate) fn set_global_hint(&mut self, hint: baton_policies::GlobalHint) {
        let now = self.now();
        self.sched.set_global_hint(hint, now);
    }

    /// When the core wants to decide again, on its clock: the policy's wake-up or the next
    /// lease check, whichever comes first.
    pub(crate) fn next_wake(&self) -> Option<Nanos> {
        match (self.sched.next_wake(), self.lease_wake()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A CLI connection opened or closed.
    pub(crate) fn cli(&mut self, open: bool) {
        if open {
            self.clis += 1;
        } else {
            self.clis = self.clis.saturating_sub(1);
        }
    }

    /// A scheduling input arrived at `at` (the round's latency counts from the first).
    fn mark(&mut self, at: Nanos, cause: DecisionCause) {
        if self.round_start.is_none() {
            self.round_start = Some((at, cause));
        }
    }

    /// The policy's wake-up time came.
    pub(crate) fn on_timer(&mut self) {
        self.mark(self.now(), DecisionCause::Timer);
        let now = self.now();
        self.check_leases(now);
        self.sched.on_timer(now);
    }

    /// Ends the round: decides on its queue events, then sends what changed.
    pub(crate) fn end_round(&mut self) {
        if !self.round_events.is_empty() {
            let events = std::mem::take(&mut self.round_events);
            let now = self.now();
            self.sched.on_events(events, now);
        }
        let (suspended, resumed) = self.flush();
        if let Some((start, cause)) = self.round_start.take() {
            let latency = self.now() - start;
            self.latencies.record(latency.into());
            if let Trace::Recording(r) = &mut self.trace {
                r.decision(start.0, latency.0, cause, suspended, resumed);
            }
        }
        self.idle_since = match (self.clients.is_empty(), self.idle_since) {
            (false, _) => None,
            (true, None) => Some(self.now()),
            (true, since) => since,
        };
    }

    /// Sends the operations recorded since the last flush; returns how many queues were
    /// suspended and resumed.
    fn flush(&mut self) -> (u32, u32) {
        let wanted = self.outbox.take();
        if wanted.is_empty() {
            return (0, 0);
        }
        let mut last: HashMap<XQueueId, bool> = HashMap::with_capacity(wanted.len());
        let mut attention: BTreeMap<XQueueId, baton_core::Attention> = BTreeMap::new();
        for (q, w) in wanted {
            match w {
                Wanted::Suspended(s) => {
                    last.insert(q, s);
                }
                Wanted::Attention(a) => {
                    attention.insert(q, a);
                }
            }
        }
        let now = self.now();
        let mut per_client: BTreeMap<ClientId, (Vec<QueueId>, Vec<QueueId>)> = BTreeMap::new();
        let (mut suspended, mut resumed) = (0u32, 0u32);
        for (gid, want) in last {
            let Some(rec) = self.queues.get_mut(&gid) else {
                continue;
            };
            if rec.suspended == want {
                continue;
            }
            rec.suspended = want;
            let e = per_client.entry(rec.client).or_default();
            if want {
                rec.suspended_since = Some(now);
                rec.suspensions += 1;
                self.service
                    .suspended(priority(rec, self.clients.get(&rec.client)));
                e.1.push(rec.queue);
                suspended += 1;
            } else {
                if let Some(s) = rec.suspended_since.take() {
                    rec.suspended_ns = rec.suspended_ns.saturating_add((now - s).0);
                }
                e.0.push(rec.queue);
                resumed += 1;
            }
            if let Trace::Recording(r) = &mut self.trace {
                r.span(gid, want, now.0);
            }
        }
        // Suspensions leave first, so a device never runs both sides of a switch at once.
        let mut frames: Vec<(ClientId, Vec<QueueId>, Vec<QueueId>)> = per_client
            .into_iter()
            .map(|(c, (mut run, mut suspend))| {
                run.sort_unstable();
                suspend.sort_unstable();
                (c, run, suspend)
            })
            .collect();
        frames.sort_by_key(|(_, _, suspend)| suspend.is_empty());
        for (c, run, suspend) in frames {
            let Some(client) = self.clients.get_mut(&c) else {
                continue;
            };
            client.next_seq += 1;
            let (seq, suspending) = (client.next_seq, !suspend.is_empty());
            let msg = DaemonMessage::Operations(Operations { seq, run, suspend });
            if client.tx.send(msg) {
                self.operations_sent += 1;
                if suspending {
                    self.service.suspending_frame_sent(c, seq, now);
                }
            }
        }
        for (gid, a) in attention {
            let Some(rec) = self.queues.get(&gid) else {
                continue;
            };
            if let Some(client) = self.clients.get(&rec.client) {
                client.tx.send(DaemonMessage::Attention {
                    queue: rec.queue,
                    report: a.report,
                    unbounded: a.unbounded,
                    watch: a.watch,
                    remeasure: a.remeasure,
                    hold: a.hold,
                    leading: a.leading,
                });
            }
        }
        (suspended, resumed)
    }

    /// The device number the scheduler uses for `id`.
    fn device_number(&mut self, id: &str) -> DeviceId {
        let next = DeviceId(u32::try_from(self.devices.len()).unwrap_or(u32::MAX));
        *self.devices.entry(id.to_string()).or_insert(next)
    }

    /// A fresh daemon-wide queue id.
    fn next_queue_id(&mut self) -> XQueueId {
        let id = XQueueId(self.next_queue);
        self.next_queue += 1;
        id
    }

    /// Tells every agent the daemon stops scheduling it, and forgets them.
    pub(crate) fn release_all(&mut self, why: &str) {
        let ids: Vec<ClientId> = self.clients.keys().copied().collect();
        for c in ids {
            if let Some(client) = self.clients.get(&c) {
                client.tx.send(DaemonMessage::Release {
                    message: why.to_string(),
                });
            }
            self.drop_client(c, "released");
        }
        let _ = self.outbox.take();
    }
}

#[cfg(test)]
mod tests;
