//! The CUDA interposer against the fake driver: every app and scenario under
//! `LD_PRELOAD=libbaton_interposer.so` must give exactly the native result, with every command
//! executed once, in each stream's order, and Baton must have seen (and counted) every launch.
//! Small launch windows force most commands through the deferred path (deep copies, the launch
//! worker, cross-queue dependencies).

mod support;

use std::path::PathBuf;

use serde_json::Value;
use support::{
    Log, Run, baton_binary, check_log, interposer_library, linked_program, num, run, scenarios,
    temp_dir,
};

const RUNTIME_LIKE: &str = env!("CARGO_BIN_EXE_runtime-like");

/// Launch windows: Baton's default, and windows small enough that most commands wait.
const WINDOWS: &[(&str, &str)] = &[("16", "8"), ("1", "1"), ("2", "1"), ("3", "2")];

/// A run under Baton and what its interposer reported.
struct Baton {
    run: Run,
    report: Value,
}

fn under_baton(exe: &str, args: &[&str], env: &[(&str, &str)]) -> Baton {
    let report_path: PathBuf = temp_dir("report").join("report.json");
    let preload = interposer_library()
        .to_str()
        .expect("a UTF-8 path")
        .to_owned();
    let report = report_path.to_str().expect("a UTF-8 path").to_owned();
    let mut all: Vec<(&str, &str)> = vec![("LD_PRELOAD", &preload), ("BATON_REPORT", &report)];
    all.extend_from_slice(env);
    let run = run(exe, args, &all);
    let text = std::fs::read_to_string(&report_path).unwrap_or_default();
    let report = text
        .lines()
        .last()
        .map(|l| serde_json::from_str(l).expect("a JSON report"))
        .unwrap_or(Value::Null);
    Baton { run, report }
}

fn launch_calls(log: &Log) -> usize {
    log.calls()
        .iter()
        .filter(|c| c.starts_with("cuLaunchKernel") || c.starts_with("cuLaunchCooperative"))
        .count()
}

#[test]
fn every_scenario_gives_the_native_result_under_baton() {
    for scenario in scenarios() {
        let native = run(RUNTIME_LIKE, &[scenario], &[]);
        let expected = native.line().to_owned();
        for (threshold, batch) in WINDOWS {
            let what = format!("{scenario} (window {threshold}/{batch})");
            // Small windows are kept even where nothing could suspend the queue, so most
            // commands wait and are deep-copied; the default window is Baton's default.
            let keep = if (*threshold, *batch) == WINDOWS[0] {
                "off"
            } else {
                "on"
            };
            let b = under_baton(
                RUNTIME_LIKE,
                &[scenario],
                &[
                    ("BATON_THRESHOLD", threshold),
                    ("BATON_BATCH", batch),
                    ("BATON_KEEP_WINDOW", keep),
                ],
            );
            assert_eq!(b.run.line(), expected, "{what}: stderr {}", b.run.stderr);
            assert!(
                b.run.stderr.is_empty(),
                "{what}: Baton printed {:?}",
                b.run.stderr
            );
            check_log(&what, &b.run.log, &native.log);
            // Every launch the application made reached Baton (the fork scenario's child
            // reports separately; its parent's count is the last report line).
            if scenario != "fork" {
                assert_eq!(
                    b.report["kernels"].as_u64(),
                    Some(launch_calls(&native.log) as u64),
                    "{what}: kernels Baton counted vs launches the app made; report {}",
                    b.report
                );
            }
        }
    }
}

#[test]
fn kernels_confined_to_part_of_the_sms_keep_every_scenarios_result_and_order() {
    // BATON_SMS moves the kernels of normal-priority streams onto a green context's stream,
    // chained to the application's stream by events: every scenario must still compute what
    // it does natively, with the same work executed, and the kernels must really run there.
    for scenario in scenarios() {
        let native = run(RUNTIME_LIKE, &[scenario], &[]);
        // A small kept window makes most launches go through the worker too.
        for window in [
            &[][..],
            &[
                ("BATON_THRESHOLD", "2"),
                ("BATON_BATCH", "1"),
                ("BATON_KEEP_WINDOW", "on"),
            ][..],
        ] {
            let mut env = vec![("BATON_SMS", "60")];
            env.extend_from_slice(window);
            let what = format!("{scenario} confined ({window:?})");
            let b = under_baton(RUNTIME_LIKE, &[scenario], &env);
            assert_eq!(
                b.run.line(),
                native.line(),
                "{what}: stderr {}",
                b.run.stderr
            );
            assert!(b.run.stderr.is_empty(), "{what}: {}", b.run.stderr);
            check_log(&what, &b.run.log, &native.log);
            let kernels = b
                .run
                .log
                .execs()
                .into_iter()
                .filter(|l| l["op"] == "kernel")
                .count();
            let confined = b
                .run
                .log
                .execs()
                .into_iter()
                .filter(|l| l["op"] == "kernel" && l["sms"].as_u64() == Some(64))
                .count();
            // Kernels inside a stream capture run from the graph, on the application's stream.
            if scenario != "capture" && kernels > 0 {
                assert!(
                    confined > 0,
                    "{what}: none of {kernels} kernels ran on 64 SMs"
                );
            }
        }
    }
}

