//! A step's record: the priority Slurm gave a job step, written by the SPANK plugin
//! (`deploy/slurm/spank_baton.c`) from slurmstepd, as root, before the step's tasks run.
//!
//! One file per step, `DIR/job_<JOB>.step_<STEP>` (`STEP` as in cgroup paths: a number,
//! `batch`, `extern` or `interactive`), made atomically (written aside, then renamed),
//! mode 0644 in a directory of mode 0755, both root's; removed when the step ends:
//!
//! ```text
//! job=12
//! step=batch
//! priority=-5
//! stepd_pid=4242
//! stepd_start=9137311
//! ```
//!
//! `stepd_pid` and `stepd_start` (field 22 of `/proc/PID/stat`) name the step's slurmstepd;
//! a record holds only while that very process lives, so the record of a step whose
//! slurmstepd died without removing it applies to nothing, not to a later process given the
//! same pid, nor to a later job given the same id.
//!
//! A record is trusted only if it and its directory are owned by root (or by the daemon's
//! own user, for a daemon not run by root: it trusts nothing less than itself), are not
//! writable by group or others, and the record is a regular file, not a link: a job's
//! processes can neither write one nor put one in place.

use std::fs::Metadata;
use std::io::Read as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::Path;

use super::step::StepKey;
use crate::auth::ROOT;

/// The largest record read: a record is five short lines.
const MAX_LEN: u64 = 4096;

/// What a trusted record says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StepRecord {
    pub(crate) key: StepKey,
    /// What Slurm gave the step: its processes' default and ceiling.
    pub(crate) priority: i32,
    pub(crate) stepd_pid: u32,
    pub(crate) stepd_start: u64,
}

/// Why a record (or its directory) is not trusted.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RecordError {
    /// It cannot be opened or read.
    #[error("cannot read it: {0}")]
    Io(#[from] std::io::Error),
    /// A link, a directory, a device…
    #[error("it is not a regular file")]
    NotAFile,
    /// Owned by someone the daemon does not trust.
    #[error("it is owned by uid {0}, not by root")]
    Owner(u32),
    /// Others than its owner could have written it.
    #[error("it is writable by others than its owner (mode {0:o})")]
    Writable(u32),
    /// Too large to be a record.
    #[error("it is larger than {MAX_LEN} bytes")]
    TooLarge,
    /// A line that is not `key=value` of a known key with a valid value.
    #[error("its line {0:?} is not understood")]
    Malformed(String),
    /// A key missing.
    #[error("it has no {0}")]
    Missing(&'static str),
    /// Its file name and its contents name different steps.
    #[error("it names {named}, but its file name is another step's")]
    Misnamed { named: StepKey },
}

/// Who may own records and their directory: root, and the daemon's own user (`daemon_uid`).
fn check_owner(meta: &Metadata, daemon_uid: u32) -> Result<(), RecordError> {
    if meta.uid() != ROOT && meta.uid() != daemon_uid {
        return Err(RecordError::Owner(meta.uid()));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(RecordError::Writable(meta.mode() & 0o7777));
    }
    Ok(())
}

/// Whether the records' directory `dir` may be trusted.
pub(crate) fn check_dir(dir: &Path, daemon_uid: u32) -> Result<(), RecordError> {
    let meta = std::fs::metadata(dir)?;
    if !meta.is_dir() {
        return Err(RecordError::NotAFile);
    }
    check_owner(&meta, daemon_uid)
}

/// The record of `key` in `dir`, if it is there and trusted (the directory is checked by the
/// caller).
pub(crate) fn read(dir: &Path, key: &StepKey, daemon_uid: u32) -> Result<StepRecord, RecordError> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(dir.join(key.file_name()))?;
    // The opened file's own metadata: nothing can be swapped in between check and read.
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(RecordError::NotAFile);
    }
    check_owner(&meta, daemon_uid)?;
    if meta.len() > MAX_LEN {
        return Err(RecordError::TooLarge);
    }
    let mut text = String::new();
    f.by_ref().take(MAX_LEN).read_to_string(&mut text)?;
    let record = parse(&text)?;
    if record.key != *key {
        return Err(RecordError::Misnamed { named: record.key });
    }
    Ok(record)
}

/// The steps `dir` holds records of, by their files' names (dot files, being written, and
/// other names are left out).
pub(crate) fn steps_in(dir: &Path) -> std::io::Result<Vec<StepKey>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        let Some(name) = name.to_str() else { continue };
        let key = name
            .strip_prefix("job_")
            .and_then(|r| r.split_once(".step_"))
            .and_then(|(job, step)| {
                let job = (!job.is_empty() && job.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| job.parse().ok())??;
                StepKey::new(job, step)
            });
        out.extend(key);
    }
    out.sort();
    Ok(out)
}

