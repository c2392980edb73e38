//! A Slurm job step, and where a process's cgroup puts it among them.
//!
//! With Slurm's cgroup plugins (`proctrack/cgroup`, `task/cgroup`) every process of a step
//! sits in the step's cgroup, which no process of the job can leave: it may fork, exec,
//! double-fork or start a new session and stays there. The step's segments are
//! `job_<JOB>/step_<STEP>`, `STEP` a number or `batch`, `extern` or `interactive`:
//!
//! | cgroup | `/proc/PID/cgroup` of a task                                          |
//! |--------|-----------------------------------------------------------------------|
//! | v1     | `4:freezer:/slurm/uid_1000/job_12/step_0/task_0` (and the same under `cpuset`, `memory`, … with `task/cgroup`) |
//! | v2     | `0::/system.slice/slurmstepd.scope/job_12/step_0/user/task_0`           |
//!
//! (slurmstepd itself sits in `…/job_12/step_0/slurm` on v2, and in the step's cgroup on v1.)
//! Only the segments are read, wherever they sit in the path; what precedes them is compared
//! with slurmstepd's own path by the caller, so a cgroup a user made and named alike (in a
//! delegated subtree) is not taken for the step.

use std::fmt;

/// A job step: its job's id and its step's name as Slurm writes it in cgroup paths.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct StepKey {
    pub(crate) job: u32,
    /// A number, or `batch`, `extern` or `interactive`.
    pub(crate) step: String,
}

impl StepKey {
    /// The step `job`.`step`, if `step` is a name Slurm gives steps.
    pub(crate) fn new(job: u32, step: &str) -> Option<StepKey> {
        let named = matches!(step, "batch" | "extern" | "interactive");
        let number =
            !step.is_empty() && step.len() <= 10 && step.bytes().all(|b| b.is_ascii_digit());
        (named || number).then(|| StepKey {
            job,
            step: step.to_string(),
        })
    }

    /// The name of its record's file: `job_12.step_batch`.
    pub(crate) fn file_name(&self) -> String {
        format!("job_{}.step_{}", self.job, self.step)
    }
}

impl fmt::Display for StepKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Slurm job {} step {}", self.job, self.step)
    }
}

/// Where a `/proc/PID/cgroup` text puts a process among Slurm's steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CgroupStep {
    /// No hierarchy names a Slurm job: Slurm's cgroup plugins are not in use, or the process
    /// is none of Slurm's.
    None,
    /// In this step; `paths` are, for each hierarchy that names it (its line's
    /// `ID:CONTROLLERS`), the cgroup path up to and including the `step_` segment.
    Step {
        key: StepKey,
        paths: Vec<(String, String)>,
    },
    /// A hierarchy names a Slurm job, but not one step that all such hierarchies agree on.
    Unclear,
}

/// Where the process whose `/proc/PID/cgroup` reads `text` sits among Slurm's steps.
pub(crate) fn step_in(text: &str) -> CgroupStep {
    let mut found: Option<(StepKey, Vec<(String, String)>)> = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let segs: Vec<&str> = path.split('/').collect();
        let Some(at) = segs.iter().position(|s| job_id(s).is_some()) else {
            continue;
        };
        let key = segs
            .get(at + 1)
            .and_then(|s| s.strip_prefix("step_"))
            .zip(job_id(segs[at]))
            .and_then(|(step, job)| StepKey::new(job, step));
        let Some(key) = key else {
            return CgroupStep::Unclear;
        };
        match &mut found {
            Some((seen, _)) if *seen != key => return CgroupStep::Unclear,
            Some((_, paths)) => {
                paths.push((format!("{id}:{controllers}"), segs[..at + 2].join("/")))
            }
            None => {
                found = Some((
                    key,
                    vec![(format!("{id}:{controllers}"), segs[..at + 2].join("/"))],
                ))
            }
        }
    }
    match found {
        Some((key, paths)) => CgroupStep::Step { key, paths },
        None => CgroupStep::None,
    }
}

/// The job id a `job_<N>` segment names.
fn job_id(seg: &str) -> Option<u32> {
    let n = seg.strip_prefix("job_")?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse().ok()
}