#[test]
fn only_normal_priority_streams_are_confined() {
    let b = under_baton(RUNTIME_LIKE, &["priority"], &[("BATON_SMS", "100")]);
    assert_eq!(
        b.run.line(),
        "priority ok low=12 high=8",
        "{}",
        b.run.stderr
    );
    let tag = |l: &Value| l["args"][2].as_i64().expect("an append_tag tag");
    let kernels = b.run.log.kernels("append_tag");
    let (low, high): (Vec<&&Value>, Vec<&&Value>) = kernels.iter().partition(|l| tag(l) >= 100);
    assert_eq!((low.len(), high.len()), (12, 8));
    // 100 rounds up to 104, the granularity being 8 SMs.
    assert!(
        low.iter().all(|l| l["sms"].as_u64() == Some(104)),
        "{low:?}"
    );
    assert!(high.iter().all(|l| l["sms"].is_null()), "{high:?}");
}

#[test]
fn an_impossible_partition_keeps_the_whole_gpu() {
    // The fake device has 132 SMs: a partition of all of them leaves none free.
    let b = under_baton(RUNTIME_LIKE, &["order"], &[("BATON_SMS", "132")]);
    let native = run(RUNTIME_LIKE, &["order"], &[]);
    assert_eq!(b.run.line(), native.line());
    check_log("order, impossible partition", &b.run.log, &native.log);
    assert!(b.run.log.execs().iter().all(|l| l["sms"].is_null()));
}

#[test]
fn small_windows_defer_launches_to_the_worker_with_copied_arguments() {
    let b = under_baton(
        RUNTIME_LIKE,
        &["order"],
        &[
            ("BATON_THRESHOLD", "2"),
            ("BATON_BATCH", "1"),
            ("BATON_KEEP_WINDOW", "on"),
            // Kernels far longer than the app takes to submit a few, even on a loaded machine.
            ("FAKE_CUDA_KERNEL_US", "2000"),
        ],
    );
    assert_eq!(
        b.run.line(),
        "order ok streams=3 commands=288 checksum=55bad48ed06ffc44"
    );
    let deferred = b.report["deferred"].as_u64().unwrap_or(0);
    assert!(
        deferred > 100,
        "only {deferred} commands deferred: {}",
        b.report
    );
    // The app destroys its streams before it exits; the report still lists each, with the
    // sync points it recorded (at most the process's: a stream still draining when the
    // process exits is listed as its destroy call found it).
    let queues = b.report["queues"].as_array().expect("a queue table");
    assert_eq!(queues.len(), 3, "{}", b.report);
    assert!(
        queues.iter().all(|q| q["destroyed"] == true),
        "{}",
        b.report
    );
    // Every command went through one of the three queues or was run in order.
    let queued: u64 = queues.iter().filter_map(|q| q["commands"].as_u64()).sum();
    assert_eq!(
        Some(queued + b.report["in_order"].as_u64().unwrap_or(0)),
        b.report["commands"].as_u64(),
        "{}",
        b.report
    );
    let sync_points: Vec<u64> = queues
        .iter()
        .filter_map(|q| q["sync_points"].as_u64())
        .collect();
    assert!(sync_points.iter().all(|&n| n > 0), "{}", b.report);
    let total = b.report["sync_points"].as_u64().unwrap_or(0);
    assert!(sync_points.iter().sum::<u64>() <= total, "{}", b.report);
    // Deferred launches are made by launch workers, not by the application's thread.
    let app_tid = b
        .run
        .log
        .lines
        .iter()
        .find(|l| l["ev"] == "call" && l["fn"] == "cuStreamCreate")
        .map(|l| num(l, "tid"))
        .expect("the app created streams");
    let worker_launches = b
        .run
        .log
        .lines
        .iter()
        .filter(|l| l["ev"] == "call" && l["fn"] == "cuLaunchKernel" && num(l, "tid") != app_tid)
        .count();
    assert!(worker_launches > 0, "no launch came from a worker thread");
}

