//! Transparency under contention, against the fake driver: every scenario must give exactly its
//! native result, with every command executed once in each stream's order, in the two roles
//! where Baton acts, at Levels 1 and 2 (the fake driver has no Level 3):
//!
//! - **higher**: under `baton run --priority 10` beside a best-effort flood under
//!   `--priority 0`, one daemon between them. The scenario is never suspended, but its queues
//!   keep their launch window, sync points and idle watch while the flood is there (a stream
//!   captured into a graph must then never be queried or given a sync point).
//! - **suspended**: the chaos test mode (`BATON_POLICY=chaos:SEED`) suspends and resumes its
//!   queues at random moments, from a seed, so every command may wait in a buffer and run later
//!   from the launch worker, behind or ahead of other streams' work.
//!
//! Early refill (`BATON_EARLY_REFILL`, on by default: sync points every half of what the
//! in-flight budget admits) is on in half of the runs of each role, with kernels long enough
//! for the 250 µs budget to bind (a few in flight): chaos seeds 12 and 22, every kernel 60 µs
//! longer; the flood at Level 1, of 100 µs kernels 16 deep; the scenarios at Level 2. The other
//! half turns it off.
//!
//! The alone role is `interposer.rs`. A failure names the scenario, role, level and seed; the
//! same seed replays the same sequence of choices (which command each lands on depends on
//! timing, so run it a few times).

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{baton_binary, check_log, driver_dir, interposer_library, run, scenarios, temp_dir};

const RUNTIME_LIKE: &str = env!("CARGO_BIN_EXE_runtime-like");

/// Chaos seeds per level: each one a different sequence of suspensions.
const SEEDS: &[(u8, &[u64])] = &[(1, &[11, 12, 13]), (2, &[21, 22])];

/// The chaos seeds run with early refill, with kernels 60 µs longer.
const REFILL_SEEDS: [u64; 2] = [12, 22];

fn native(scenario: &str) -> support::Run {
    let native = run(RUNTIME_LIKE, &[scenario], &[]);
    assert_eq!(
        native.code,
        Some(0),
        "{scenario} natively: {}",
        native.stderr
    );
    native
}

fn report(path: &Path) -> Value {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| t.lines().last().and_then(|l| serde_json::from_str(l).ok()))
        .unwrap_or(Value::Null)
}

#[test]
fn every_scenario_suspended_and_resumed_at_random_gives_the_native_result() {
    let preload = interposer_library()
        .to_str()
        .expect("a UTF-8 path")
        .to_owned();
    let (mut deferred, mut refilled, mut suspensions) = (0, 0, 0);
    for scenario in scenarios() {
        let native = native(scenario);
        let expected = native.line().to_owned();
        for (level, seeds) in SEEDS {
            for seed in *seeds {
                let report_path = temp_dir("chaos").join("report.json");
                let (policy, level_s) = (format!("chaos:{seed}"), level.to_string());
                let refill = if REFILL_SEEDS.contains(seed) {
                    "on"
                } else {
                    "off"
                };
                let what = format!(
                    "{scenario} suspended at random (level {level}, chaos:{seed}, early refill \
                     {refill})"
                );
                let env = [
                    ("LD_PRELOAD", preload.as_str()),
                    ("BATON_SCHEDULER", "local"),
                    ("BATON_POLICY", policy.as_str()),
                    ("BATON_LEVEL", level_s.as_str()),
                    ("BATON_REPORT", report_path.to_str().expect("a UTF-8 path")),
                    ("BATON_EARLY_REFILL", refill),
                    (
                        "FAKE_CUDA_KERNEL_US",
                        if refill == "on" { "60" } else { "0" },
                    ),
                ];
                let b = run(RUNTIME_LIKE, &[scenario], &env);
                assert_eq!(b.code, Some(0), "{what}: {}", b.stderr);
                assert_eq!(b.line(), expected, "{what}: result differs from native");
                check_log(&what, &b.log, &native.log);
                let r = report(&report_path);
                deferred += r["deferred"].as_u64().unwrap_or(0);
                // Each suspension says what it found in flight (a queue the chaos let run
                // unbounded may have had more than its window).
                for q in r["queues"].as_array().into_iter().flatten() {
                    let at = &q["inflight_at_suspend"];
                    suspensions += at["suspensions"].as_u64().unwrap_or(0);
                    assert!(
                        at.is_null() || at["mean_commands"].as_f64().is_some(),
                        "{what}: {at}"
                    );
                }
                if refill == "on" {
                    // A measured command time is what early refill places sync points by.
                    refilled += r["queues"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|q| q["command_us"].as_f64().is_some_and(|us| us >= 60.0))
                        .count();
                }
                // An attribute change never lets held work through a suspension here: every
                // held launch's limit, a library kernel's included, can be told and raised.
                assert_eq!(
                    r["held_releases"]["attribute"].as_u64().unwrap_or(0)
                        + r["attribute_limits_unknown"].as_u64().unwrap_or(0),
                    0,
                    "{what}: {r}"
                );
            }
        }
    }
    assert!(
        deferred > 1_000,
        "the chaos mode made only {deferred} commands wait: it did not suspend much"
    );
    assert!(
        refilled > 0,
        "no queue of the early-refill runs measured its command time: early refill never acted"
    );
    assert!(
        suspensions > 100,
        "the reports name only {suspensions} suspensions"
    );
}

