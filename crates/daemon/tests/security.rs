//! Who gets in: the daemon's sockets as the kernel lists them (no network listener unless
//! `--metrics` names a loopback address), and the priority cap applied to a process of another
//! user (run as `nobody` when the tests run as root). Another user's requests are refused in
//! `tests/daemon.rs` (`requests_from_another_user_are_refused`).

mod support;

use std::collections::HashSet;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use baton_daemon::{Daemon, DaemonConfig};
use baton_protocol::Hint;
use support::*;

/// An entry point, not a test: a daemon process (this binary re-run with
/// `BATON_TEST_DAEMON_SOCKET`, and `BATON_TEST_DAEMON_METRICS` for a metrics address).
#[test]
#[ignore = "an entry point: this binary re-runs it with --ignored"]
fn daemon_process() {
    let Some(socket) = std::env::var_os("BATON_TEST_DAEMON_SOCKET") else {
        return;
    };
    let mut cfg = DaemonConfig::new(socket.into());
    cfg.metrics = std::env::var("BATON_TEST_DAEMON_METRICS")
        .ok()
        .map(|a| a.parse().unwrap());
    Daemon::bind(cfg).unwrap().run().unwrap();
}

fn start(socket: &std::path::Path, metrics: Option<&str>) -> Killed {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--ignored",
        "--exact",
        "daemon_process",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("BATON_TEST_DAEMON_SOCKET", socket)
    .stdout(Stdio::null());
    if let Some(m) = metrics {
        cmd.env("BATON_TEST_DAEMON_METRICS", m);
    }
    let child = Killed(cmd.spawn().unwrap());
    wait_until("the daemon to answer", || cli(socket).is_ok());
    child
}

/// The socket inodes a process holds open.
fn socket_inodes(pid: u32) -> HashSet<u64> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            l.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
        })
        .collect()
}

/// The `local address` and state of every inet socket of `inodes` in the process's network
/// namespace (`/proc/PID/net/{tcp,tcp6,udp,udp6}`).
fn inet_sockets(pid: u32, inodes: &HashSet<u64>) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    for table in ["tcp", "tcp6", "udp", "udp6", "raw", "raw6"] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let Some(inode) = f.get(9).and_then(|i| i.parse::<u64>().ok()) else {
                continue;
            };
            if inodes.contains(&inode) {
                found.push((table.to_string(), f[1].to_string(), f[3].to_string()));
            }
        }
    }
    found
}

#[test]
fn without_metrics_the_daemon_has_no_network_socket() {
    let socket = temp_dir("no-net").join("baton.sock");
    let d = start(&socket, None);
    let _client = Sim::start(&socket, 1, 0);
    let pid = d.0.id();
    let inodes = socket_inodes(pid);
    assert!(!inodes.is_empty(), "the Unix socket at least");
    assert_eq!(inet_sockets(pid, &inodes), vec![], "no inet socket at all");
    // Every socket it holds is a Unix one.
    let unix = std::fs::read_to_string(format!("/proc/{pid}/net/unix")).unwrap();
    let unix: HashSet<u64> = unix
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(6)?.parse().ok())
        .collect();
    assert!(inodes.is_subset(&unix), "{inodes:?} not all Unix sockets");
}

#[test]
fn with_loopback_metrics_the_one_network_listener_is_on_loopback() {
    let socket = temp_dir("loop-net").join("baton.sock");
    let d = start(&socket, Some("127.0.0.1:0"));
    let pid = d.0.id();
    let found = inet_sockets(pid, &socket_inodes(pid));
    // One TCP socket, listening (state 0A) on 127.0.0.1 (0100007F), port chosen by the kernel.
    assert_eq!(found.len(), 1, "{found:?}");
    let (table, local, state) = &found[0];
    assert_eq!(table, "tcp");
    assert!(local.starts_with("0100007F:"), "{local}");
    assert_eq!(state, "0A");
}

#[test]
fn another_users_process_cannot_claim_more_than_the_cap() {
    // A system daemon lets `nobody`'s group in (see tests/daemon.rs).
    let Some(group) = as_other_users("security: another user's process and the cap") else {
        return;
    };
    let dir = temp_dir("cap");
    let mut cfg = DaemonConfig::new(dir.join("baton.sock"));
    cfg.system = true;
    cfg.max_priority = Some(10);
    cfg.group = Some(group);
    let d = InProcess::start(cfg);
    let nobody = Killed(
        Command::new(sim_client())
            .arg("--socket")
            .arg(&d.socket)
            .args(["--queues", "1", "--priority", "90"])
            .uid(65534)
            .gid(65534)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let root = Sim::start(&d.socket, 1, 90);
    let priority = |pid: u32| {
        list(&d.socket)
            .processes
            .into_iter()
            .find(|p| p.pid == pid)
            .and_then(|p| {
                p.hints.iter().find_map(|h| match h {
                    Hint::Priority(p) => Some(p.0),
                    _ => None,
                })
            })
    };
    let pid = nobody.0.id();
    wait_until("nobody's process registered", || priority(pid).is_some());
    assert_eq!(priority(pid), Some(10), "lowered to the cap");
    wait_until("root's process registered", || {
        priority(root.pid()).is_some()
    });
    assert_eq!(priority(root.pid()), Some(90), "root is not capped");
}