#[test]
fn a_full_buffer_loses_nothing() {
    // Three commands buffered at most: the app's thread waits in its launch calls for the
    // workers, as it would on a full hardware queue, and every command still runs in order.
    // (That the submitter does wait is checked in core: a_full_buffer_blocks_the_submitter….)
    let native = run(RUNTIME_LIKE, &["order"], &[]);
    let b = under_baton(
        RUNTIME_LIKE,
        &["order"],
        &[
            ("BATON_THRESHOLD", "2"),
            ("BATON_BATCH", "1"),
            ("BATON_KEEP_WINDOW", "on"),
            ("BATON_MAX_BUFFERED", "3"),
            // Kernels far longer than the app takes to submit four commands, even on a loaded
            // machine: the buffer must fill for the hold to be counted.
            ("FAKE_CUDA_KERNEL_US", "3000"),
        ],
    );
    assert_eq!(b.run.line(), native.line(), "stderr {}", b.run.stderr);
    check_log("order (3 buffered)", &b.run.log, &native.log);
    // The report says how often the app's thread was held, and that it never held Python's
    // lock meanwhile (there is no Python here).
    assert!(
        b.report["submitter_held"].as_u64() > Some(0),
        "{}",
        b.report
    );
    assert_eq!(b.report["held_with_python_lock"], 0, "{}", b.report);
}

#[test]
fn the_launch_cost_loop_runs_every_launch_directly() {
    // scripts/launch_cost.sh counts the instructions of this loop; it must stay on the fast path
    // (launched from the app's thread, nothing deferred) and finish with the right sum.
    let b = under_baton(RUNTIME_LIKE, &["launch-rate"], &[]);
    assert!(
        b.run.line().starts_with("launch-rate ok n=30000 "),
        "{} / {}",
        b.run.line(),
        b.run.stderr
    );
    assert_eq!(b.report["kernels"], 32_000, "{}", b.report);
    assert_eq!(b.report["deferred"], 0, "{}", b.report);
}

#[test]
fn the_report_counts_each_streams_sync_points() {
    // A stream that keeps its launch window records sync points; the report gives them per
    // stream (the legacy stream here, alive until exit), adding up to the process's, so a
    // process with a service's stream and a job's can be told apart.
    let b = under_baton(
        RUNTIME_LIKE,
        &["launch-rate"],
        &[
            ("LAUNCH_RATE_LEGACY", "0"),
            ("LAUNCH_RATE_ROUNDS", "2"),
            ("BATON_KEEP_WINDOW", "on"),
            ("BATON_BATCH", "8"),
        ],
    );
    assert!(
        b.run.line().starts_with("launch-rate ok "),
        "{}",
        b.run.stderr
    );
    let total = b.report["sync_points"]
        .as_u64()
        .expect("the process's sync points");
    let queues = b.report["queues"].as_array().expect("a queue table");
    let per_queue: Vec<u64> = queues
        .iter()
        .map(|q| q["sync_points"].as_u64().expect("a stream's sync points"))
        .collect();
    assert!(total > 100, "{}", b.report);
    assert_eq!(per_queue.iter().sum::<u64>(), total, "{}", b.report);
    assert_eq!(queues[0]["destroyed"], false, "{}", b.report);
}

#[test]
fn a_profile_counts_every_intercepted_call() {
    let b = under_baton(RUNTIME_LIKE, &["order"], &[("BATON_PROFILE", "on")]);
    let hooks = b.report["hooks"].as_array().expect("a hook table");
    let launches: u64 = hooks
        .iter()
        .filter(|h| {
            let call = h["call"].as_str().unwrap_or("");
            call.starts_with("cuLaunchKernel") || call.starts_with("cuLaunchCooperative")
        })
        .map(|h| h["calls"].as_u64().expect("a count"))
        .sum();
    assert_eq!(launches, launch_calls(&b.run.log) as u64, "{}", b.report);
    assert!(
        hooks.iter().all(|h| h["us"].as_f64() > Some(0.0)),
        "{}",
        b.report
    );
    // Launches made from the app's thread also say how much of their time the real driver
    // took: part of the hook's time, never more.
    let launch = hooks
        .iter()
        .find(|h| h["call"] == "cuLaunchKernel")
        .expect("cuLaunchKernel profiled");
    let measured = launch["driver_calls"].as_u64().unwrap_or(0);
    assert!(
        measured > 0 && measured <= launch["calls"].as_u64().unwrap_or(0),
        "{launch}"
    );
    assert!(
        launch["driver_us"].as_f64().unwrap_or(0.0) < launch["us"].as_f64().unwrap_or(0.0),
        "{launch}"
    );
    // Passed straight through, every call's driver time is measured.
    let off = under_baton(
        RUNTIME_LIKE,
        &["order"],
        &[("BATON_PROFILE", "on"), ("BATON_ENABLE", "off")],
    );
    let launch = off.report["hooks"]
        .as_array()
        .and_then(|hooks| hooks.iter().find(|h| h["call"] == "cuLaunchKernel"))
        .expect("cuLaunchKernel profiled")
        .clone();
    assert_eq!(launch["driver_calls"], launch["calls"], "{launch}");
    // Off by default: nothing is counted.
    let quiet = under_baton(RUNTIME_LIKE, &["order"], &[]);
    assert_eq!(
        quiet.report["hooks"],
        serde_json::json!([]),
        "{}",
        quiet.report
    );
}

