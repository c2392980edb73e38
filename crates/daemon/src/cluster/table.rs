//! The node's pods: what the core keeps of the API server's word.

use std::collections::HashMap;
use std::path::PathBuf;

use super::cgroup::place_of;
use super::place::Place;
use super::pod::{PodInfo, PodUid, PodUpdate};
use super::priority::UNKNOWN_POD;

/// The node's pods as the API server said last.
pub(crate) struct PodTable {
    /// Where `cgroup` files are read.
    proc_root: PathBuf,
    pods: HashMap<PodUid, PodInfo>,
    /// Whether the API server was listed at least once.
    pub(crate) synced: bool,
}

impl PodTable {
    /// A table reading processes' cgroups under `proc_root`, with no pods known yet.
    pub(crate) fn new(proc_root: PathBuf) -> PodTable {
        PodTable {
            proc_root,
            pods: HashMap::new(),
            synced: false,
        }
    }

    /// Applies a change from the API server.
    pub(crate) fn update(&mut self, update: PodUpdate) {
        match update {
            PodUpdate::Reset(pods) => {
                self.pods = pods.into_iter().map(|p| (p.uid.clone(), p)).collect();
                self.synced = true;
            }
            PodUpdate::Upsert(p) => {
                self.pods.insert(p.uid.clone(), p);
            }
            PodUpdate::Delete(uid) => {
                self.pods.remove(&uid);
            }
        }
    }

    /// Where process `pid` sits now.
    pub(crate) fn place_of(&self, pid: u32) -> Place {
        place_of(&self.proc_root, pid)
    }

    /// The ceiling of a process at `place`, and its pod's name: `None` outside pods.
    pub(crate) fn pod_priority(&self, place: &Place) -> Option<(i32, String)> {
        match place {
            Place::Node | Place::Step { .. } | Place::UnknownStep => None,
            Place::Pod { uid, .. } => Some(match self.pods.get(uid) {
                Some(p) => (p.priority, p.name.clone()),
                None => (UNKNOWN_POD, format!("unknown pod {uid}")),
            }),
            Place::UnknownPod => Some((UNKNOWN_POD, "an unknown pod".into())),
        }
    }
}
