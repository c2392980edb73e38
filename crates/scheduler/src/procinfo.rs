//! What the scheduler learns about a process from the OS: its owner and its niceness.
//!
//! Policies are pure and never ask the OS; the agent reads these facts when a process's first
//! queue registers (and on [`LocalScheduler::refresh_processes`](crate::LocalScheduler::refresh_processes))
//! and puts them in the snapshot. The reading sits behind [`ProcessInfoSource`] so tests and
//! virtual-time runs inject their own values.

use std::collections::BTreeMap;

/// A process's owner and OS scheduling niceness.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessFacts {
    /// Its real user id.
    pub uid: u32,
    /// Its niceness, −20..=19.
    pub nice: i32,
}

/// Where process facts come from.
pub trait ProcessInfoSource: Send {
    /// The facts about `pid`, or `None` if it cannot be read (gone, not permitted).
    fn read(&self, pid: u32) -> Option<ProcessFacts>;
}

/// Reads `/proc/PID/stat` (niceness, field 19) and `/proc/PID/status` (`Uid:`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcFs;

impl ProcessInfoSource for ProcFs {
    fn read(&self, pid: u32) -> Option<ProcessFacts> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        Some(ProcessFacts {
            nice: parse_nice(&stat)?,
            uid: parse_uid(&status)?,
        })
    }
}

/// The niceness in a `/proc/PID/stat` line. The command name (field 2) may hold spaces and
/// parentheses, so fields are counted after its last `)`.
pub fn parse_nice(stat: &str) -> Option<i32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // Fields 3.. follow; niceness is field 19, the 17th after the name.
    rest.split_whitespace().nth(16)?.parse().ok()
}

/// The real uid in `/proc/PID/status`.
pub fn parse_uid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Fixed facts per pid, for tests and virtual-time runs; unknown pids read as uid 0, nice 0.
#[derive(Clone, Debug, Default)]
pub struct StaticProcessInfo(pub BTreeMap<u32, ProcessFacts>);

impl ProcessInfoSource for StaticProcessInfo {
    fn read(&self, pid: u32) -> Option<ProcessFacts> {
        Some(self.0.get(&pid).copied().unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_files_including_odd_command_names() {
        let stat = "4242 (my (odd) app) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 25 5 4 0 \
                    1000 0 0";
        assert_eq!(parse_nice(stat), Some(5));
        assert_eq!(parse_nice("garbage"), None);
        assert_eq!(
            parse_uid("Name:\tx\nUid:\t1000\t1000\t1000\t1000\n"),
            Some(1000)
        );
    }

    #[test]
    fn reads_this_process() {
        let me = ProcFs
            .read(std::process::id())
            .expect("our own /proc entry");
        assert!((-20..=19).contains(&me.nice));
    }
}
