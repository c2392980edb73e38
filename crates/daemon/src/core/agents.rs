//! What the core does with agents: welcome them, take in their messages, forget them.

use baton_core::{LaunchConfig, Level, Nanos, QueueEvent, QueueState, XQueueId};
use baton_policies::QueueHints;
use baton_protocol::{
    AgentMessage, AgentTarget, ClientId, DaemonMessage, DecisionCause, ErrorKind, ErrorReply,
    Hello, HelloReply, MAX_QUEUES_PER_CLIENT, PROTOCOL_VERSION, ProcessStarted, ProtocolError,
    QueueCreated, QueueId, QueueRef, QueueStats, RefusalReason, Refused, Role, Target, Welcome,
};
use baton_scheduler::QueueMeta;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::{AgentTx, Client, Core, Counters, QueueRec, priority};
use crate::hints::{HintSet, effective};
use crate::peer::Peer;
use crate::proxy::RemoteQueue;
use crate::trace::{Trace, TrackInfo};

/// The most agents one daemon serves at once.
pub(crate) const MAX_CLIENTS: usize = 4096;

impl Core {
    /// Welcomes an agent, or says why not.
    pub(crate) fn agent_hello(
        &mut self,
        id: ClientId,
        peer: Peer,
        hello: &Hello,
        tx: AgentTx,
    ) -> HelloReply {
        debug_assert_eq!(hello.role, Role::Agent);
        let refuse = |r, m: &str| HelloReply::Refused(Refused::new(r, m));
        if self.stopping {
            return refuse(RefusalReason::ShuttingDown, "the daemon is stopping");
        }
        if self.clients.len() >= MAX_CLIENTS {
            return refuse(
                RefusalReason::TooManyClients,
                &format!("the daemon serves {MAX_CLIENTS} processes already; try again later"),
            );
        }
        if peer.pid == 0 {
            return refuse(
                RefusalReason::Unauthorized,
                "the process is in another pid namespace, where the daemon cannot tell who it \
                 is; run a daemon inside that namespace",
            );
        }
        if let Err(m) = self.cluster_hello(id, peer) {
            return refuse(RefusalReason::TooManyClients, &m.to_string());
        }
        // A process reconnecting before its old connection was seen to close replaces it.
        if let Some(old) = self.by_pid.get(&peer.pid).copied() {
            self.drop_client(old, "replaced by a new connection");
        }
        self.clients.insert(
            id,
            Client {
                id,
                peer,
                name: format!("pid {}", peer.pid),
                command: String::new(),
                connected: self.now(),
                tx,
                queues: BTreeMap::new(),
                hints: HintSet::default(),
                next_seq: 0,
                heard: self.now(),
                pinged: false,
                lapsed: false,
            },
        );
        self.by_pid.insert(peer.pid, id);
        tracing::info!(client = id.0, pid = peer.pid, uid = peer.uid, software = %hello.software, "agent connected");
        HelloReply::Welcome(Welcome {
            version: PROTOCOL_VERSION,
            client: id,
            daemon_pid: self.ident.pid,
            software: self.ident.software.clone(),
            policy: self.sched.policy_name().to_string(),
            stats_interval_ms: self.ident.stats_interval_ms,
        })
    }

    /// Tells an agent one of its messages was refused.
    pub(super) fn reject(
        &self,
        client: ClientId,
        queue: Option<QueueId>,
        kind: ErrorKind,
        m: &str,
    ) {
        if let Some(c) = self.clients.get(&client) {
            c.tx.send(DaemonMessage::Rejected {
                queue,
                error: ErrorReply::new(kind, m),
            });
        }
    }

    pub(crate) fn agent_refused(&mut self, client: ClientId, error: &ProtocolError) {
        tracing::warn!(client = client.0, error = %error, "refused an agent frame");
        self.reject(client, None, ErrorKind::InvalidArgument, &error.to_string());
    }

