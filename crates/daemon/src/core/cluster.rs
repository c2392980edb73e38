//! The cluster's word in the core (`--kubernetes`): each agent's place (its pod, from its
//! cgroup, read when it connects), the node's pods and their priorities (from the API server's
//! watch), and what follows:
//!
//! - A process in a pod gets its pod's priority when it claims none, and never more than it,
//!   whatever its uid (root in a container is no administrator of the node): its
//!   `BATON_PRIORITY`, C API calls and queue priorities are lowered to it (`cap.rs`).
//! - A process in a pod the daemon has not seen gets Baton's default priority (0) as its ceiling.
//! - Until the daemon has listed its node's pods once, agents in pods are refused and retry
//!   (they run unscheduled meanwhile), so a daemon's restart cannot demote every pod.
//! - From inside a pod, the CLI may read, and change only its own pod's processes, within its
//!   pod's priority; nothing that administers the daemon. From the node, root may do anything
//!   and other users are held to the target pod's priority.

use baton_protocol::{ClientId, Hint, Request, Target};

use super::Core;
use super::cap::cap_hint;
use crate::auth::ROOT;
use crate::cluster::{Place, PodTable, PodUpdate};
use crate::peer::Peer;

/// Why the cluster refuses an agent or a request; the message says what to do.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Refusal(String);

impl Core {
    /// Takes the cluster's priorities from now on.
    pub(crate) fn set_cluster(&mut self, cluster: PodTable) {
        self.cluster = Some(cluster);
    }

    /// A change to the node's pods.
    pub(crate) fn pods_changed(&mut self, update: PodUpdate) {
        if let Some(cl) = self.cluster.as_mut() {
            cl.update(update);
        }
    }

    /// Reads a connecting agent's place; `Err` with the reason while it must wait for the
    /// first list of pods.
    pub(crate) fn cluster_hello(&mut self, client: ClientId, peer: Peer) -> Result<(), Refusal> {
        let Some(cl) = self.cluster.as_mut() else {
            return Ok(());
        };
        let place = cl.place_of(peer.pid);
        if place != Place::Node && !cl.synced {
            return Err(Refusal(
                "the daemon has not listed its node's pods yet; the process runs unscheduled \
                 and connects again shortly"
                    .into(),
            ));
        }
        if let Some((priority, pod)) = cl.pod_priority(&place) {
            tracing::info!(client = client.0, pid = peer.pid, %pod, priority, "agent in a pod");
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

    /// The pod priority of an agent: its default and ceiling; `None` outside pods.
    pub(super) fn pod_cap(&self, client: ClientId) -> Option<i32> {
        let cl = self.cluster.as_ref()?;
        cl.pod_priority(cl.place_of_client(client)?).map(|(p, _)| p)
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
            Request::List { .. }
            | Request::Status
            | Request::GetPolicy
            | Request::TraceRead { .. } => {
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
        if from != Place::Node {
            let Some(pid) = pid else {
                return Err(Refusal(format!(
                    "a process in a pod may not {}: only the node's root may; ask the cluster's \
                     administrators",
                    match req {
                        Request::SetPriority { .. }
                        | Request::Hint { .. }
                        | Request::SetConfig { .. } => "give device-wide or machine-wide settings",
                        _ => "administer the node's Baton daemon",
                    }
                )));
            };
            let same_pod = matches!((&from, target_place), (Place::Pod { uid: a, .. }, Some(Place::Pod { uid: b, .. })) if a == b);
            if !same_pod {
                return Err(Refusal(format!(
                    "process {pid} is not in this pod: from inside a pod only the pod's own \
                     processes may be changed"
                )));
            }
        }
        // The ceiling of the target's pod (the requester's own, from inside a pod).
        if let (Some(h), Some(place)) = (hint, target_place) {
            if let Some((max, pod)) = cl.pod_priority(place) {
                if cap_hint(h, max).1 {
                    return Err(Refusal(format!(
                        "the cluster gave {pod} priority {max}: its processes may not be set \
                         above it (only the node's root may)"
                    )));
                }
            }
        }
        Ok(())
    }
}