/// Whether the process whose `/proc/PID/cgroup` reads `text` sits, on one of the hierarchies
/// of `paths` (as [`CgroupStep::Step`] gives them), in that step's cgroup or below it: how a
/// task's cgroup is checked against its slurmstepd's.
pub(crate) fn within(text: &str, paths: &[(String, String)]) -> bool {
    text.lines().any(|line| {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            return false;
        };
        paths.iter().any(|(h, step)| {
            h.split_once(':') == Some((id, controllers))
                && (path == step
                    || path
                        .strip_prefix(step.as_str())
                        .is_some_and(|r| r.starts_with('/')))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cgroup(layout: &str, pid: u32) -> String {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("tests/data/slurm/proc-{layout}/{pid}/cgroup"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    fn key(job: u32, step: &str) -> StepKey {
        StepKey::new(job, step).unwrap()
    }

    #[test]
    fn tasks_are_in_their_steps_on_v1_and_v2() {
        let CgroupStep::Step { key: k, paths } = step_in(&cgroup("v2-cgroup", 1001)) else {
            panic!("v2: no step");
        };
        assert_eq!(k, key(12, "0"));
        assert_eq!(
            paths,
            vec![(
                "0:".to_string(),
                "/system.slice/slurmstepd.scope/job_12/step_0".to_string()
            )]
        );
        let CgroupStep::Step { key: k, paths } = step_in(&cgroup("v1-cgroup", 1001)) else {
            panic!("v1: no step");
        };
        assert_eq!(k, key(12, "0"));
        let hierarchies: Vec<&str> = paths.iter().map(|(h, _)| h.as_str()).collect();
        assert_eq!(
            hierarchies,
            ["11:memory", "10:devices", "9:freezer", "8:cpuset"]
        );
        assert!(
            paths
                .iter()
                .all(|(_, p)| p == "/slurm/uid_1000/job_12/step_0")
        );
        assert!(matches!(
            step_in(&cgroup("v2-cgroup", 2001)),
            CgroupStep::Step { key: k, .. } if k == key(13, "batch")
        ));
    }

    #[test]
    fn the_step_daemon_sits_within_its_step_and_others_do_not() {
        for layout in ["v2-cgroup", "v1-cgroup"] {
            let CgroupStep::Step { paths, .. } = step_in(&cgroup(layout, 1001)) else {
                panic!("{layout}: no step");
            };
            assert!(
                within(&cgroup(layout, 1000), &paths),
                "{layout}: its slurmstepd"
            );
            assert!(
                !within(&cgroup(layout, 2000), &paths),
                "{layout}: another step's"
            );
            assert!(
                !within(&cgroup(layout, 3000), &paths),
                "{layout}: a login shell"
            );
        }
        // A prefix of the path's text is not a parent cgroup.
        let paths = [("0:".to_string(), "/s/job_1/step_1".to_string())];
        assert!(!within("0::/s/job_1/step_10/user/task_0\n", &paths));
        assert!(within("0::/s/job_1/step_1/slurm\n", &paths));
    }

    #[test]
    fn other_processes_are_in_no_step_and_half_names_are_unclear() {
        for text in [
            cgroup("linuxproc", 1001),
            cgroup("v2-cgroup", 3000),
            cgroup("v1-cgroup", 900),
            String::new(),
        ] {
            assert_eq!(step_in(&text), CgroupStep::None, "{text:?}");
        }
        for text in [
            "0::/system.slice/slurmstepd.scope/job_12\n",
            "0::/system.slice/slurmstepd.scope/job_12/step_x\n",
            "9:freezer:/slurm/uid_0/job_12/step_0/task_0\n8:cpuset:/slurm/uid_0/job_13/step_0\n",
        ] {
            assert_eq!(step_in(text), CgroupStep::Unclear, "{text:?}");
        }
    }

    #[test]
    fn step_names_are_slurms() {
        for ok in ["0", "4294967290", "batch", "extern", "interactive"] {
            assert!(StepKey::new(1, ok).is_some(), "{ok}");
        }
        for bad in ["", "x", "0/..", "batch2", "12345678901", "-1"] {
            assert!(StepKey::new(1, bad).is_none(), "{bad}");
        }
        assert_eq!(key(12, "batch").file_name(), "job_12.step_batch");
    }
}