/// A record's text.
pub(crate) fn parse(text: &str) -> Result<StepRecord, RecordError> {
    let (mut job, mut step, mut priority, mut pid, mut start) = (None, None, None, None, None);
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let bad = || RecordError::Malformed(line.to_string());
        let (k, v) = line.split_once('=').ok_or_else(bad)?;
        match k {
            "job" => job = Some(v.parse::<u32>().map_err(|_| bad())?),
            "step" => step = Some(v.to_string()),
            "priority" => {
                let p = v.parse::<i32>().map_err(|_| bad())?;
                if !(-100..=100).contains(&p) {
                    return Err(bad());
                }
                priority = Some(p);
            }
            "stepd_pid" => pid = Some(v.parse::<u32>().map_err(|_| bad())?),
            "stepd_start" => start = Some(v.parse::<u64>().map_err(|_| bad())?),
            _ => return Err(bad()),
        }
    }
    let job = job.ok_or(RecordError::Missing("job"))?;
    let step = step.ok_or(RecordError::Missing("step"))?;
    Ok(StepRecord {
        key: StepKey::new(job, &step)
            .ok_or_else(|| RecordError::Malformed(format!("step={step}")))?,
        priority: priority.ok_or(RecordError::Missing("priority"))?,
        stepd_pid: pid.ok_or(RecordError::Missing("stepd_pid"))?,
        stepd_start: start.ok_or(RecordError::Missing("stepd_start"))?,
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::super::fixtures::records;
    use super::*;

    fn me() -> u32 {
        rustix::process::geteuid().as_raw()
    }

    fn key(job: u32, step: &str) -> StepKey {
        StepKey::new(job, step).unwrap()
    }

    #[test]
    fn the_plugins_record_reads_and_anything_else_is_refused() {
        let r = parse("job=12\nstep=batch\npriority=-5\nstepd_pid=4242\nstepd_start=9137311\n")
            .unwrap();
        assert_eq!(
            r,
            StepRecord {
                key: key(12, "batch"),
                priority: -5,
                stepd_pid: 4242,
                stepd_start: 9137311,
            }
        );
        for bad in [
            "job=12\nstep=0\npriority=101\nstepd_pid=1\nstepd_start=1\n",
            "job=12\nstep=0\npriority=1\nstepd_pid=1\nstepd_start=1\nuid=0\n",
            "job=12\nstep=../x\npriority=1\nstepd_pid=1\nstepd_start=1\n",
            "job=12\nstep=0\npriority=1\nstepd_pid=1\n",
            "job=12 step=0",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn only_records_of_root_or_the_daemon_that_no_one_else_may_write_are_trusted() {
        let dir = records();
        let k = key(12, "0");
        assert_eq!(read(&dir, &k, me()).unwrap().priority, 10);
        check_dir(&dir, me()).unwrap();
        let file = dir.join(k.file_name());
        // Writable by others.
        for mode in [0o666, 0o664, 0o646] {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
            assert!(matches!(read(&dir, &k, me()), Err(RecordError::Writable(m)) if m == mode));
        }
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o775)).unwrap();
        assert!(matches!(
            check_dir(&dir, me()),
            Err(RecordError::Writable(_))
        ));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Owned by someone else: another user's file where the tests run as root, else a
        // daemon of another user reading the tests' files.
        if me() == ROOT {
            std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
            assert!(matches!(
                read(&dir, &k, me()),
                Err(RecordError::Owner(65534))
            ));
            std::os::unix::fs::chown(&file, Some(0), Some(0)).unwrap();
        } else {
            assert!(matches!(read(&dir, &k, me() + 1), Err(RecordError::Owner(u)) if u == me()));
            assert!(matches!(
                check_dir(&dir, me() + 1),
                Err(RecordError::Owner(_))
            ));
        }
        // A link, even to a good record.
        let link = dir.join(key(77, "0").file_name());
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(read(&dir, &key(77, "0"), me()).is_err());
        // A record under another step's name.
        std::fs::remove_file(&link).unwrap();
        std::fs::copy(&file, &link).unwrap();
        assert!(matches!(
            read(&dir, &key(77, "0"), me()),
            Err(RecordError::Misnamed { named }) if named == k
        ));
        // The listing names the steps by their files, leaving out files being written.
        std::fs::write(dir.join(".job_78.step_0.tmp"), "").unwrap();
        std::fs::write(dir.join("notes"), "").unwrap();
        assert_eq!(
            steps_in(&dir).unwrap(),
            vec![key(12, "0"), key(13, "batch"), key(14, "0"), key(77, "0")]
        );
    }
}
