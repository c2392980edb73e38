//! Leases: a process that holds others back must keep showing it is alive.
//!
//! A queue's readiness is what its agent last said. A process that is stopped (`SIGSTOP`, a
//! debugger), frozen or hung says nothing more, and its ready queues would hold every lower
//! queue back until it continues or exits. So, while some queue is suspended, every other
//! agent with a ready, running queue is on a lease of `Identity::lease`: silent for half of
//! it, it gets a `Ping` (its client thread answers while the process runs); silent for all of
//! it, its lease **lapses**: its queues leave the scheduler (the policy decides again without
//! them, so the queues they held back run) and those of its own queues that were suspended
//! are resumed (fail-open, as for a dead client). Any message from the agent — the pong
//! included — puts its queues back, with the states it last reported, and the policy decides
//! again.
//!
//! The bound: a queue held back by a process that stops runs again at most one lease after
//! the process last spoke (1 s by default), plus one decision round.

use baton_core::{Nanos, XQueueId};
use baton_protocol::{ClientId, DaemonMessage, DecisionCause, Operations};

use super::Core;

impl Core {
    /// Whether some queue is held back (only then does anyone need a lease).
    pub(super) fn anyone_held(&self) -> bool {
        self.queues.values().any(|q| q.suspended)
    }

    /// The clients on a lease: not lapsed, with a ready queue that runs.
    fn leased(&self) -> impl Iterator<Item = ClientId> + '_ {
        self.clients
            .values()
            .filter(|c| {
                !c.lapsed
                    && c.queues
                        .values()
                        .any(|g| self.queues.get(g).is_some_and(|q| q.ready && !q.suspended))
            })
            .map(|c| c.id)
    }

    /// When the next lease needs looking at, if any does.
    pub(super) fn lease_wake(&self) -> Option<Nanos> {
        let lease = self.ident.lease?;
        if !self.anyone_held() {
            return None;
        }
        self.leased()
            .filter_map(|id| self.clients.get(&id))
            .map(|c| {
                if c.pinged {
                    c.heard + lease
                } else {
                    c.heard + Nanos(lease.0 / 2)
                }
            })
            .min()
    }

    /// Pings the agents silent for half their lease, and lapses those silent for all of it.
    pub(super) fn check_leases(&mut self, now: Nanos) {
        let Some(lease) = self.ident.lease else {
            return;
        };
        if !self.anyone_held() {
            return;
        }
        let leased: Vec<ClientId> = self.leased().collect();
        for id in leased {
            let Some(c) = self.clients.get_mut(&id) else {
                continue;
            };
            let quiet = now.saturating_sub(c.heard);
            if quiet >= lease {
                self.lapse(id, quiet);
            } else if quiet.0 >= lease.0 / 2 && !c.pinged {
                c.pinged = true;
                c.tx.send(DaemonMessage::Ping { nonce: now.0 });
            }
        }
    }

    /// The agent said something at `at`: its lease is renewed, and a lapsed one is back.
    pub(super) fn heard(&mut self, client: ClientId, at: Nanos) {
        let Some(c) = self.clients.get_mut(&client) else {
            return;
        };
        c.heard = c.heard.max(at);
        c.pinged = false;
        if c.lapsed {
            c.lapsed = false;
            self.restore(client, at);
        }
    }

    /// Takes a silent client's queues out of the scheduler and resumes those it suspended.
    fn lapse(&mut self, client: ClientId, quiet: Nanos) {
        let now = self.now();
        let Some(c) = self.clients.get_mut(&client) else {
            return;
        };
        c.lapsed = true;
        let (pid, gids): (u32, Vec<XQueueId>) = (c.peer.pid, c.queues.values().copied().collect());
        tracing::warn!(
            client = client.0,
            pid,
            silent_ms = quiet.0 / 1_000_000,
            "a process holding others back stopped answering (stopped or hung?): its queues no \
             longer hold anyone back until it speaks again"
        );
        self.mark(now, DecisionCause::Client);
        let mut run = Vec::new();
        for gid in gids {
            let _ = self.sched.unregister(gid, now);
            let Some(r) = self.queues.get_mut(&gid) else {
                continue;
            };
            r.proxy.detach();
            if r.suspended {
                r.suspended = false;
                if let Some(s) = r.suspended_since.take() {
                    r.suspended_ns = r.suspended_ns.saturating_add((now - s).0);
                }
                run.push(r.queue);
            }
        }
        // What the unregistering recorded for these queues was dropped with their proxies;
        // their own suspensions end here, as they would for a client that died.
        if !run.is_empty() {
            run.sort_unstable();
            if let Some(c) = self.clients.get_mut(&client) {
                c.next_seq += 1;
                let msg = DaemonMessage::Operations(Operations {
                    seq: c.next_seq,
                    run,
                    suspend: Vec::new(),
                });
                if c.tx.send(msg) {
                    self.operations_sent += 1;
                }
            }
        }
    }

    /// Puts a lapsed client's queues back into the scheduler with their last reported state.
    fn restore(&mut self, client: ClientId, at: Nanos) {
        let Some(c) = self.clients.get(&client) else {
            return;
        };
        tracing::info!(
            client = client.0,
            pid = c.peer.pid,
            "a silent process spoke again: its queues are scheduled again"
        );
        let gids: Vec<XQueueId> = c.queues.values().copied().collect();
        self.mark(at, DecisionCause::Client);
        for gid in gids {
            // A stalled queue stays out until it progresses (`stall.rs`).
            if self.queues.get(&gid).is_some_and(|r| !r.progress.stalled) {
                self.reschedule(gid);
            }
        }
    }
}
