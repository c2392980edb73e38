//! Where a process sits, as far as the cluster is concerned: the node itself, a pod
//! (`--kubernetes`) or a Slurm job step (`--slurm-steps`). A pod or a step is a *group*: the
//! cluster gave its processes one priority, and from inside one a process may change only its
//! own group's processes.

use super::pod::PodUid;
use super::slurm::step::StepKey;

/// The container runtime a container's cgroup name shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Runtime {
    Containerd,
    CriO,
    Docker,
    /// A bare 64-digit id (the cgroupfs driver), whichever runtime made it.
    Unnamed,
}

/// A container, as its cgroup names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Container {
    pub(crate) runtime: Runtime,
    pub(crate) id: String,
}

/// Where a process sits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// Not in any pod or job step: a process of the node itself.
    Node,
    /// In this pod (and container, if the path names one).
    Pod {
        uid: PodUid,
        container: Option<Container>,
    },
    /// Under the kubelet's pods, but which pod cannot be told.
    UnknownPod,
    /// In this Slurm job step, to which Slurm gave this priority (its record's, read when the
    /// process connected).
    Step { step: StepKey, priority: i32 },
    /// In a Slurm job step (its cgroup says so) whose priority cannot be told: no trusted,
    /// live record of it.
    UnknownStep,
}

impl Place {
    /// Whether `self` and `other` are the same pod or the same job step. Unknown pods and
    /// steps are the same group as nothing, not even themselves.
    pub(crate) fn same_group(&self, other: &Place) -> bool {
        match (self, other) {
            (Place::Pod { uid: a, .. }, Place::Pod { uid: b, .. }) => a == b,
            (Place::Step { step: a, .. }, Place::Step { step: b, .. }) => a == b,
            _ => false,
        }
    }

    /// What kind of group a process at this place is in, for messages: `None` on the node.
    pub(crate) fn group_kind(&self) -> Option<&'static str> {
        match self {
            Place::Node => None,
            Place::Pod { .. } | Place::UnknownPod => Some("pod"),
            Place::Step { .. } | Place::UnknownStep => Some("job step"),
        }
    }
}
