//! Soak with real interposed programs: many `runtime-like mix` processes (the interposer
//! preloaded over the fake driver, each a seeded mix of kernels on 2–4 streams, cross-stream
//! event waits and stream-ordered copies), of mixed priorities, starting and exiting, under
//! one `baton daemon` whose policy switches every 3 s. Each program checks its own results;
//! then its driver log must show every planned command executed exactly once, in its stream's
//! order, every cross-stream dependency honoured (`baton_cuda_testapps::mix::check`). The
//! daemon's resident memory and open descriptors must stay flat.
//!
//! The CI version runs 60 s with 30 programs at a time. The campaign's:
//!
//! ```text
//! BATON_SOAK_SECS=1800 BATON_SOAK_PROCS=100 BATON_SOAK_OUT=docs/reliability/soak \
//!     cargo test -p baton-cuda-testapps --test soak -- --ignored --nocapture
//! ```

mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use baton_cuda_testapps::mix::Rng;
use baton_protocol::{Reply, Request};
use support::fleet::*;
use support::{temp_dir, wait_until};

/// The policies switched between (those that schedule processes given only priorities).
const POLICIES: [&str; 6] = ["hpf", "cfs", "mlfq", "guard", "hhpf", "process:hpf"];

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A program that lives about `life_s` seconds.
fn spec(rng: &mut Rng, seed: u64, life_s: (u64, u64)) -> Spec {
    let priority = [10, 5, 0, 0, -5][usize::try_from(rng.below(5)).unwrap()];
    let think_us = 10_000 + rng.below(30_000);
    let life_us = (life_s.0 + rng.below(life_s.1 - life_s.0)) * 1_000_000;
    Spec {
        seed,
        steps: usize::try_from(life_us / think_us).unwrap().max(8),
        think_us,
        priority,
        kernel_us: [100, 500, 2_000][usize::try_from(rng.below(3)).unwrap()],
    }
}

