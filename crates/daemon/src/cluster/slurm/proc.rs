//! What the daemon reads of a process under `/proc`: its cgroup, its parent, when it started.

use std::path::Path;

/// A process's parent and start, from `/proc/PID/stat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    /// Its parent's pid (0 for the first process of a pid namespace).
    pub(crate) ppid: u32,
    /// When it started, in clock ticks since boot: with the pid, what tells it from a later
    /// process that reuses its pid.
    pub(crate) start: u64,
}

/// The stat line `text` read: fields after the command name, which is in parentheses and may
/// itself hold spaces and parentheses (so the last `)` ends it).
pub(crate) fn parse_stat(text: &str) -> Option<Stat> {
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): the parent is field 4, the start time field 22.
    Some(Stat {
        ppid: fields.get(1)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// Process `pid`'s stat under `proc_root`; `None` if it is gone or unreadable.
pub(crate) fn stat_of(proc_root: &Path, pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(proc_root.join(pid.to_string()).join("stat")).ok()?;
    parse_stat(&text)
}

/// Process `pid`'s `/proc/PID/cgroup` under `proc_root`.
pub(crate) fn cgroup_of(proc_root: &Path, pid: u32) -> std::io::Result<String> {
    std::fs::read_to_string(proc_root.join(pid.to_string()).join("cgroup"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_gives_the_parent_and_the_start_even_with_odd_names() {
        let line = "4242 (slurm) stepd: [12.0]) S 4200 4242 4200 0 -1 4194560 819 0 0 0 1 2 0 0 \
                    20 0 4 0 9137311 262721536 1536 18446744073709551615 1 1 0 0 0 0 0 4096 \
                    17 0 0 0 0 0 0\n";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                ppid: 4200,
                start: 9137311
            })
        );
        assert_eq!(parse_stat("4242 (cut short) S 1 2"), None);
        assert_eq!(parse_stat(""), None);
    }

    #[test]
    fn this_process_reads_as_itself() {
        let me = stat_of(Path::new("/proc"), std::process::id()).expect("our own stat");
        assert_eq!(
            me.ppid,
            rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get().unsigned_abs())
        );
        assert!(me.start > 0);
    }
}