    /// Takes in one agent message.
    pub(crate) fn agent_message(&mut self, client: ClientId, msg: AgentMessage, arrived: Nanos) {
        if !self.clients.contains_key(&client) {
            return;
        }
        self.heard(client, arrived);
        let msg = self.capped(client, msg);
        match msg {
            AgentMessage::ProcessStarted(p) => self.process_started(client, p, arrived),
            AgentMessage::ProcessExiting { exit_code } => {
                tracing::debug!(client = client.0, ?exit_code, "agent exiting");
            }
            AgentMessage::QueueCreated(q) => self.queue_created(client, q, arrived),
            AgentMessage::QueueDestroyed { queue } => match self.gid(client, queue) {
                Some(gid) => {
                    self.mark(arrived, DecisionCause::Queue);
                    self.remove_queue(gid);
                }
                None => self.unknown_queue(client, queue),
            },
            AgentMessage::QueueConfigChanged {
                queue,
                level,
                launch,
            } => match self.gid(client, queue) {
                Some(gid) => {
                    if let Some(r) = self.queues.get_mut(&gid) {
                        r.level = Level::try_from(level).unwrap_or(r.level);
                        r.launch = LaunchConfig::try_from(launch).unwrap_or(r.launch);
                    }
                }
                None => self.unknown_queue(client, queue),
            },
            AgentMessage::QueueState(s) => {
                let Some(gid) = self.gid(client, s.queue) else {
                    return self.unknown_queue(client, s.queue);
                };
                let now_ns = arrived.0;
                let Some(r) = self.queues.get_mut(&gid) else {
                    return;
                };
                if s.transition <= r.transition {
                    return;
                }
                if r.ready && !s.ready {
                    // A job completed: its latency is the readiness period, as the
                    // scheduler counts it.
                    let p = priority(r, self.clients.get(&client));
                    self.service.job(p, arrived.saturating_sub(r.since));
                }
                let became_ready = s.ready && !r.ready;
                r.transition = s.transition;
                r.ready = s.ready;
                r.since = arrived;
                if became_ready && !r.progress.stalled {
                    // Its time without progress counts from now (`stall.rs`).
                    r.progress.at = arrived;
                }
                if let Trace::Recording(t) = &mut self.trace {
                    t.queue_state(r.pid, r.queue, s.ready, now_ns);
                }
                self.round_events.push(QueueEvent {
                    queue: gid,
                    state: if s.ready {
                        QueueState::Ready
                    } else {
                        QueueState::Idle
                    },
                    at: baton_core::Nanos(now_ns),
                    transition: s.transition,
                });
                self.mark(arrived, DecisionCause::QueueState);
            }
            AgentMessage::Hint { target, hint } => {
                let pid = self.clients[&client].peer.pid;
                let target = match target {
                    AgentTarget::Process => Target::Process { pid },
                    AgentTarget::Queue(queue) => {
                        if self.gid(client, queue).is_none() {
                            return self.unknown_queue(client, queue);
                        }
                        Target::Queue(QueueRef { pid, queue })
                    }
                };
                self.mark(arrived, DecisionCause::Hint);
                self.set_hint(client, &target, hint, false);
            }
            AgentMessage::Stats(report) => {
                for s in report.queues {
                    if let Some(gid) = self.gid(client, s.queue) {
                        if let Some(r) = self.queues.get_mut(&gid) {
                            let (busy, done) = progress(&r.counters, &s);
                            let p = priority(r, self.clients.get(&client));
                            self.service.served(p, busy, done);
                            let previous = r.counters.last.map(|(_, l)| l.completed);
                            update_counters(&mut r.counters, s, arrived);
                            self.watch_progress(gid, previous, &s, arrived);
                        }
                    }
                }
            }
            AgentMessage::Applied { seq } => self.service.applied(client, seq, arrived),
            AgentMessage::Pong { .. } => {}
            AgentMessage::ConfigFailed { queue, message } => {
                tracing::warn!(client = client.0, %queue, %message, "an agent could not apply a configuration");
            }
        }
    }

    fn unknown_queue(&self, client: ClientId, queue: QueueId) {
        self.reject(
            client,
            Some(queue),
            ErrorKind::UnknownQueue,
            &format!("{queue} was never announced on this connection (or was destroyed)"),
        );
    }

    /// The daemon-wide id of a client's queue.
    pub(super) fn gid(&self, client: ClientId, queue: QueueId) -> Option<XQueueId> {
        self.clients.get(&client)?.queues.get(&queue).copied()
    }

    fn process_started(&mut self, client: ClientId, p: ProcessStarted, arrived: Nanos) {
        let Some(c) = self.clients.get_mut(&client) else {
            return;
        };
        c.name = p.name;
        c.command = p.argv.join(" ");
        if c.command.len() > baton_protocol::MAX_COMMAND_LINE_LEN {
            c.command =
                baton_protocol::sanitize_text(&c.command, baton_protocol::MAX_COMMAND_LINE_LEN);
        }
        c.hints = HintSet::of(p.hints);
        let gids: Vec<XQueueId> = c.queues.values().copied().collect();
        self.mark(arrived, DecisionCause::Client);
        self.refresh(&gids);
    }

