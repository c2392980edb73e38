//! Who sees what through the socket: visibility follows the authority to change.
//!
//! - Root on the node (outside any pod or job step) sees every process, as does the user of a
//!   per-user daemon (its socket lets nobody else in).
//! - A process in a pod or a Slurm job step sees its own group's processes (and root in a pod
//!   is no administrator of the node: it sees no more).
//! - Any other user of a system daemon sees its own processes.
//!
//! Everything else is folded per device into an anonymous aggregate (`OthersRow`: how many
//! processes and queues, their priority range, their share of the device), with no pid, name,
//! command line, user, pod or job. A request that names a process the asker may not see gets
//! the answer an unknown pid gets, so it learns nothing of whether that process exists.

use baton_protocol::{ErrorKind, ErrorReply, OthersRow, Reply, Request, Target};

use super::{Client, Core, priority};
use crate::auth::ROOT;
use crate::cluster::Place;
use crate::peer::Peer;

/// What one asker may see in full.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Sight {
    /// Every process.
    All,
    /// The processes of this user.
    Uid(u32),
    /// The processes of this pod or job step (an unknown pod: none).
    Group(Place),
}

impl Core {
    /// What `peer` may see.
    pub(crate) fn sight(&self, peer: Peer) -> Sight {
        if let Some(cl) = &self.cluster {
            let from = cl.place_of(peer.pid);
            if from.group_kind().is_some() {
                return Sight::Group(from);
            }
        }
        if peer.uid == ROOT || !self.ident.auth.system {
            Sight::All
        } else {
            Sight::Uid(peer.uid)
        }
    }

    /// Whether `sight` shows `client` in full.
    pub(crate) fn sees(&self, sight: &Sight, client: &Client) -> bool {
        match sight {
            Sight::All => true,
            Sight::Uid(uid) => client.peer.uid == *uid,
            Sight::Group(place) => self
                .cluster
                .as_ref()
                .and_then(|cl| cl.place_of_client(client.id))
                .is_some_and(|p| place.same_group(p)),
        }
    }

    /// For a request that names a process: the answer an unknown pid gets when `peer` may not
    /// see it, so that it cannot tell another tenant's process from none.
    pub(crate) fn hidden_target(&self, peer: Peer, req: &Request) -> Option<Reply> {
        let target = match req {
            Request::SetPriority { target, .. }
            | Request::Hint { target, .. }
            | Request::SetConfig { target, .. } => target,
            _ => return None,
        };
        let pid = match target {
            Target::Queue(q) => q.pid,
            Target::Process { pid } => *pid,
            Target::Device { .. } | Target::All => return None,
        };
        let sight = self.sight(peer);
        let seen = self
            .by_pid
            .get(&pid)
            .and_then(|c| self.clients.get(c))
            .is_some_and(|c| self.sees(&sight, c));
        if seen {
            return None;
        }
        Some(Reply::Error(match &sight {
            Sight::Group(place) => {
                let group = place.group_kind().unwrap_or("group");
                ErrorReply::new(
                    ErrorKind::Unauthorized,
                    &format!(
                        "process {pid} is not in this {group}: from inside a {group} only its \
                         own processes may be changed"
                    ),
                )
            }
            _ => ErrorReply::new(
                ErrorKind::UnknownProcess,
                &format!("no scheduled process has pid {pid}: see `baton list`"),
            ),
        }))
    }

    /// The processes `sight` does not show, folded per device.
    pub(crate) fn others(&self, sight: &Sight) -> Vec<OthersRow> {
        let mut rows: Vec<(OthersRow, Vec<u32>)> = Vec::new();
        for c in self.clients.values().filter(|c| !self.sees(sight, c)) {
            for rec in c.queues.values().filter_map(|g| self.queues.get(g)) {
                let p = priority(rec, Some(c));
                let i = match rows.iter().position(|(r, _)| r.device == rec.device.id) {
                    Some(i) => i,
                    None => {
                        rows.push((
                            OthersRow {
                                device: rec.device.id.clone(),
                                processes: 0,
                                queues: 0,
                                ready: 0,
                                suspended: 0,
                                priority_min: p,
                                priority_max: p,
                                device_share: 0.0,
                            },
                            Vec::new(),
                        ));
                        rows.len() - 1
                    }
                };
                let (row, pids) = &mut rows[i];
                if !pids.contains(&c.peer.pid) {
                    pids.push(c.peer.pid);
                    row.processes += 1;
                }
                row.queues += 1;
                row.ready += u32::from(rec.ready);
                row.suspended += u32::from(rec.suspended);
                row.priority_min = row.priority_min.min(p);
                row.priority_max = row.priority_max.max(p);
                row.device_share = (row.device_share + rec.counters.device_share).min(100.0);
            }
        }
        let mut out: Vec<OthersRow> = rows.into_iter().map(|(r, _)| r).collect();
        out.sort_by(|a, b| a.device.cmp(&b.device));
        out.truncate(baton_protocol::MAX_LIST_DEVICES);
        out
    }
}
