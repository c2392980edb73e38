//! Chaos with real interposed programs: the daemon killed with `kill -9` at random moments,
//! right after a queue was seen suspended, and in the middle of a policy switch, under
//! `runtime-like mix` programs (the interposer preloaded over the fake driver; kernels on
//! several streams, cross-stream waits, stream-ordered copies) of mixed priorities. After each
//! kill a new daemon starts on the same socket and must re-adopt every program still running,
//! with its queues. In between, with no daemon, every program must run kernels again (fail-open:
//! nothing stays held). Every program must finish with its own results right, and its driver log
//! must show every command once, in its stream's order, every dependency honoured. Programs
//! that finish are replaced, so kills land on programs at every stage of their lives.
//!
//! The CI version runs 12 trials. The campaign's:
//!
//! ```text
//! BATON_CHAOS_TRIALS=200 BATON_CHAOS_OUT=docs/reliability/chaos \
//!     cargo test -p baton-cuda-testapps --test chaos -- --ignored --nocapture
//! ```

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use baton_cuda_testapps::mix::Rng;
use baton_protocol::{Reply, Request, write_frame};
use support::fleet::*;
use support::{temp_dir, wait_until};

/// Policies a trial switches to (`baton policy NAME`).
const POLICIES: [&str; 6] = ["hpf", "cfs", "mlfq", "guard", "hhpf", "up"];
/// The programs' priorities: as many programs run at a time.
const PRIORITIES: [i32; 6] = [10, 5, 0, 0, -5, 10];

/// A program of 3–12 s at `priority`.
fn spec(rng: &mut Rng, seed: u64, priority: i32) -> Spec {
    let think_us = 2_000 + rng.below(4_000);
    let life_us = (3 + rng.below(10)) * 1_000_000;
    Spec {
        seed,
        steps: usize::try_from(life_us / think_us).unwrap(),
        think_us,
        priority,
        kernel_us: [200, 1_000, 3_000][usize::try_from(rng.below(3)).unwrap()],
    }
}

/// Whether every program still running is listed with at least the queues the previous
/// daemon listed for it (`queues`, by pid).
fn all_adopted(socket: &Path, apps: &mut [App], queues: &HashMap<u32, usize>) -> bool {
    let listed: HashMap<u32, usize> = list(socket)
        .processes
        .iter()
        .map(|p| (p.pid, p.queues.len()))
        .collect();
    apps.iter_mut().all(|a| {
        let want = queues.get(&a.pid()).copied().unwrap_or(1).max(1);
        listed.get(&a.pid()).is_some_and(|n| *n >= want) || a.exited().is_some()
    })
}

