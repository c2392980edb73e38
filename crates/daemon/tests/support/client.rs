//! Talking to a daemon as the CLI does, reading a process's footprint, and the figures the
//! soak and chaos campaigns report: shared by the daemon's integration tests and, included by
//! path, the fake-driver fleets of `baton-cuda-testapps`. `super::LIMIT` is the including
//! module's read timeout.

use std::os::unix::net::UnixStream;
use std::path::Path;

use baton_protocol::{
    Hello, ProcessList, Reply, Request, Role, client_handshake, read_frame, write_frame,
};

/// A CLI connection to the daemon on `socket`.
pub fn cli(socket: &Path) -> std::io::Result<UnixStream> {
    let mut s = UnixStream::connect(socket)?;
    s.set_read_timeout(Some(super::LIMIT))?;
    let hello = Hello::new(Role::Cli, std::process::id(), "test");
    client_handshake(&mut s, &hello).map_err(std::io::Error::other)?;
    Ok(s)
}

/// One request, one reply.
pub fn request(socket: &Path, r: &Request) -> Reply {
    let mut s = cli(socket).expect("a CLI connection");
    write_frame(&mut s, r).expect("send a request");
    read_frame(&mut s).expect("read a reply").expect("a reply")
}

/// The daemon's process list.
pub fn list(socket: &Path) -> ProcessList {
    match request(socket, &Request::List { pid: None }) {
        Reply::List(l) => l,
        r => panic!("{r:?}"),
    }
}

/// Switches the daemon's policy.
pub fn set_policy(socket: &Path, name: &str) {
    let r = request(
        socket,
        &Request::SetPolicy {
            name: name.into(),
            params: vec![],
        },
    );
    assert_eq!(r, Reply::Done, "switching to {name}");
}

/// The resident memory (KiB) and open descriptors of process `pid`.
pub fn footprint(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count() as u64)
        .unwrap_or(0);
    (rss, fds)
}

/// A long run's daemon footprint did not grow: resident memory within a quarter (and 2 MiB)
/// of its warmed-up size, and at most one more open descriptor than at the start.
pub fn assert_footprint_steady(warm_kib: u64, peak_kib: u64, fds_start: u64, fds_end: u64) {
    assert!(
        peak_kib <= warm_kib + warm_kib / 4 + 2048,
        "daemon RSS grew from {warm_kib} KiB to {peak_kib} KiB"
    );
    assert!(
        fds_end <= fds_start + 1,
        "descriptors {fds_start} -> {fds_end}"
    );
}

/// The `p`-th percentile (0–100) of `v`, nearest rank; 0 for no values. Sorts `v`.
pub fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return 0.0;
    }
    // Nearest rank, counted in whole steps (no float-to-integer cast).
    let steps = v.len() - 1;
    let mut i = 0;
    while i < steps && (i as f64) < p / 100.0 * steps as f64 - 0.5 {
        i += 1;
    }
    v[i]
}