/// Another scheduled program beside the one under test (the best-effort flood of the higher
/// role, the prober of the suspended one), and the daemon it started.
struct Contender {
    child: Child,
    socket: std::path::PathBuf,
}

/// The best-effort flood of the higher role.
type Flood = Contender;

impl Contender {
    /// The flood at `level`, its socket in `dir`.
    fn start(level: u8, dir: &Path) -> Contender {
        // At Level 1 with early refill, of kernels short enough for a few in flight.
        let env: &[(&str, &str)] = if level == 1 {
            &[
                ("BATON_EARLY_REFILL", "on"),
                ("BATON_TEST_FLOOD_US", "100"),
                ("BATON_TEST_FLOOD_DEPTH", "16"),
            ]
        } else {
            &[("BATON_EARLY_REFILL", "off")]
        };
        let mut env = env.to_vec();
        env.push(("BATON_TEST_FLOOD_S", "120"));
        Contender::scenario("be-flood", "0", level, dir, &env)
    }

    /// `scenario` under `baton run --priority PRIORITY --level LEVEL` with `env`, its socket in
    /// `dir`, once its queue is registered and launching.
    fn scenario(
        scenario: &str,
        priority: &str,
        level: u8,
        dir: &Path,
        env: &[(&str, &str)],
    ) -> Contender {
        let socket = dir.join("baton.sock");
        let log = dir.join(format!("{scenario}.log"));
        let child = Command::new(baton_binary())
            .args(["run", "--interposer"])
            .arg(interposer_library())
            .args(["--priority", priority, "--level", &level.to_string(), "--"])
            .args([RUNTIME_LIKE, scenario])
            .env("LD_LIBRARY_PATH", driver_dir())
            .env("FAKE_CUDA_LOG", &log)
            .env("BATON_SOCKET", &socket)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {scenario}: {e}"));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let launched = std::fs::read_to_string(&log)
                .unwrap_or_default()
                .contains("\"cuLaunchKernel\"");
            if launched {
                break;
            }
            assert!(Instant::now() < deadline, "{scenario} never launched");
            std::thread::sleep(Duration::from_millis(5));
        }
        Contender { child, socket }
    }
}

impl Drop for Contender {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        stop_daemon(&self.socket);
    }
}

/// `baton run`'s arguments for `scenario` at `priority` and `level` with the test's
/// interposer, `extra` options before the program.
fn run_args<'a>(
    priority: &'a str,
    level: u8,
    extra: &[&'a str],
    scenario: &'a str,
) -> Vec<&'a str> {
    let interposer = interposer_library().to_str().expect("a UTF-8 path");
    let level = ["0", "1", "2", "3"][usize::from(level)];
    let mut args = vec!["run", "--interposer", interposer, "--priority", priority];
    args.extend(["--level", level]);
    args.extend_from_slice(extra);
    args.extend(["--", RUNTIME_LIKE, scenario]);
    args
}

/// Stops the daemon serving `socket`.
fn stop_daemon(socket: &Path) {
    let _ = Command::new(baton_binary())
        .args(["daemon", "--stop", "--socket"])
        .arg(socket)
        .output();
}

/// `b` ran as `what` and gave exactly the native run's result and work, in each stream's
/// order.
fn same_as_native(what: &str, b: &support::Run, native: &support::Run) {
    assert_eq!(b.code, Some(0), "{what}: {}", b.stderr);
    assert_eq!(
        b.line(),
        native.line(),
        "{what}: result differs from native"
    );
    check_log(what, &b.log, &native.log);
}