    fn queue_created(&mut self, client: ClientId, q: QueueCreated, arrived: Nanos) {
        let c = &self.clients[&client];
        if c.queues.contains_key(&q.queue) {
            return self.reject(
                client,
                Some(q.queue),
                ErrorKind::InvalidArgument,
                &format!("{} was already announced on this connection", q.queue),
            );
        }
        if c.queues.len() >= MAX_QUEUES_PER_CLIENT {
            return self.reject(
                client,
                Some(q.queue),
                ErrorKind::LimitReached,
                &format!("a process may have at most {MAX_QUEUES_PER_CLIENT} queues scheduled"),
            );
        }
        let (pid, process) = (c.peer.pid, c.name.clone());
        let level = Level::try_from(q.level).unwrap_or(Level::L1);
        let max_level = Level::try_from(q.max_level).unwrap_or(Level::L1);
        let launch = LaunchConfig::try_from(q.launch).unwrap_or_default();
        let gid = self.next_queue_id();
        let device = self.device_number(&q.device.id);
        let proxy = Arc::new(RemoteQueue::new(
            gid,
            q.ready,
            level,
            max_level,
            launch,
            Arc::clone(&self.outbox),
        ));
        let hints = HintSet::of(q.hints);
        let meta = QueueMeta {
            pid,
            device,
            hints: effective(&hints, &self.clients[&client].hints),
        };
        let now_ns = arrived.0;
        if let Trace::Recording(t) = &mut self.trace {
            let info = TrackInfo {
                pid,
                process,
                queue: q.queue,
                device: q.device.id.clone(),
                label: q.label.clone(),
                suspended: false,
            };
            t.queue_added(gid, &info, now_ns);
        }
        self.queues.insert(
            gid,
            QueueRec {
                client,
                pid,
                queue: q.queue,
                label: q.label,
                device: q.device,
                level,
                max_level,
                launch,
                ready: q.ready,
                transition: q.transition,
                since: arrived,
                suspended: false,
                suspended_ns: 0,
                suspended_since: None,
                suspensions: 0,
                hints,
                counters: Counters::default(),
                proxy: Arc::clone(&proxy),
                progress: super::Progress::new(arrived),
            },
        );
        if let Some(c) = self.clients.get_mut(&client) {
            c.queues.insert(q.queue, gid);
        }
        self.mark(arrived, DecisionCause::Queue);
        let now = self.now();
        self.sched.register(proxy, meta, now);
    }

    /// Forgets a queue: nothing more is sent for it, and the policy no longer sees it.
    pub(super) fn remove_queue(&mut self, gid: XQueueId) {
        let Some(r) = self.queues.remove(&gid) else {
            return;
        };
        r.proxy.detach();
        if let Some(c) = self.clients.get_mut(&r.client) {
            c.queues.remove(&r.queue);
        }
        let now = self.now();
        if let Trace::Recording(t) = &mut self.trace {
            t.queue_removed(gid, now.0);
        }
        let _ = self.sched.unregister(gid, now);
    }

    /// Forgets a client and its queues (its connection closed or its process exited).
    pub(crate) fn drop_client(&mut self, client: ClientId, why: &str) {
        let Some(c) = self.clients.get(&client) else {
            return;
        };
        let (pid, gids): (u32, Vec<XQueueId>) = (c.peer.pid, c.queues.values().copied().collect());
        self.mark(self.now(), DecisionCause::Client);
        for gid in gids {
            self.remove_queue(gid);
        }
        self.clients.remove(&client);
        self.service.forget(client);
        self.cluster_forget(client);
        if self.by_pid.get(&pid) == Some(&client) {
            self.by_pid.remove(&pid);
        }
        tracing::info!(
            client = client.0,
            pid,
            why,
            "agent gone; its queues are freed"
        );
    }

    /// Tells the policy the hints now in force for `gids`.
    pub(super) fn refresh(&mut self, gids: &[XQueueId]) {
        let now = self.now();
        for gid in gids {
            let Some(r) = self.queues.get(gid) else {
                continue;
            };
            let Some(c) = self.clients.get(&r.client) else {
                continue;
            };
            let h = effective(&r.hints, &c.hints);
            let _ = self.sched.update_hints(
                *gid,
                |hints, _| {
                    *hints = QueueHints {
                        upcoming: hints.upcoming,
                        slo_target: hints.slo_target,
                        ..h
                    }
                },
                now,
            );
        }
    }
}

/// The busy time and completed commands a report adds to the previous one (all of it for a
/// queue's first report: agents count from the queue's creation).
fn progress(c: &Counters, s: &QueueStats) -> (Nanos, u64) {
    let (busy, done) = c.last.map_or((0, 0), |(_, p)| (p.busy_ns, p.completed));
    (
        Nanos(s.busy_ns.saturating_sub(busy)),
        s.completed.saturating_sub(done),
    )
}

/// Derives rates from the previous report and keeps this one.
fn update_counters(c: &mut Counters, s: QueueStats, at: Nanos) {
    if let Some((t0, prev)) = c.last {
        let dt = at.0.saturating_sub(t0.0) as f64 / 1e9;
        if dt > 0.0 {
            let done = s.completed.saturating_sub(prev.completed) as f64;
            let busy = s.busy_ns.saturating_sub(prev.busy_ns) as f64 / 1e9;
            c.commands_per_sec = (done / dt).min(baton_protocol::MAX_COMMANDS_PER_SEC);
            c.device_share = (100.0 * busy / dt).clamp(0.0, 100.0);
        }
    }
    c.last = Some((at, s));
}
