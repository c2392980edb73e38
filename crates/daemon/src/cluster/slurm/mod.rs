//! Priorities from Slurm (`--slurm-steps DIR`): which job step a connecting process belongs
//! to, and what priority Slurm gave that step.
//!
//! The SPANK plugin (`deploy/slurm/spank_baton.c`), in slurmstepd and as root, records each
//! step's priority in `DIR` before the step's tasks run (`record.rs`); the daemon finds a
//! process's step from its cgroup or, without Slurm's cgroup plugins, its ancestry
//! (`steps.rs`, reading `/proc` through `proc.rs`, the cgroup layouts in `step.rs`). The step's
//! priority is then its processes' default and ceiling, root in the job included, as a pod's
//! is (`core/cluster.rs`). The job's environment (`BATON_PRIORITY`) is the job's to change
//! and is never what decides.

#[cfg(test)]
pub(crate) mod fixtures;
mod proc;
mod record;
pub(crate) mod step;
mod steps;

pub(crate) use steps::SlurmSteps;