fn soak(secs: u64, procs: u64, life_s: (u64, u64), out: Option<PathBuf>) {
    let dir = temp_dir("soak");
    let socket = dir.join("baton.sock");
    let daemon = Daemon::start(&socket, &[]);
    let dpid = daemon.pid();
    let (rss0, fds0) = footprint(dpid);
    let mut rng = Rng(0x5eed_f00d);
    let mut seed = 0u64;
    let mut live: Vec<App> = Vec::new();
    let mut start = |rng: &mut Rng, live: &mut Vec<App>| {
        seed += 1;
        live.push(App::start(&socket, spec(rng, seed, life_s), &dir));
    };
    for _ in 0..procs {
        start(&mut rng, &mut live);
    }
    let t0 = Instant::now();
    let end = t0 + Duration::from_secs(secs);
    // Finished programs are checked on threads of their own, so that the loop below keeps
    // its rhythm (policy switches, samples, replacements) however long a check takes.
    let (to_check, checks) = std::sync::mpsc::channel::<App>();
    let checks = std::sync::Arc::new(std::sync::Mutex::new(checks));
    let checkers: Vec<_> = (0..2)
        .map(|_| {
            let checks = std::sync::Arc::clone(&checks);
            std::thread::spawn(move || {
                let mut tally = Tally::default();
                loop {
                    let next = checks.lock().unwrap().recv();
                    match next {
                        Ok(app) => tally.add(app.verify()),
                        Err(_) => return tally,
                    }
                }
            })
        })
        .collect();
    let mut samples: Vec<(u64, u64, u64, usize)> = vec![(0, rss0, fds0, 0)];
    let period = Duration::from_secs(if secs > 300 { 10 } else { 2 });
    let (mut next_switch, mut next_sample) = (t0 + Duration::from_secs(3), t0 + period);
    let mut switches = 0u64;
    let mut most = 0usize;
    loop {
        let now = Instant::now();
        if now >= next_switch {
            set_policy(
                &socket,
                POLICIES[usize::try_from(switches).unwrap() % POLICIES.len()],
            );
            switches += 1;
            next_switch = now + Duration::from_secs(3);
        }
        if now >= next_sample {
            let (rss, fds) = footprint(dpid);
            let scheduled = list(&socket).processes.len();
            most = most.max(scheduled);
            samples.push((t0.elapsed().as_secs(), rss, fds, scheduled));
            next_sample = now + period;
        }
        // Programs that ended are checked; new ones take their place until the end.
        let mut i = 0;
        while i < live.len() {
            if live[i].exited().is_some() {
                to_check
                    .send(live.swap_remove(i))
                    .expect("a checker failed: see its panic above");
                if now < end {
                    start(&mut rng, &mut live);
                }
            } else {
                i += 1;
            }
        }
        if now >= end && live.is_empty() {
            break;
        }
        assert!(
            !checkers.iter().any(std::thread::JoinHandle::is_finished),
            "a checker failed: see its panic above"
        );
        assert!(
            now < end + Duration::from_secs(600),
            "{} programs still running 10 minutes after the end",
            live.len()
        );
        // A sampling period, not a wait for a condition.
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(to_check);
    let mut tally = Tally::default();
    for checker in checkers {
        let t = checker
            .join()
            .expect("a program's check failed: see its panic above");
        tally.programs += t.programs;
        tally.kernels += t.kernels;
        tally.copies += t.copies;
        tally.dependencies += t.dependencies;
    }
    wait_until("the daemon to forget every program", LIMIT, || {
        matches!(request(&socket, &Request::Status),
            Reply::Status(s) if s.processes == 0 && s.queues == 0)
    });
    let (rss_end, fds_end) = footprint(dpid);
    samples.push((t0.elapsed().as_secs(), rss_end, fds_end, 0));
    // Flat: after the first tenth (start-up, the first full house) memory grows by no more
    // than a quarter, and with every program gone the daemon holds no more descriptors than
    // before the first one came.
    let warm = samples[samples.len() / 10].1;
    let peak = samples.iter().map(|s| s.1).max().unwrap();
    eprintln!(
        "soak: {secs} s, {procs} programs at a time (at most {most} seen scheduled at once), {} \
         programs in all, {} kernels, {} copies after {} cross-stream waits, {switches} policy \
         switches; every command once, in order, every dependency honoured; daemon RSS {rss0} \
         KiB at start, {warm} KiB after a tenth, peak {peak} KiB, {rss_end} KiB at the end; \
         descriptors {fds0} at start, {fds_end} at the end",
        tally.programs, tally.kernels, tally.copies, tally.dependencies
    );
    if let Some(out) = out {
        std::fs::create_dir_all(&out).unwrap();
        let doc = serde_json::json!({
            "schema": "baton.soak-interposed/1",
            "seconds": secs,
            "programs_at_a_time": procs,
            "most_scheduled_at_once": most,
            "programs": tally.programs,
            "kernels": tally.kernels,
            "copies": tally.copies,
            "dependencies_checked": tally.dependencies,
            "lost_duplicated_out_of_order_or_early": 0,
            "policy_switches": switches,
            "samples": samples.iter().map(|s| serde_json::json!({
                "t_s": s.0, "rss_kib": s.1, "fds": s.2, "scheduled": s.3
            })).collect::<Vec<_>>(),
        });
        std::fs::write(
            out.join(format!("soak-interposed-{secs}s.json")),
            serde_json::to_string_pretty(&doc).unwrap(),
        )
        .unwrap();
    }
    assert_footprint_steady(warm, peak, fds0, fds_end);
    drop(daemon);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn interposed_programs_soak_for_a_minute() {
    soak(
        60,
        30,
        (3, 15),
        std::env::var_os("BATON_SOAK_OUT").map(PathBuf::from),
    );
}

#[test]
#[ignore = "the campaign's soak: BATON_SOAK_SECS (1800) and BATON_SOAK_PROCS (100)"]
fn interposed_programs_soak_long() {
    soak(
        env_u64("BATON_SOAK_SECS", 1800),
        env_u64("BATON_SOAK_PROCS", 100),
        (5, 60),
        std::env::var_os("BATON_SOAK_OUT").map(PathBuf::from),
    );
}
