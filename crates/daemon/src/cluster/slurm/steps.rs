//! From a process to the priority Slurm gave its job step.
//!
//! 1. Its cgroup (`step.rs`): where Slurm's cgroup plugins are in use, a process sits in its
//!    step's cgroup and cannot leave it. The step's record must be trusted and live, and the
//!    record's slurmstepd must sit in that same cgroup (or below it): a cgroup a user made
//!    and named alike elsewhere is not the step's.
//! 2. Otherwise its ancestry (`/proc/PID/stat`, parent by parent): the step whose recorded
//!    slurmstepd (pid *and* start time) is the process or one of its ancestors. This is all
//!    there is without cgroups, and it has a limit: a process that leaves the tree (a double
//!    fork whose middle process exits, so it is re-parented to init) is no longer seen as the
//!    step's and, when its cgroup names no step either, is treated as the node's own.
//! 3. A process whose cgroup names a Slurm step that neither way resolves gets
//!    Baton's default priority, 0, as its ceiling: its step is unrecorded (the plugin
//!    is not loaded for it) or its record is not trusted.
//!
//! Records are read when a process connects; nothing is cached, so a step's record that is
//! removed or replaced applies to processes that connect afterwards.

use std::path::PathBuf;

use super::proc::{cgroup_of, stat_of};
use super::record::{self, RecordError, StepRecord};
use super::step::{CgroupStep, StepKey, step_in, within};
use crate::cluster::place::Place;

/// How many ancestors are looked at, at most (a guard against a loop in a damaged tree).
const MAX_DEPTH: usize = 256;

/// The daemon's view of the step records (`--slurm-steps`).
pub(crate) struct SlurmSteps {
    /// The records' directory.
    dir: PathBuf,
    /// Where processes are read (`/proc`; a fixture in tests).
    proc_root: PathBuf,
    /// Who may own records besides root: the daemon's own user.
    daemon_uid: u32,
}

impl SlurmSteps {
    pub(crate) fn new(dir: PathBuf, proc_root: PathBuf, daemon_uid: u32) -> SlurmSteps {
        SlurmSteps {
            dir,
            proc_root,
            daemon_uid,
        }
    }

    /// Where process `pid` sits: in a step (with the priority Slurm gave it), in an unknown
    /// step, or on the node.
    pub(crate) fn place_of(&self, pid: u32) -> Place {
        let in_cgroup = match cgroup_of(&self.proc_root, pid) {
            Ok(text) => step_in(&text),
            Err(e) => {
                tracing::warn!(pid, error = %e, "cannot read the process's cgroup");
                CgroupStep::Unclear
            }
        };
        if let CgroupStep::Step { key, paths } = &in_cgroup {
            if let Some(r) = self.live_record(key) {
                let stepd_there =
                    cgroup_of(&self.proc_root, r.stepd_pid).is_ok_and(|text| within(&text, paths));
                if stepd_there {
                    return place(r);
                }
                tracing::warn!(pid, step = %key, stepd = r.stepd_pid,
                    "the process's cgroup names a step whose slurmstepd is not in it");
            }
        }
        if let Some(r) = self.by_ancestry(pid) {
            return place(r);
        }
        match in_cgroup {
            CgroupStep::None => Place::Node,
            CgroupStep::Step { .. } | CgroupStep::Unclear => {
                tracing::warn!(
                    pid,
                    "a process in a Slurm job step without a trusted record"
                );
                Place::UnknownStep
            }
        }
    }

    /// Whether the records' directory is trusted; says why not in the log.
    fn dir_trusted(&self) -> bool {
        match record::check_dir(&self.dir, self.daemon_uid) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), error = %e,
                    "the Slurm step records' directory is not trusted: no record is read");
                false
            }
        }
    }

    /// The record of `key`, if it is trusted and its slurmstepd lives.
    fn live_record(&self, key: &StepKey) -> Option<StepRecord> {
        if !self.dir_trusted() {
            return None;
        }
        match record::read(&self.dir, key, self.daemon_uid) {
            Ok(r) if self.lives(&r) => Some(r),
            Ok(r) => {
                tracing::debug!(step = %key, stepd = r.stepd_pid, "a stale record: its slurmstepd is gone");
                None
            }
            Err(RecordError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                tracing::warn!(step = %key, error = %e, "a Slurm step record is not trusted");
                None
            }
        }
    }

    /// Whether the slurmstepd `r` names is still that process.
    fn lives(&self, r: &StepRecord) -> bool {
        stat_of(&self.proc_root, r.stepd_pid).is_some_and(|s| s.start == r.stepd_start)
    }

    /// The step whose slurmstepd is `pid` or one of its ancestors.
    fn by_ancestry(&self, pid: u32) -> Option<StepRecord> {
        if !self.dir_trusted() {
            return None;
        }
        let keys = match record::steps_in(&self.dir) {
            Ok(k) => k,
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), error = %e, "cannot list the Slurm step records");
                return None;
            }
        };
        let records: Vec<StepRecord> = keys.iter().filter_map(|k| self.live_record(k)).collect();
        if records.is_empty() {
            return None;
        }
        let mut p = pid;
        for _ in 0..MAX_DEPTH {
            let stat = stat_of(&self.proc_root, p)?;
            if let Some(r) = records
                .iter()
                .find(|r| r.stepd_pid == p && r.stepd_start == stat.start)
            {
                return Some(r.clone());
            }
            if stat.ppid == 0 || p == 1 {
                return None;
            }
            p = stat.ppid;
        }
        None
    }
}

