//! What the core does with CLI requests. Each is checked against the caller's uid first;
//! a refused or failed request changes nothing.

use baton_core::{Level, Nanos, XQueueId};
use baton_protocol::{
    ClientId, DaemonMessage, DecisionCause, ErrorKind, ErrorReply, Hint, LaunchWindow,
    MAX_TRACE_CAPACITY, PolicyEntry, PolicyParam, PolicyReport, Reply, Request, Target, WireLevel,
};

use super::Core;
use crate::config::GangMode;
use crate::peer::Peer;
use crate::trace::{self, Recorder, Trace, TrackInfo};

fn error(kind: ErrorKind, message: &str) -> Reply {
    Reply::Error(ErrorReply::new(kind, message))
}

impl Core {
    /// Answers one request.
    pub(crate) fn request(&mut self, peer: Peer, req: Request) -> Reply {
        let arrived = self.now();
        if let Some(hidden) = self.hidden_target(peer, &req) {
            return hidden;
        }
        if let Err(why) = self.cluster_gate(peer, &req) {
            return error(ErrorKind::Unauthorized, &why.to_string());
        }
        match req {
            Request::List { pid } => Reply::List(self.list(pid, &self.sight(peer))),
            Request::Status => Reply::Status(self.status()),
            Request::GetPolicy => Reply::Policy(self.policy_report()),
            Request::SetPriority { target, priority } => {
                self.operator_hint(peer, target, Hint::Priority(priority), arrived)
            }
            Request::Hint { target, hint } => self.operator_hint(peer, target, hint, arrived),
            Request::SetPolicy { name, params } => self.set_policy(peer, &name, params, arrived),
            Request::SetConfig {
                target,
                level,
                launch,
            } => self.set_config(peer, &target, level, launch),
            Request::TraceStart { capacity } => self.trace_start(peer, capacity),
            Request::TraceStop => match std::mem::take(&mut self.trace) {
                Trace::Recording(r) => {
                    let (records, dropped) = r.stop(self.now().0);
                    let n = records.len() as u64;
                    self.trace = Trace::Stopped { records };
                    Reply::TraceStopped {
                        records: n,
                        dropped,
                    }
                }
                other => {
                    self.trace = other;
                    error(
                        ErrorKind::Conflict,
                        "no trace is recording: start one with `baton trace`",
                    )
                }
            },
            // A trace names every queue and process: only who may record one may read it.
            Request::TraceRead { .. } if !self.ident.auth.may_administer(peer.uid) => {
                self.unauthorized(peer, "read the daemon's trace")
            }
            Request::TraceRead { cursor } => match &self.trace {
                Trace::Stopped { records, .. } => Reply::Trace(trace::chunk(records, cursor)),
                _ => error(
                    ErrorKind::Conflict,
                    "no stopped trace to read: record one with `baton trace`",
                ),
            },
            Request::Shutdown => {
                if !self.ident.auth.may_administer(peer.uid) {
                    return self.unauthorized(peer, "stop the daemon");
                }
                self.stopping = true;
                Reply::Done
            }
        }
    }

    fn unauthorized(&self, peer: Peer, what: &str) -> Reply {
        error(
            ErrorKind::Unauthorized,
            &format!(
                "uid {} may not {what}: {}; run the command as that user or as root",
                peer.uid,
                self.ident.auth.administrators()
            ),
        )
    }

    /// The client whose process is `pid`, if the caller may change it.
    fn owned_client(&self, peer: Peer, pid: u32) -> Result<ClientId, Box<Reply>> {
        let Some(&c) = self.by_pid.get(&pid) else {
            return Err(Box::new(error(
                ErrorKind::UnknownProcess,
                &format!("no scheduled process has pid {pid}: see `baton list`"),
            )));
        };
        let owner = self.clients[&c].peer.uid;
        if !self.ident.auth.may_change(peer.uid, owner) {
            return Err(Box::new(error(
                ErrorKind::Unauthorized,
                &format!(
                    "uid {} may not change process {pid}, which belongs to uid {owner}: only \
                     root or its owner may; run the command as that user or as root",
                    peer.uid
                ),
            )));
        }
        Ok(c)
    }