#[test]
fn dlsym_and_linked_applications_are_scheduled_too() {
    let native = run(env!("CARGO_BIN_EXE_dlsym-direct"), &[], &[]);
    let b = under_baton(
        env!("CARGO_BIN_EXE_dlsym-direct"),
        &[],
        &[("BATON_THRESHOLD", "2"), ("BATON_BATCH", "1")],
    );
    assert_eq!(b.run.line(), native.line());
    check_log("dlsym-direct", &b.run.log, &native.log);
    assert_eq!(
        b.report["kernels"].as_u64(),
        Some(launch_calls(&native.log) as u64)
    );

    let linked = linked_program().to_str().expect("a UTF-8 path").to_owned();
    let native = run(&linked, &[], &[]);
    let b = under_baton(
        &linked,
        &[],
        &[("BATON_THRESHOLD", "1"), ("BATON_BATCH", "1")],
    );
    assert_eq!(b.run.line(), native.line());
    check_log("linked", &b.run.log, &native.log);
    assert!(
        b.report["kernels"].as_u64().unwrap_or(0) > 0,
        "{}",
        b.report
    );
}

/// A function attribute changed while a launch of it is held back (behind a 300 ms kernel, in
/// a window of one): a preference, a raised limit and a lowered one all leave it held, and the
/// held launch, asking for more than the lowered limit, is made with the limit raised around
/// it; the result is native's (a launch over the limit would not run: the fake driver checks).
/// Each round's three changes come microseconds after the launch, so normally the launch is
/// held in all of them; were the thread stalled past the kernel in every round, nothing would
/// be held and the held-over count would be zero. Nothing is ever launched early for them.
#[test]
fn attribute_changes_leave_held_launches_held() {
    let native = run(RUNTIME_LIKE, &["attributes-held"], &[]);
    assert_eq!(native.line(), "attributes-held ok values=33,33,33,33");
    let b = under_baton(
        RUNTIME_LIKE,
        &["attributes-held"],
        &[
            ("BATON_THRESHOLD", "1"),
            ("BATON_BATCH", "1"),
            ("BATON_KEEP_WINDOW", "on"),
        ],
    );
    assert_eq!(b.run.line(), native.line(), "{}", b.run.stderr);
    check_log("attributes-held", &b.run.log, &native.log);
    assert_eq!(
        b.report["attribute_flushes"].as_u64(),
        Some(0),
        "{}",
        b.report
    );
    // The held launch's library kernel told its limit through the kernel calls.
    assert_eq!(
        b.report["attribute_limits_unknown"].as_u64(),
        Some(0),
        "{}",
        b.report
    );
    let held_over = b.report["attribute_changes_held_over"]
        .as_u64()
        .expect("held over");
    assert!(
        held_over >= 3 && held_over % 3 == 0,
        "each round that held the launch held it over all three changes: {}",
        b.report
    );
}

/// In the `priority` scenario's log: how many low-priority kernels started while the
/// high-priority burst ran, and how many low-priority kernels ran in all.
fn burst_overlap(log: &Log) -> (usize, usize) {
    let tag = |l: &Value| l["args"][2].as_i64().expect("an append_tag tag");
    let kernels = log.kernels("append_tag");
    let high: Vec<&&Value> = kernels.iter().filter(|l| tag(l) < 100).collect();
    let start = high
        .iter()
        .map(|l| num(l, "start_ns"))
        .min()
        .expect("high ran");
    let end = high
        .iter()
        .map(|l| num(l, "end_ns"))
        .max()
        .expect("high ran");
    let low: Vec<&&Value> = kernels.iter().filter(|l| tag(l) >= 100).collect();
    let during = low
        .iter()
        .filter(|l| (start..end).contains(&num(l, "start_ns")))
        .count();
    (during, low.len())
}