#[test]
fn every_scenario_at_higher_priority_beside_a_scheduled_flood_gives_the_native_result() {
    let baton = baton_binary().to_str().expect("a UTF-8 path").to_owned();
    for level in [1u8, 2] {
        let dir = temp_dir("higher");
        let flood = Flood::start(level, &dir);
        let socket = flood.socket.to_str().expect("a UTF-8 path").to_owned();
        for scenario in scenarios() {
            let native = native(scenario);
            let what = format!("{scenario} at higher priority beside a flood (level {level})");
            let args = run_args("10", level, &[], scenario);
            let refill = if level == 2 { "on" } else { "off" };
            let env = [
                ("BATON_SOCKET", socket.as_str()),
                ("BATON_EARLY_REFILL", refill),
            ];
            let b = run(&baton, &args, &env);
            same_as_native(&what, &b, &native);
        }
        drop(flood);
    }
}

/// A daemon of its own under `policy`, stopped when dropped.
struct Daemon {
    child: Child,
    socket: std::path::PathBuf,
}

impl Daemon {
    fn start(policy: &str, dir: &Path) -> Daemon {
        let socket = dir.join("baton.sock");
        let child = Command::new(baton_binary())
            .args(["daemon", "--policy", policy, "--socket"])
            .arg(&socket)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the daemon");
        let deadline = Instant::now() + Duration::from_secs(30);
        while !Command::new(baton_binary())
            .args(["list", "--socket"])
            .arg(&socket)
            .output()
            .is_ok_and(|o| o.status.success())
        {
            assert!(Instant::now() < deadline, "the daemon never answered");
            std::thread::sleep(Duration::from_millis(5));
        }
        Daemon { child, socket }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        stop_daemon(&self.socket);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn every_scenario_giving_way_by_sms_under_mps_gives_the_native_result() {
    // `--yield` under MPS: a stream's kernels run on a green context's stream while its queue
    // may be suspended and on its own stream otherwise. The daemon's chaos mode suspends
    // queues at random and, of those it lets run, says at random that it cannot suspend them
    // until its next draw, so every scenario's kernels switch between the two at random
    // moments, with suspensions in between; at Level 2 behind a gate as well.
    let baton = baton_binary().to_str().expect("a UTF-8 path").to_owned();
    let (mut confined, mut whole) = (0, 0);
    for (level, seed) in [(1u8, 31u64), (2, 32)] {
        let dir = temp_dir("yield-sms");
        let daemon = Daemon::start(&format!("chaos:{seed}"), &dir);
        let socket = daemon.socket.to_str().expect("a UTF-8 path").to_owned();
        for scenario in scenarios() {
            let native = native(scenario);
            let what =
                format!("{scenario} giving way by SMs at random (level {level}, chaos:{seed})");
            let args = run_args("0", level, &["--yield"], scenario);
            let env = [
                ("BATON_SOCKET", socket.as_str()),
                ("BATON_MPS", "on"),
                ("BATON_YIELD_SMS", "64"),
            ];
            let b = run(&baton, &args, &env);
            same_as_native(&what, &b, &native);
            for l in b.log.execs() {
                if l["op"] == "kernel" {
                    match l["sms"].as_u64() {
                        Some(64) => confined += 1,
                        None => whole += 1,
                        Some(n) => panic!("{what}: a kernel on {n} SMs"),
                    }
                }
            }
        }
        drop(daemon);
    }
    eprintln!("kernels: {confined} confined, {whole} on the whole GPU");
    assert!(
        confined > 100 && whole > 100,
        "kernels did not switch much: {confined} confined, {whole} on the whole GPU"
    );
}

#[test]
fn a_side_stream_training_job_suspended_by_a_more_urgent_program_gives_the_native_result() {
    // The suspended-training crash: a training loop on a side stream, its library kernels'
    // dynamic shared memory limits changed around their launches (through a kernel's function
    // as well as the kernel), beside a latency-critical program sending bursts at random
    // moments under one daemon. Its launches wait in buffers while the limits change and are
    // made later by Baton; each must be as valid then as when the program made it.
    let native = native("train-side");
    let baton = baton_binary().to_str().expect("a UTF-8 path").to_owned();
    let (mut deferred, mut holds) = (0, 0);
    for level in [1u8, 2] {
        let dir = temp_dir("suspended-training");
        let stop = dir.join("stop");
        let stop_s = stop.to_str().expect("a UTF-8 path").to_owned();
        let seed = level.to_string();
        let prober = Contender::scenario(
            "prober",
            "10",
            level,
            &dir,
            &[
                ("BATON_TEST_PROBER_UNTIL", stop_s.as_str()),
                ("BATON_TEST_PROBER_SEED", seed.as_str()),
            ],
        );
        let socket = prober.socket.to_str().expect("a UTF-8 path").to_owned();
        for rep in 0..2 {
            let what = format!("train-side suspended by the prober (level {level}, #{rep})");
            let report_path = dir.join(format!("report-{rep}.json"));
            let args = run_args("0", level, &[], "train-side");
            let env = [
                ("BATON_SOCKET", socket.as_str()),
                ("BATON_REPORT", report_path.to_str().expect("a UTF-8 path")),
                ("FAKE_CUDA_KERNEL_US", "60"),
                support::DECISIONS,
            ];
            let b = run(&baton, &args, &env);
            same_as_native(&what, &b, &native);
            let r = report(&report_path);
            deferred += r["deferred"].as_u64().unwrap_or(0);
            holds += support::holds(&b.stderr).len();
            // Every held launch's limit could be told and raised around it: none was let
            // through a suspension for an attribute change.
            assert_eq!(
                r["held_releases"]["attribute"].as_u64().unwrap_or(0)
                    + r["attribute_limits_unknown"].as_u64().unwrap_or(0),
                0,
                "{what}: {r}"
            );
        }
        std::fs::write(&stop, b"").expect("write the stop file");
        drop(prober);
    }
    assert!(
        holds > 0 && deferred > 0,
        "the job was never held ({holds} holds, {deferred} commands deferred): the test tested \
         nothing"
    );
}

#[test]
fn a_gemm_job_held_for_another_programs_service_has_its_gemms_split_and_gives_the_native_result() {
    // A job whose cuBLAS GEMMs Baton makes in pieces because another process's service is
    // registered on the device: under one daemon, the job held rather than yielding (`--hold`,
    // as under MPS), the service a paced program with rare short bursts (so that most of the
    // job's checks find its stream not held). The job's queue learns from the daemon that it
    // may be held, and only then are its GEMMs split.
    let exe = support::gemm_app(true);
    let exe = exe.to_str().expect("a UTF-8 path");
    let libs = format!(
        "{}:{}",
        support::cublas_dir().display(),
        driver_dir().display()
    );
    let fake = [
        ("LD_LIBRARY_PATH", libs.as_str()),
        // Long against a loaded machine's scheduling delays (the check's cost bound is 5 %).
        ("FAKE_CUBLAS_NS_PER_COLUMN", "250000"),
        ("FAKE_CUDA_SMS", "4"),
    ];
    let native = run(exe, &[], &fake);
    let dir = temp_dir("gemm-held");
    let service = Contender::scenario(
        "paced",
        "10",
        1,
        &dir,
        &[
            ("BATON_TEST_PACED_GAP_US", "600000"),
            ("BATON_TEST_PACED_STEP", "1"),
            ("BATON_TEST_PACED_S", "120"),
        ],
    );
    let socket = service.socket.to_str().expect("a UTF-8 path").to_owned();
    let report_path = dir.join("report.json");
    let interposer = interposer_library().to_str().expect("a UTF-8 path");
    let args = [
        "run",
        "--interposer",
        interposer,
        "--priority",
        "0",
        "--hold",
        "--",
        exe,
    ];
    let mut env = fake.to_vec();
    env.extend([
        ("BATON_SOCKET", socket.as_str()),
        ("BATON_REPORT", report_path.to_str().expect("a UTF-8 path")),
        ("BATON_GEMM_PIECE_US", "25000"),
    ]);
    let baton = baton_binary().to_str().expect("a UTF-8 path").to_owned();
    let b = run(&baton, &args, &env);
    assert_eq!(b.line(), native.line(), "stderr:\n{}", b.stderr);
    let r = report(&report_path);
    let gemm = &r["gemm"];
    assert_eq!(gemm["calls"].as_u64(), Some(9), "{gemm}");
    assert!(
        gemm["split_calls"].as_u64().unwrap_or(0) > 0,
        "no GEMM was split beside the other program's service: {gemm}"
    );
    drop(service);
}
