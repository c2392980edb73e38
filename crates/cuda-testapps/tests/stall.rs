//! A high-priority program that is alive but whose kernel never completes, under a real
//! `baton daemon`: its interposer keeps speaking (so its lease never lapses) and its queue
//! stays ready, with one kernel in flight for ever. A best-effort `mix` program started beside
//! it must be held back, then released within the daemon's stall limit plus two of the agents'
//! stats intervals (and some slack) of being held, and finish with its results and driver log
//! checked; with the limit off, it must still be held when that time has passed.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use support::fleet::*;
use support::{temp_dir, wait_until};

/// How often agents report their counters (the daemon's default).
const STATS: Duration = Duration::from_secs(1);
/// Room for a loaded 2-CPU machine.
const SLACK: Duration = Duration::from_secs(2);

/// The hung program: killed when dropped, so a failing test leaves no hung process behind.
struct Hung(Child);

impl Drop for Hung {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the hung program and waits until the daemon lists its queue with the kernel in flight
/// (from its agent's counters; alone, the queue may not report its readiness, since no decision
/// depends on it: it does once another program arrives).
fn hung_hp(socket: &Path, dir: &Path) -> Hung {
    let mut hp = Hung(
        interposed(socket, "hang", 10, &dir.join("hp.log"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the hung program"),
    );
    let mut line = String::new();
    BufReader::new(hp.0.stdout.as_mut().expect("its stdout"))
        .read_line(&mut line)
        .expect("its first line");
    assert_eq!(line.trim(), "hung");
    let pid = hp.0.id();
    wait_until("the hung kernel in flight at the daemon", LIMIT, || {
        list(socket)
            .processes
            .iter()
            .any(|p| p.pid == pid && p.queues.iter().any(|q| q.in_flight > 0))
    });
    hp
}

/// What became of a best-effort program beside a hung one under `--stall-ms stall_ms`, watched
/// for `wait` once it was first seen held back (its start-up not counted).
struct Watched {
    /// How long it stayed held back, if it was seen released within `wait`.
    held_for: Option<Duration>,
    /// Whether it was still held when `wait` had passed.
    still_held: bool,
}

fn best_effort_beside_a_hung_kernel(stall_ms: u64, wait: Duration) -> Watched {
    let dir = temp_dir("stall");
    let socket = dir.join("baton.sock");
    let _daemon = Daemon::start(&socket, &["--stall-ms", &stall_ms.to_string()]);
    let hp = hung_hp(&socket, &dir);
    let spec = Spec {
        seed: 7,
        steps: 300,
        think_us: 0,
        priority: 0,
        kernel_us: 500,
    };
    let mut be = App::start(&socket, spec, &dir);
    let pid = be.pid();
    let suspended = || {
        list(&socket)
            .processes
            .iter()
            .any(|p| p.pid == pid && p.queues.iter().any(|q| q.suspended))
    };
    wait_until("BE held back beside the hung kernel", LIMIT, || {
        assert!(be.exited().is_none(), "BE finished without being held back");
        suspended()
    });
    let held = Instant::now();
    let mut watched = Watched {
        held_for: None,
        still_held: false,
    };
    while held.elapsed() < wait {
        if !suspended() {
            watched.held_for = Some(held.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    watched.still_held = watched.held_for.is_none() && suspended();
    drop(hp);
    // With the hung program gone, whatever was held runs; the program's results and driver
    // log must be right either way.
    let checked = be.verify();
    assert_eq!(
        checked.kernels,
        baton_cuda_testapps::mix::Plan::new(7, 300).kernels()
    );
    if stall_ms > 0 {
        let log = std::fs::read_to_string(dir.join("daemon.log")).unwrap_or_default();
        assert!(
            log.contains("completed nothing for its stall limit"),
            "the daemon says why it let BE run:\n{log}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    watched
}

#[test]
fn a_hung_high_priority_kernel_holds_best_effort_back_for_the_stall_limit_at_most() {
    let stall = Duration::from_millis(1500);
    let bound = stall + 2 * STATS + SLACK;
    let watched = best_effort_beside_a_hung_kernel(1500, bound + SLACK);
    let held = watched
        .held_for
        .unwrap_or_else(|| panic!("BE still held back {:?} after it was first", bound + SLACK));
    eprintln!("BE held back {held:?} beside the hung kernel (bound {bound:?})");
    assert!(
        held <= bound,
        "BE held back {held:?} beside the hung kernel, more than the bound {bound:?}"
    );
}

#[test]
fn without_a_stall_limit_a_hung_kernel_holds_best_effort_back() {
    let wait = Duration::from_millis(1500) + 2 * STATS + SLACK;
    let watched = best_effort_beside_a_hung_kernel(0, wait);
    assert_eq!(
        watched.held_for, None,
        "BE was released with no stall limit"
    );
    assert!(watched.still_held, "BE not held back at the end");
}
