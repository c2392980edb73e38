//! The priority cap: a process not run by root cannot claim more than `--max-priority`.
//!
//! Agents are lowered to the cap (the application cannot act on a refusal, and its work
//! should still be scheduled); an operator's request above it is refused
//! (`Core::operator_cap`), saying so. Root is never capped. Identity is the peer's uid from
//! `SO_PEERCRED`, as for every other rule.
//!
//! With `--kubernetes` or `--slurm-steps` a process in a pod or a Slurm job step has a second
//! ceiling, the priority the cluster gave its pod or step (`cluster.rs`), which holds for root
//! too, and which is also its default: such a process that claims no priority gets it.

use baton_protocol::{AgentMessage, ClientId, ErrorKind, Hint, WirePriority};

use super::Core;
use crate::auth::ROOT;
use crate::peer::Peer;

/// `h` with every priority it carries lowered to `max`; whether anything was lowered.
pub(crate) fn cap_hint(h: Hint, max: i32) -> (Hint, bool) {
    let low = |p: WirePriority| WirePriority(p.0.min(max));
    let out = match h {
        Hint::Priority(p) => Hint::Priority(low(p)),
        Hint::Laxity {
            laxity_ns,
            lax_priority,
            critical_priority,
        } => Hint::Laxity {
            laxity_ns,
            lax_priority: low(lax_priority),
            critical_priority: low(critical_priority),
        },
        other => other,
    };
    (out, out != h)
}

impl Core {
    /// The cap that applies to a peer of `uid`, if any.
    fn cap_for(&self, uid: u32) -> Option<i32> {
        self.ident.max_priority.filter(|_| uid != ROOT)
    }

    /// An agent's message with its priorities lowered to the cap.
    pub(super) fn capped(&self, client: ClientId, mut msg: AgentMessage) -> AgentMessage {
        let Some(c) = self.clients.get(&client) else {
            return msg;
        };
        let group = self.cluster_cap(client);
        if let (Some(p), AgentMessage::ProcessStarted(started)) = (group, &mut msg) {
            if !started.hints.iter().any(|h| matches!(h, Hint::Priority(_))) {
                started.hints.push(Hint::Priority(WirePriority(p)));
            }
        }
        let max = match (self.cap_for(c.peer.uid), group) {
            (Some(a), Some(b)) => a.min(b),
            (Some(m), None) | (None, Some(m)) => m,
            (None, None) => return msg,
        };
        let mut lowered = false;
        let mut cap = |h: Hint| {
            let (h, l) = cap_hint(h, max);
            lowered |= l;
            h
        };
        let msg = match msg {
            AgentMessage::ProcessStarted(mut p) => {
                p.hints = p.hints.into_iter().map(&mut cap).collect();
                AgentMessage::ProcessStarted(p)
            }
            AgentMessage::QueueCreated(mut q) => {
                q.hints = q.hints.into_iter().map(&mut cap).collect();
                AgentMessage::QueueCreated(q)
            }
            AgentMessage::Hint { target, hint } => AgentMessage::Hint {
                target,
                hint: cap(hint),
            },
            other => other,
        };
        if lowered {
            tracing::warn!(
                client = client.0,
                pid = c.peer.pid,
                uid = c.peer.uid,
                max,
                cluster_priority = ?group,
                "a process asked for a priority above its cap (--max-priority, or its pod's or \
                 job step's): lowered to it"
            );
        }
        msg
    }

    /// Refuses an operator's hint above the cap, saying why.
    pub(super) fn operator_cap(&self, peer: Peer, hint: Hint) -> Result<(), (ErrorKind, String)> {
        let Some(max) = self.cap_for(peer.uid) else {
            return Ok(());
        };
        if cap_hint(hint, max).1 {
            return Err((
                ErrorKind::Unauthorized,
                format!(
                    "uid {} may not set a priority above {max}, this daemon's cap \
                     (--max-priority); only root may",
                    peer.uid
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_are_lowered_to_the_cap_and_nothing_else_changes() {
        assert_eq!(
            cap_hint(Hint::Priority(WirePriority(50)), 10),
            (Hint::Priority(WirePriority(10)), true)
        );
        assert_eq!(
            cap_hint(Hint::Priority(WirePriority(-5)), 10),
            (Hint::Priority(WirePriority(-5)), false)
        );
        let lax = Hint::Laxity {
            laxity_ns: 7,
            lax_priority: WirePriority(0),
            critical_priority: WirePriority(100),
        };
        assert_eq!(
            cap_hint(lax, 10).0,
            Hint::Laxity {
                laxity_ns: 7,
                lax_priority: WirePriority(0),
                critical_priority: WirePriority(10),
            }
        );
        let other = Hint::Deadline { deadline_ns: 5 };
        assert_eq!(cap_hint(other, 0), (other, false));
    }
}