fn daemon_kills(trials: u64, out: Option<PathBuf>) {
    let dir = temp_dir("chaos");
    let socket = dir.join("baton.sock");
    let mut daemon = Daemon::start(&socket, &[]);
    let mut rng = Rng(0xc4a0_5eed);
    let mut seed = 0u64;
    let mut apps: Vec<App> = PRIORITIES
        .iter()
        .map(|p| {
            seed += 1;
            App::start(&socket, spec(&mut rng, seed, *p), &dir)
        })
        .collect();
    let mut tally = Tally::default();
    let mut adopt_ms = Vec::new();
    let mut fail_open_ms = Vec::new();
    let mut modes = [0u64; 3];
    let (mut held_at_kill, mut switch_unanswered, mut programs_at_kill) = (0u64, 0u64, 0u64);
    let mut queues: HashMap<u32, usize> = HashMap::new();
    for trial in 0..trials {
        // Programs that ended are checked and replaced (at the priority they had).
        for app in &mut apps {
            if app.exited().is_some() {
                seed += 1;
                let fresh = App::start(&socket, spec(&mut rng, seed, app.spec.priority), &dir);
                tally.add(std::mem::replace(app, fresh).verify());
            }
        }
        let t0 = Instant::now();
        wait_until(
            "every running program adopted by the new daemon",
            LIMIT,
            || all_adopted(&socket, &mut apps, &queues),
        );
        adopt_ms.push(t0.elapsed().as_secs_f64() * 1e3);
        let mode = trial % 3;
        modes[usize::try_from(mode).unwrap()] += 1;
        let mut pending = None;
        let snapshot = |socket: &Path| {
            let l = list(socket);
            let held = l
                .processes
                .iter()
                .any(|p| p.queues.iter().any(|q| q.suspended));
            let queues: HashMap<u32, usize> = l
                .processes
                .iter()
                .map(|p| (p.pid, p.queues.len()))
                .collect();
            (held, queues)
        };
        let (held, seen) = match mode {
            // At a random moment.
            0 => {
                let s = snapshot(&socket);
                std::thread::sleep(Duration::from_micros(rng.below(30_000)));
                s
            }
            // Right after a queue was seen suspended.
            1 => {
                let mut s = (false, HashMap::new());
                wait_until("a suspension", LIMIT, || {
                    s = snapshot(&socket);
                    s.0
                });
                s
            }
            // In the middle of a policy switch: the request is sent, its reply not awaited.
            _ => {
                let s = snapshot(&socket);
                let name = POLICIES[usize::try_from(rng.below(POLICIES.len() as u64)).unwrap()];
                let mut c = cli(&socket).expect("a CLI connection");
                write_frame(
                    &mut c,
                    &Request::SetPolicy {
                        name: name.into(),
                        params: vec![],
                    },
                )
                .expect("send the switch");
                std::thread::sleep(Duration::from_micros(rng.below(500)));
                pending = Some(c);
                s
            }
        };
        queues = seen;
        programs_at_kill += queues.len() as u64;
        held_at_kill += u64::from(held);
        let offsets: Vec<u64> = apps.iter().map(App::log_len).collect();
        let killed = Instant::now();
        daemon.kill();
        if let Some(mut c) = pending {
            // No reply came before the kill if the connection ends without one.
            c.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
            if !matches!(baton_protocol::read_frame::<Reply, _>(&mut c), Ok(Some(_))) {
                switch_unanswered += 1;
            }
        }
        // Fail-open: with no daemon, every program runs kernels again (none stays held).
        wait_until(
            "every program to run a kernel with no daemon",
            LIMIT,
            || {
                apps.iter_mut()
                    .zip(&offsets)
                    .all(|(a, o)| a.kernel_since(*o) || a.exited().is_some())
            },
        );
        fail_open_ms.push(killed.elapsed().as_secs_f64() * 1e3);
        daemon = Daemon::start(&socket, &[]);
    }
    wait_until(
        "every running program adopted by the last daemon",
        LIMIT,
        || all_adopted(&socket, &mut apps, &queues),
    );
    // The last daemon stops normally; every program finishes and is checked.
    assert_eq!(request(&socket, &Request::Shutdown), Reply::Done);
    for app in apps {
        tally.add(app.verify());
    }
    drop(daemon);
    let (fo_p50, fo_max) = (
        percentile(&mut fail_open_ms.clone(), 50.0),
        percentile(&mut fail_open_ms.clone(), 100.0),
    );
    let (ad_p50, ad_max) = (
        percentile(&mut adopt_ms.clone(), 50.0),
        percentile(&mut adopt_ms.clone(), 100.0),
    );
    eprintln!(
        "daemon kills under interposed programs: {trials} trials (random {}, mid-suspension {}, \
         mid-policy-switch {} of which {switch_unanswered} unanswered at the kill), \
         {held_at_kill} with queues suspended at the kill, {programs_at_kill} scheduled programs \
         at the kills in all; every program ran kernels again with no daemon within p50 \
         {fo_p50:.1} ms, max {fo_max:.1} ms of the kill; re-adopted within p50 {ad_p50:.1} ms, max {ad_max:.1} ms; {} \
         programs finished and checked: {} kernels, {} copies after cross-stream waits, every \
         command once, in order, every dependency honoured",
        modes[0], modes[1], modes[2], tally.programs, tally.kernels, tally.copies
    );
    if let Some(dir) = out {
        std::fs::create_dir_all(&dir).unwrap();
        let doc = serde_json::json!({
            "schema": "baton.chaos-daemon-kills-interposed/1",
            "trials": trials,
            "modes": {"random_moment": modes[0], "mid_suspension": modes[1], "mid_policy_switch": modes[2]},
            "policy_switch_unanswered_at_kill": switch_unanswered,
            "suspended_at_kill": held_at_kill,
            "scheduled_programs_at_kills": programs_at_kill,
            "programs_at_a_time": PRIORITIES.len(),
            "priorities": PRIORITIES,
            "programs_checked": tally.programs,
            "kernels": tally.kernels,
            "copies": tally.copies,
            "dependencies_checked": tally.dependencies,
            "lost_duplicated_out_of_order_or_early": 0,
            "kernels_again_without_daemon_ms": {"p50": fo_p50, "max": fo_max},
            "readopted_ms": {"p50": ad_p50, "max": ad_max},
        });
        std::fs::write(
            dir.join("daemon-kills-interposed.json"),
            serde_json::to_string_pretty(&doc).unwrap(),
        )
        .unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn interposed_programs_survive_daemon_kills() {
    daemon_kills(12, None);
}

#[test]
#[ignore = "the campaign's chaos: BATON_CHAOS_TRIALS (200)"]
fn interposed_programs_survive_many_daemon_kills() {
    let trials = std::env::var("BATON_CHAOS_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    daemon_kills(
        trials,
        std::env::var_os("BATON_CHAOS_OUT").map(PathBuf::from),
    );
}