#[test]
fn a_high_priority_stream_makes_a_low_priority_one_yield() {
    let kernel_us = [("FAKE_CUDA_KERNEL_US", "3000")];
    let overlap = burst_overlap;
    let native = run(RUNTIME_LIKE, &["priority"], &kernel_us);
    assert_eq!(native.line(), "priority ok low=12 high=8");
    let (native_during, _) = overlap(&native.log);
    let mut env = kernel_us.to_vec();
    // The high stream has had no work when the low one launches, so HPF leaves the low one
    // unbounded (an unused stream of the same program does not count: PyTorch creates pools
    // of them); keeping the window bounds what the high stream's first burst waits for.
    env.extend([
        ("BATON_THRESHOLD", "2"),
        ("BATON_BATCH", "1"),
        ("BATON_KEEP_WINDOW", "on"),
    ]);
    let b = under_baton(RUNTIME_LIKE, &["priority"], &env);
    assert_eq!(b.run.line(), "priority ok low=12 high=8");
    check_log("priority", &b.run.log, &native.log);
    let (baton_during, low) = overlap(&b.run.log);
    assert_eq!(low, 12, "every low-priority kernel still ran");
    // Natively the low stream keeps starting kernels through the burst; under Baton it stops
    // launching as soon as the high stream is ready, so only what was already in flight starts.
    assert!(
        native_during >= 5,
        "natively only {native_during} overlapped"
    );
    assert!(
        baton_during <= 2,
        "{baton_during} low-priority kernels started during the burst"
    );
}

#[test]
fn at_level_two_a_low_priority_stream_stops_within_one_command() {
    // Every low-priority kernel is launched before the burst (nothing suspends the low
    // stream yet, so it runs without a window): at Level 1 they all still run through the
    // burst; at Level 2 the gate in front of each stops the stream after the running one.
    let kernel_us = [("FAKE_CUDA_KERNEL_US", "3000")];
    let during = burst_overlap;
    let native = run(RUNTIME_LIKE, &["priority"], &kernel_us);
    let mut env = kernel_us.to_vec();
    env.push(("BATON_LEVEL", "2"));
    let b = under_baton(RUNTIME_LIKE, &["priority"], &env);
    assert_eq!(b.run.line(), native.line(), "stderr {}", b.run.stderr);
    assert!(b.run.stderr.is_empty(), "{}", b.run.stderr);
    let (baton_during, low) = during(&b.run.log);
    assert_eq!(low, 12, "every low-priority kernel still ran");
    assert!(
        baton_during <= 1,
        "{baton_during} low-priority kernels started during the burst at level 2"
    );
    let gates = b
        .run
        .log
        .lines
        .iter()
        .filter(|l| l["ev"] == "call" && l["fn"] == "cuStreamWaitValue32_v2")
        .count();
    assert!(gates >= 20, "only {gates} gate waits reached the driver");
    let l1 = under_baton(RUNTIME_LIKE, &["priority"], &kernel_us);
    let (l1_during, _) = during(&l1.run.log);
    assert!(l1_during >= 3, "at level 1 only {l1_during} overlapped");
}

/// Runs `scenario` natively (expecting `line`) and then under Baton with `base` plus each of
/// `variants`: each must print the native line (and so finish: a hang fails the run).
fn same_line_under(
    scenario: &str,
    line: &str,
    base: &[(&str, &str)],
    variants: &[&[(&str, &str)]],
) {
    let native = run(RUNTIME_LIKE, &[scenario], base);
    assert_eq!(native.line(), line);
    for v in variants {
        let mut env = base.to_vec();
        env.extend_from_slice(v);
        let b = under_baton(RUNTIME_LIKE, &[scenario], &env);
        assert_eq!(
            b.run.line(),
            line,
            "{scenario} with {v:?}: stderr {}",
            b.run.stderr
        );
    }
}

#[test]
fn loading_a_kernel_opens_the_gates_it_waits_for() {
    // With lazy loading, a kernel's first launch waits for all pending work of its context
    // (as on the GPU: scripts/gpu/levels/gate_calls.sh). At Level 2 a suspended stream's launched
    // work sits behind its closed gate: the launch must open it, or it never returns.
    same_line_under(
        "lazy-gated",
        "lazy-gated ok low=12 high=8",
        &[
            ("FAKE_CUDA_KERNEL_US", "2000"),
            ("FAKE_CUDA_LAZY_LOADING", "1"),
        ],
        &[&[("BATON_LEVEL", "1")], &[("BATON_LEVEL", "2")]],
    );
}