/// The place of a process in the step `r` records.
fn place(r: StepRecord) -> Place {
    Place::Step {
        step: r.key,
        priority: r.priority,
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::super::fixtures::{data, records};
    use super::*;

    fn me() -> u32 {
        rustix::process::geteuid().as_raw()
    }

    fn step(job: u32, name: &str, priority: i32) -> Place {
        Place::Step {
            step: StepKey::new(job, name).unwrap(),
            priority,
        }
    }

    /// The recorded trees (`tests/data/slurm/proc-*`): slurmstepd 1000 runs job 12 step 0
    /// (recorded at 10), its task 1001, that task's child 1002, and 1003, a process of the
    /// step that double-forked away (its parent is init); slurmstepd 2000 runs job 13's batch
    /// step (recorded at −5) and its script 2001; job 14's slurmstepd was pid 1400, which
    /// died without removing its record (priority 50), and pid 1400 is now a user's shell
    /// whose child is 1401; slurmstepd 1500 runs job 15 step 0, which has no record, with
    /// task 1501; 3000 is a login shell; 4000, its child, sits in a cgroup the user made and
    /// named `job_12/step_0`.
    fn resolve(layout: &str, pid: u32) -> Place {
        let steps = SlurmSteps::new(records(), data().join(format!("proc-{layout}")), me());
        steps.place_of(pid)
    }

    #[test]
    fn under_slurms_cgroups_every_process_of_a_step_is_found_escaped_or_not() {
        for layout in ["v2-cgroup", "v1-cgroup"] {
            for pid in [1001, 1002, 1003] {
                assert_eq!(resolve(layout, pid), step(12, "0", 10), "{layout} {pid}");
            }
            assert_eq!(resolve(layout, 2001), step(13, "batch", -5), "{layout}");
            assert_eq!(resolve(layout, 3000), Place::Node, "{layout}");
            assert_eq!(
                resolve(layout, 1401),
                Place::Node,
                "{layout}: a stale record"
            );
            assert_eq!(
                resolve(layout, 1501),
                Place::UnknownStep,
                "{layout}: unrecorded"
            );
            assert_eq!(
                resolve(layout, 4000),
                Place::UnknownStep,
                "{layout}: a look-alike cgroup is not job 12's step"
            );
        }
    }

    #[test]
    fn without_slurms_cgroups_the_ancestry_finds_the_step_but_not_who_left_it() {
        let layout = "linuxproc";
        assert_eq!(resolve(layout, 1001), step(12, "0", 10));
        assert_eq!(resolve(layout, 1002), step(12, "0", 10));
        assert_eq!(resolve(layout, 2001), step(13, "batch", -5));
        // The limit of ancestry: a process re-parented to init is no longer the step's.
        assert_eq!(resolve(layout, 1003), Place::Node);
        assert_eq!(resolve(layout, 1501), Place::Node, "no record, no cgroup");
        assert_eq!(resolve(layout, 3000), Place::Node);
        assert_eq!(
            resolve(layout, 1401),
            Place::Node,
            "pid 1400 is no longer job 14's slurmstepd (another start time)"
        );
        assert_eq!(
            resolve(layout, 4000),
            Place::UnknownStep,
            "a cgroup named like a step, with no slurmstepd in it: the unknown step's 0"
        );
    }

    #[test]
    fn untrusted_records_are_not_read() {
        let layout = data().join("proc-linuxproc");
        // A record others may write.
        let dir = records();
        let r = dir.join("job_12.step_0");
        std::fs::set_permissions(&r, std::fs::Permissions::from_mode(0o666)).unwrap();
        let steps = SlurmSteps::new(dir.clone(), layout.clone(), me());
        assert_eq!(steps.place_of(1001), Place::Node);
        assert_eq!(
            steps.place_of(2001),
            step(13, "batch", -5),
            "the others still are"
        );
        // A directory others may write into: nothing in it is.
        std::fs::set_permissions(&r, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(steps.place_of(1001), step(12, "0", 10));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(steps.place_of(1001), Place::Node);
        assert_eq!(steps.place_of(2001), Place::Node);
        // Under cgroups, the step's processes then get the unknown step's priority.
        let v2 = SlurmSteps::new(dir, data().join("proc-v2-cgroup"), me());
        assert_eq!(v2.place_of(1001), Place::UnknownStep);
        // A daemon that trusts neither root's nor these files' owner reads none of them.
        let other = SlurmSteps::new(records(), layout, me().wrapping_add(1));
        if me() != ROOT_UID {
            assert_eq!(other.place_of(1001), Place::Node);
        }
    }

    const ROOT_UID: u32 = 0;
}