    /// The queues a queue or process target names, if the caller may change them.
    fn owned_queues(
        &self,
        peer: Peer,
        target: &Target,
    ) -> Result<(ClientId, Vec<XQueueId>), Box<Reply>> {
        match target {
            Target::Queue(q) => {
                let c = self.owned_client(peer, q.pid)?;
                match self.gid(c, q.queue) {
                    Some(g) => Ok((c, vec![g])),
                    None => Err(Box::new(error(
                        ErrorKind::UnknownQueue,
                        &format!(
                            "process {} has no queue {}: see `baton list`",
                            q.pid, q.queue
                        ),
                    ))),
                }
            }
            Target::Process { pid } => {
                let c = self.owned_client(peer, *pid)?;
                Ok((c, self.clients[&c].queues.values().copied().collect()))
            }
            Target::Device { .. } | Target::All => Err(Box::new(error(
                ErrorKind::InvalidArgument,
                "give a queue (--queue PID:qN) or a process (--pid PID)",
            ))),
        }
    }

    fn operator_hint(&mut self, peer: Peer, target: Target, hint: Hint, at: Nanos) -> Reply {
        if let Err((kind, message)) = self.operator_cap(peer, hint) {
            return error(kind, &message);
        }
        let client = match &target {
            Target::Queue(_) | Target::Process { .. } => match self.owned_queues(peer, &target) {
                Ok((c, _)) => Some(c),
                Err(r) => return *r,
            },
            Target::Device { id } => {
                if !self.ident.auth.may_administer(peer.uid) {
                    return self.unauthorized(peer, "give a device-wide hint");
                }
                if !self.queues.values().any(|q| &q.device.id == id) {
                    return error(
                        ErrorKind::UnknownDevice,
                        &format!("no scheduled queue runs on device {id:?}: see `baton list`"),
                    );
                }
                None
            }
            Target::All => {
                if !self.ident.auth.may_administer(peer.uid) {
                    return self.unauthorized(peer, "give a hint for all devices");
                }
                None
            }
        };
        self.mark(at, DecisionCause::Hint);
        match client {
            Some(c) => self.set_hint(c, &target, hint, true),
            None => self.set_wide_hint(&target, hint),
        }
        Reply::Done
    }

    /// Applies a queue or process hint of `client`. An operator's process hint sets every
    /// queue of the process: it clears the queues' own hints of that kind.
    pub(super) fn set_hint(
        &mut self,
        client: ClientId,
        target: &Target,
        hint: Hint,
        operator: bool,
    ) {
        let now = self.now().0;
        if let Trace::Recording(t) = &mut self.trace {
            t.hint(now, target.clone(), hint);
        }
        let gids: Vec<XQueueId> = match target {
            Target::Queue(q) => {
                let Some(g) = self.gid(client, q.queue) else {
                    return;
                };
                if let Some(r) = self.queues.get_mut(&g) {
                    r.hints.apply(hint);
                }
                vec![g]
            }
            Target::Process { .. } => {
                let Some(c) = self.clients.get_mut(&client) else {
                    return;
                };
                c.hints.apply(hint);
                let gids: Vec<XQueueId> = c.queues.values().copied().collect();
                if operator {
                    for g in &gids {
                        if let Some(r) = self.queues.get_mut(g) {
                            r.hints.clear(hint.kind());
                        }
                    }
                }
                gids
            }
            Target::Device { .. } | Target::All => return,
        };
        let now = self.now();
        if let Some(upcoming) = crate::hints::announced(hint, now) {
            for g in &gids {
                let _ = self
                    .sched
                    .update_hints(*g, |h, _| h.upcoming = upcoming, now);
            }
            return;
        }
        self.refresh(&gids);
    }

    /// Keeps a device-wide or machine-wide hint. A machine-wide k-EDF `k` is the policy's
    /// (`GlobalHint::K`; cleared, the default 1); a device's is kept and listed, but k-EDF
    /// reads one k for every device.
    fn set_wide_hint(&mut self, target: &Target, hint: Hint) {
        let now = self.now().0;
        if let Trace::Recording(t) = &mut self.trace {
            t.hint(now, target.clone(), hint);
        }
        match target {
            Target::Device { id } => self.device_hints.entry(id.clone()).or_default().apply(hint),
            _ => {
                self.all_hints.apply(hint);
                if hint.kind() == baton_protocol::HintKind::KEdf {
                    let k = match self.all_hints.get(baton_protocol::HintKind::KEdf) {
                        Some(Hint::KEdf { k }) => k,
                        _ => 1,
                    };
                    if let Ok(g) = baton_policies::GlobalHint::k(i64::from(k)) {
                        self.set_global_hint(g);
                    }
                }
            }
        }
    }