#[test]
fn a_dependency_baton_cannot_see_never_hangs_the_program() {
    // `hidden-wait`: the high stream waits on the device for a word the low stream writes.
    // While the high stream has work the low one is suspended (at Level 2 behind its gate; at
    // Level 1 with a kept window, its write still buffered): only the liveness guard, seeing
    // nothing progress, lets it through.
    let small = [("BATON_THRESHOLD", "2"), ("BATON_BATCH", "1")];
    let v = |level, keep| {
        [
            small[0],
            small[1],
            ("BATON_LEVEL", level),
            ("BATON_KEEP_WINDOW", keep),
        ]
    };
    same_line_under(
        "hidden-wait",
        "hidden-wait ok low=12 high=8",
        &[("FAKE_CUDA_KERNEL_US", "2000")],
        &[&v("1", "on"), &v("2", "off"), &v("2", "on")],
    );
}

#[test]
fn threads_sharing_an_interpreter_lock_never_hang() {
    // `gil`: the best-effort thread blocks inside a launch (a full buffer while suspended)
    // holding the lock the latency-critical thread needs to launch at all.
    let v = |level, buffered| [("BATON_LEVEL", level), ("BATON_MAX_BUFFERED", buffered)];
    same_line_under(
        "gil",
        "gil ok be=384 hp=32",
        &[("FAKE_CUDA_KERNEL_US", "300")],
        &[&v("1", "4"), &v("1", "1024"), &v("2", "4"), &v("2", "1024")],
    );
}

#[test]
fn a_stall_report_says_which_queues_hold_work() {
    // Kernels of 1.2 s each: for over a second nothing completes while work is pending.
    let env = [
        ("FAKE_CUDA_KERNEL_US", "1200000"),
        ("BATON_STALL_REPORT_S", "1"),
    ];
    let b = under_baton(RUNTIME_LIKE, &["exit-pending"], &env);
    assert_eq!(b.run.line(), "exit-pending launched=4");
    assert!(
        b.run.stderr.contains("made progress for")
            && b.run.stderr.contains("launched not known complete")
            && b.run.stderr.contains("running"),
        "{}",
        b.run.stderr
    );
    // Without the setting, nothing is printed.
    let quiet = under_baton(
        RUNTIME_LIKE,
        &["exit-pending"],
        &[("FAKE_CUDA_KERNEL_US", "300000")],
    );
    assert!(quiet.run.stderr.is_empty(), "{}", quiet.run.stderr);
}

#[test]
fn at_level_two_a_stream_waiting_on_a_gated_stream_does_not_hang() {
    // `gated-wait`: the high-priority stream waits for an event whose record the low stream
    // launched before it was gated; the gate must reopen until the record completes. The
    // cross-stream scenarios too, with tiny windows; every result is native.
    let kernel_us = [("FAKE_CUDA_KERNEL_US", "2000")];
    let native = run(RUNTIME_LIKE, &["gated-wait"], &kernel_us);
    assert_eq!(native.line(), "gated-wait ok low=12 high=8");
    let mut env = kernel_us.to_vec();
    env.push(("BATON_LEVEL", "2"));
    let b = under_baton(RUNTIME_LIKE, &["gated-wait"], &env);
    assert_eq!(b.run.line(), native.line(), "stderr {}", b.run.stderr);
    // `ctx-sync-gated`: the whole context is synchronized while the low stream is gated.
    let native = run(RUNTIME_LIKE, &["ctx-sync-gated"], &kernel_us);
    assert_eq!(native.line(), "ctx-sync-gated ok low=12 high=8");
    let b = under_baton(RUNTIME_LIKE, &["ctx-sync-gated"], &env);
    assert_eq!(b.run.line(), native.line(), "stderr {}", b.run.stderr);
    // Also with the low stream's commands held back in its buffer when it is suspended, at
    // both levels: synchronizing the context must launch them, suspended or not.
    // The high stream, which nothing can suspend, runs without a window (no sync points):
    // only the synchronizing thread could see its work complete.
    for (level, keep) in [("1", "on"), ("1", "off"), ("2", "on"), ("2", "off")] {
        let mut env = kernel_us.to_vec();
        env.extend([
            ("BATON_LEVEL", level),
            ("BATON_THRESHOLD", "2"),
            ("BATON_BATCH", "1"),
            ("BATON_KEEP_WINDOW", keep),
        ]);
        let b = under_baton(RUNTIME_LIKE, &["ctx-sync-gated"], &env);
        assert_eq!(
            b.run.line(),
            native.line(),
            "level {level}, keep window {keep}: stderr {}",
            b.run.stderr
        );
    }
    for scenario in ["events", "legacy", "order"] {
        let native = run(RUNTIME_LIKE, &[scenario], &[]);
        let b = under_baton(
            RUNTIME_LIKE,
            &[scenario],
            &[
                ("BATON_LEVEL", "2"),
                ("BATON_THRESHOLD", "2"),
                ("BATON_BATCH", "1"),
                ("BATON_KEEP_WINDOW", "on"),
            ],
        );
        assert_eq!(b.run.line(), native.line(), "{scenario}: {}", b.run.stderr);
    }
}

