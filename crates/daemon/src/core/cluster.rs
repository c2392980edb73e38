//! The cluster's word in the core (`--kubernetes`, `--slurm-steps`): each agent's place (its
//! pod or Slurm job step, read when it connects), the priorities the cluster gave (the node's
//! pods from the API server's watch, a step's from its record), and what follows; a pod and a
//! job step are alike here, both a *group*:
//!
//! - A process in a group gets its group's priority when it claims none, and never more than
//!   it, whatever its uid (root in a container is no administrator of the node; root in a job
//!   is held to what Slurm gave the job): its `BATON_PRIORITY`, C API calls and queue
//!   priorities are lowered to it (`cap.rs`).
//! - A process in a pod the daemon has not seen, or in a job step without a trusted record,
//!   gets Baton's default priority (0) as its ceiling.
//! - Until the daemon has listed its node's pods once, agents in pods are refused and retry
//!   (they run unscheduled meanwhile), so a daemon's restart cannot demote every pod.
//! - From inside a group, the CLI sees and changes only its own group's processes (the others
//!   as anonymous aggregates: `sight.rs`), within its group's priority; nothing that
//!   administers the daemon, a trace included. From the node, root may do anything and other
//!   users are held to the target group's priority.

use baton_protocol::{ClientId, Hint, Request, Target};

use super::Core;
use super::cap::cap_hint;
use crate::auth::ROOT;
use crate::cluster::{Cluster, Place, PodUpdate};
use crate::peer::Peer;

/// Why the cluster refuses an agent or a request; the message says what to do.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Refusal(String);

impl Core {
    /// Takes the cluster's priorities from now on.
    pub(crate) fn set_cluster(&mut self, cluster: Cluster) {
        self.cluster = Some(cluster);
    }

    /// A change to the node's pods.
    pub(crate) fn pods_changed(&mut self, update: PodUpdate) {
        if let Some(cl) = self.cluster.as_mut() {
            cl.pods_changed(update);
        }
    }

    /// Reads a connecting agent's place; `Err` with the reason while it must wait for the
    /// first list of pods.
    pub(crate) fn cluster_hello(&mut self, client: ClientId, peer: Peer) -> Result<(), Refusal> {
        let Some(cl) = self.cluster.as_mut() else {
            return Ok(());
        };
        let place = cl.place_of(peer.pid);
        if cl.must_wait(&place) {
            return Err(Refusal(
                "the daemon has not listed its node's pods yet; the process runs unscheduled \
                 and connects again shortly"
                    .into(),
            ));
        }
        if let Some((priority, group)) = cl.ceiling(&place) {
            tracing::info!(client = client.0, pid = peer.pid, %group, priority, "agent in a {}",
                place.group_kind().unwrap_or("group"));
        }
        cl.enter(client, place);
        Ok(())
    }

    /// Forgets an agent's place.
    pub(crate) fn cluster_forget(&mut self, client: ClientId) {
        if let Some(cl) = self.cluster.as_mut() {
            cl.forget(client);
        }
    }

    /// The priority the cluster gave an agent's pod or job step: its default and ceiling;
    /// `None` outside them.
    pub(super) fn cluster_cap(&self, client: ClientId) -> Option<i32> {
        let cl = self.cluster.as_ref()?;
        cl.ceiling(cl.place_of_client(client)?).map(|(p, _)| p)
    }

    /// The place of a peer (a CLI), and of the process a target names.
    fn place_of_peer(&self, pid: u32) -> Option<Place> {
        self.cluster.as_ref().map(|cl| cl.place_of(pid))
    }

    /// What the cluster says of a CLI request: `Err` with the reason it is refused (as
    /// unauthorized), `Ok` to go on to the usual rules.
    pub(super) fn cluster_gate(&self, peer: Peer, req: &Request) -> Result<(), Refusal> {
        let Some(cl) = self.cluster.as_ref() else {
            return Ok(());
        };
        let (target, hint) = match req {
            // What anyone may read; each reader sees its own group's processes (`sight.rs`).
            Request::List { .. } | Request::Status | Request::GetPolicy => {
                return Ok(());
            }
            Request::SetPriority { target, priority } => (target, Some(Hint::Priority(*priority))),
            Request::Hint { target, hint } => (target, Some(*hint)),
            Request::SetConfig { target, .. } => (target, None),
            _ => (&Target::All, None),
        };
        let from = self.place_of_peer(peer.pid).unwrap_or(Place::UnknownPod);
        if from == Place::Node && peer.uid == ROOT {
            return Ok(());
        }
        let pid = match target {
            Target::Queue(q) => Some(q.pid),
            Target::Process { pid } => Some(*pid),
            Target::Device { .. } | Target::All => None,
        };
        let target_place = pid
            .and_then(|pid| self.by_pid.get(&pid))
            .and_then(|c| cl.place_of_client(*c));
        if let Some(group) = from.group_kind() {
            let Some(pid) = pid else {
                return Err(Refusal(format!(
                    "a process in a {group} may not {}: only the node's root may; ask the \
                     cluster's administrators",
                    match req {
                        Request::SetPriority { .. }
                        | Request::Hint { .. }
                        | Request::SetConfig { .. } => "give device-wide or machine-wide settings",
                        _ => "administer the node's Baton daemon",
                    }
                )));
            };
            if !target_place.is_some_and(|t| from.same_group(t)) {
                return Err(Refusal(format!(
                    "process {pid} is not in this {group}: from inside a {group} only its own \
                     processes may be changed"
                )));
            }
        }
        // The ceiling of the target's group (the requester's own, from inside one).
        if let (Some(h), Some(place)) = (hint, target_place) {
            if let Some((max, group)) = cl.ceiling(place) {
                if cap_hint(h, max).1 {
                    return Err(Refusal(format!(
                        "the cluster gave {group} priority {max}: its processes may not be set \
                         above it (only the node's root may)"
                    )));
                }
            }
        }
        Ok(())
    }
}