    fn policy_report(&self) -> PolicyReport {
        PolicyReport {
            current: self.sched.policy_name().to_string(),
            params: self.policy_params.clone(),
            available: baton_policies::catalog()
                .iter()
                .take(baton_protocol::MAX_POLICIES)
                .map(|p| PolicyEntry {
                    name: p.name.to_string(),
                    description: baton_protocol::sanitize_text(
                        p.description,
                        baton_protocol::MAX_MESSAGE_LEN,
                    ),
                })
                .collect(),
        }
    }

    fn set_policy(&mut self, peer: Peer, name: &str, params: Vec<PolicyParam>, at: Nanos) -> Reply {
        if !self.ident.auth.may_administer(peer.uid) {
            return self.unauthorized(peer, "change the policy");
        }
        let mut gang = self.ident.gang;
        for p in &params {
            match (p.key.as_str(), GangMode::parse(&p.value)) {
                ("gang", Some(mode)) => gang = mode,
                _ => {
                    return error(
                        ErrorKind::InvalidArgument,
                        &format!(
                            "unknown policy parameter {}={}: the one parameter is gang, \
                             together or independent",
                            p.key, p.value
                        ),
                    );
                }
            }
        }
        let policy = match gang.policy(name) {
            Ok(p) => p,
            Err(e) => {
                return error(
                    ErrorKind::UnknownPolicy,
                    &format!("{e}; see `baton policy`"),
                );
            }
        };
        self.ident.gang = gang;
        self.mark(at, DecisionCause::Policy);
        tracing::info!(
            policy = policy.name(),
            gang = gang.name(),
            "policy switched"
        );
        self.policy_params = params;
        let now = self.now();
        self.sched.set_policy(policy, now);
        Reply::Done
    }

    fn set_config(
        &mut self,
        peer: Peer,
        target: &Target,
        level: Option<WireLevel>,
        launch: Option<LaunchWindow>,
    ) -> Reply {
        let (client, gids) = match self.owned_queues(peer, target) {
            Ok(x) => x,
            Err(r) => return *r,
        };
        if let Some(l) = level.and_then(|l| Level::try_from(l).ok()) {
            if let Some(r) = gids
                .iter()
                .filter_map(|g| self.queues.get(g))
                .find(|r| l > r.max_level)
            {
                return error(
                    ErrorKind::Unsupported,
                    &format!(
                        "queue {}:{} supports levels up to {}, not {}; choose a lower --level",
                        r.pid,
                        r.queue,
                        r.max_level.number(),
                        l.number()
                    ),
                );
            }
        }
        let c = &self.clients[&client];
        for g in &gids {
            if let Some(r) = self.queues.get(g) {
                c.tx.send(DaemonMessage::Configure {
                    queue: r.queue,
                    level,
                    launch,
                });
            }
        }
        Reply::Done
    }

    fn trace_start(&mut self, peer: Peer, capacity: u32) -> Reply {
        if !self.ident.auth.may_administer(peer.uid) {
            return self.unauthorized(peer, "record a trace");
        }
        if matches!(self.trace, Trace::Recording(_)) {
            return error(
                ErrorKind::Conflict,
                "a trace is already recording; wait for it to finish",
            );
        }
        let capacity = capacity.min(MAX_TRACE_CAPACITY) as usize;
        let now = self.now().0;
        let tracks: Vec<(XQueueId, TrackInfo)> = self
            .queues
            .iter()
            .map(|(g, r)| {
                let process = self
                    .clients
                    .get(&r.client)
                    .map_or_else(|| "?".to_string(), |c| c.name.clone());
                (
                    *g,
                    TrackInfo {
                        pid: r.pid,
                        process,
                        queue: r.queue,
                        device: r.device.id.clone(),
                        label: r.label.clone(),
                        suspended: r.suspended,
                    },
                )
            })
            .collect();
        self.trace = Trace::Recording(Recorder::start(capacity, now, tracks));
        Reply::Done
    }
}