#[test]
fn disabled_baton_passes_every_call_through() {
    let native = run(RUNTIME_LIKE, &["order"], &[]);
    let b = under_baton(RUNTIME_LIKE, &["order"], &[("BATON_ENABLE", "off")]);
    assert_eq!(b.run.line(), native.line());
    assert_eq!(b.report["commands"].as_u64(), Some(0), "{}", b.report);
    assert_eq!(b.report["enabled"], false);
    assert_eq!(b.report["schema"], "baton.interposer-report/1");
}

#[test]
fn invalid_settings_warn_once_and_the_application_runs() {
    let native = run(RUNTIME_LIKE, &["order"], &[]);
    let b = under_baton(
        RUNTIME_LIKE,
        &["order"],
        &[("BATON_THRESHOLD", "lots"), ("BATON_LEVEL", "9")],
    );
    assert_eq!(b.run.line(), native.line());
    let lines: Vec<&str> = b.run.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines.iter().all(|l| l.starts_with("baton: ignoring")),
        "{lines:?}"
    );
}

#[test]
fn a_baton_that_cannot_start_says_so_once_and_the_application_runs_natively() {
    let native = run(RUNTIME_LIKE, &["order"], &[]);
    let missing = [("BATON_CUDA_LIB", "/nonexistent/libcuda.so.1")];
    let b = under_baton(RUNTIME_LIKE, &["order"], &missing);
    assert_eq!(b.run.line(), native.line());
    let lines: Vec<&str> = b.run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("baton: cannot open the CUDA driver /nonexistent/libcuda.so.1")
            && lines[0].ends_with("; running without Baton"),
        "{lines:?}"
    );
    // The notice is a log event like any other: BATON_LOG=off silences it.
    let quiet = under_baton(
        RUNTIME_LIKE,
        &["order"],
        &[missing[0], ("BATON_LOG", "off")],
    );
    assert_eq!(quiet.run.line(), native.line());
    assert!(quiet.run.stderr.is_empty(), "{}", quiet.run.stderr);
}

#[test]
fn a_library_that_is_not_a_cuda_driver_is_refused_and_the_application_runs_natively() {
    // `BATON_CUDA_LIB` naming a library that opens but is no driver (here the C library,
    // by the absolute path this process loaded it from): Baton must not forward the
    // application's calls into it.
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let libc = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.contains("/libc.so") || p.contains("/libc-"))
        .expect("the C library in this process's maps");
    let native = run(RUNTIME_LIKE, &["order"], &[]);
    let b = under_baton(RUNTIME_LIKE, &["order"], &[("BATON_CUDA_LIB", libc)]);
    assert_eq!(b.run.line(), native.line());
    let lines: Vec<&str> = b.run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with(&format!("baton: {libc} is not a CUDA driver"))
            && lines[0].ends_with("; running without Baton"),
        "{lines:?}"
    );
}

#[test]
fn capture_passes_through_and_graph_launches_are_scheduled() {
    let b = under_baton(
        RUNTIME_LIKE,
        &["capture"],
        &[("BATON_THRESHOLD", "1"), ("BATON_BATCH", "1")],
    );
    let native = run(RUNTIME_LIKE, &["capture"], &[]);
    assert_eq!(b.run.line(), native.line());
    assert!(
        b.report["bypassed"].as_u64().unwrap_or(0) > 0,
        "{}",
        b.report
    );
    assert!(
        b.report["graph_launches"].as_u64().unwrap_or(0) > 0,
        "{}",
        b.report
    );
}

