//! Priorities from the cluster: which pod (`--kubernetes`) or Slurm job step
//! (`--slurm-steps`, in `slurm/`) a connecting process belongs to, and what priority the
//! cluster gave it. `place.rs` says where a process sits, `engine.rs` is what the core keeps
//! whichever the engine.
//!
//! Kubernetes: the chain, each link its own file: the peer's pid (`SO_PEERCRED`) → its cgroup
//! (`cgroup.rs`, `/proc/PID/cgroup` under every cgroup version, driver and runtime) → its pod's
//! UID (`pod.rs`) → the pod's Baton priority (`priority.rs`, the documented table from
//! PriorityClass, the operator's class table and the `baton.dev/priority` annotation), kept
//! current by a node-filtered list and watch of the API server (`watch.rs`, on a thread of its
//! own, feeding the core [`PodUpdate`]s). `settings.rs` is what the daemon is told, `table.rs` what the core keeps of the pods.
//! The core
//! (`core/cluster.rs`) applies it: a pod's priority is its processes' default and ceiling,
//! root inside a pod included, and a process in a pod administers nothing.
//!
//! Nothing here trusts what a process says: the pid comes from the kernel, the cgroup and the
//! ancestry from `/proc`, the priority from the API server or a root-owned record.

mod cgroup;
mod engine;
mod place;
mod pod;
mod priority;
mod settings;
mod slurm;
mod table;
mod watch;

pub(crate) use engine::Cluster;
pub(crate) use place::Place;
pub(crate) use pod::PodUpdate;
#[cfg(test)]
pub(crate) use pod::{PodInfo, PodUid};
pub use settings::{KubernetesConfig, SlurmConfig};
pub(crate) use slurm::SlurmSteps;
#[cfg(test)]
pub(crate) use slurm::fixtures as slurm_fixtures;
pub(crate) use table::PodTable;
pub(crate) use watch::ApiServer;