/// `baton run` makes a program at priority 0 or under a below-normal MPS client, leaves one
/// above normal, and never overrides a level the caller chose.
#[test]
fn baton_run_sets_the_mps_client_priority_from_the_program_priority() {
    let baton = baton_binary().to_str().expect("a UTF-8 path").to_owned();
    let lib = interposer_library()
        .to_str()
        .expect("a UTF-8 path")
        .to_owned();
    let level = |priority: &[&str], env: &[(&str, &str)]| {
        let mut args = vec!["run", "--local", "--interposer", &lib];
        args.extend_from_slice(priority);
        args.extend(["--", "sh", "-c", "echo \"[$CUDA_MPS_CLIENT_PRIORITY]\""]);
        let r = run(&baton, &args, env);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        r.stdout.trim().to_owned()
    };
    assert_eq!(level(&["--priority", "0"], &[]), "[1]");
    assert_eq!(level(&["--priority", "-3"], &[]), "[1]");
    assert_eq!(level(&[], &[]), "[1]");
    assert_eq!(level(&["--priority", "10"], &[]), "[]");
    assert_eq!(level(&[], &[("BATON_PRIORITY", "10")]), "[]");
    assert_eq!(
        level(&["--priority", "0"], &[("CUDA_MPS_CLIENT_PRIORITY", "0")]),
        "[0]"
    );
}

#[test]
fn baton_run_schedules_a_program_and_exits_with_its_status() {
    let baton = baton_binary().to_str().expect("a UTF-8 path").to_owned();
    let lib = interposer_library()
        .to_str()
        .expect("a UTF-8 path")
        .to_owned();
    let report = temp_dir("baton-run").join("report.json");
    let report_s = report.to_str().expect("a UTF-8 path").to_owned();
    // `baton run` starts a daemon when none answers: keep it on a socket of this test's own.
    let socket = temp_dir("baton-run-daemon").join("baton.sock");
    let socket_s = socket.to_str().expect("a UTF-8 path").to_owned();
    let args = [
        "run",
        "--interposer",
        &lib,
        "--threshold",
        "2",
        "--batch",
        "1",
        "--keep-window",
        "--priority",
        "5",
        "--",
        RUNTIME_LIKE,
        "order",
    ];
    let native = run(RUNTIME_LIKE, &["order"], &[]);
    // Kernels long enough that the two-command window fills however slowly the app runs.
    let b = run(
        &baton,
        &args,
        &[
            ("BATON_REPORT", &report_s),
            ("BATON_SOCKET", &socket_s),
            ("FAKE_CUDA_KERNEL_US", "1000"),
        ],
    );
    assert_eq!(b.line(), native.line());
    let rep: Value =
        serde_json::from_str(std::fs::read_to_string(&report).unwrap().trim()).unwrap();
    assert!(rep["deferred"].as_u64().unwrap_or(0) > 0, "{rep}");
    // The program's exit status is baton run's.
    let failing = run(
        &baton,
        &[
            "run",
            "--interposer",
            &lib,
            "--",
            RUNTIME_LIKE,
            "no-such-scenario",
        ],
        &[("BATON_SOCKET", &socket_s)],
    );
    assert_eq!(
        failing.code,
        run(RUNTIME_LIKE, &["no-such-scenario"], &[]).code
    );
    assert_ne!(failing.code, Some(0));
    // Bad settings are refused before anything runs.
    let bad = run(
        &baton,
        &[
            "run",
            "--interposer",
            &lib,
            "--priority",
            "500",
            "--",
            RUNTIME_LIKE,
            "order",
        ],
        &[],
    );
    assert_ne!(bad.code, Some(0));
    assert!(bad.stderr.contains("priority"), "{}", bad.stderr);
    assert!(
        bad.log.lines.is_empty(),
        "the program must not have started"
    );
}

#[test]
fn a_report_path_ending_with_a_slash_gets_one_file_per_process() {
    // Two processes of one run given the same `BATON_REPORT=DIR/`: the directory is made and
    // each writes its own report, instead of the second overwriting the first.
    let dir = temp_dir("report-dir").join("reports/");
    let dir_s = dir.to_str().expect("a UTF-8 path").to_owned();
    let preload = interposer_library()
        .to_str()
        .expect("a UTF-8 path")
        .to_owned();
    let env = [
        ("LD_PRELOAD", preload.as_str()),
        ("BATON_REPORT", dir_s.as_str()),
    ];
    for _ in 0..2 {
        run(RUNTIME_LIKE, &["order"], &env).line();
    }
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("the report directory was made")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    for n in &names {
        assert!(
            n.starts_with("baton-report-") && n.ends_with(".json"),
            "{n}"
        );
        let text = std::fs::read_to_string(dir.join(n)).unwrap();
        let rep: Value = serde_json::from_str(text.trim()).unwrap();
        assert!(rep["kernels"].as_u64().unwrap_or(0) > 0, "{rep}");
    }
}
