//! The other ways applications reach the driver: `dlsym` by name, and linking with `-lcuda`;
//! and the fake driver's `FAKE_CUDA_KERNEL_US`.

mod support;

use std::path::Path;

use support::{compile_c, linked_program, num, run};

fn path(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

#[test]
fn dlsym_direct_runs_the_order_scenario() {
    let run = run(env!("CARGO_BIN_EXE_dlsym-direct"), &[], &[]);
    assert_eq!(
        run.line(),
        "order ok streams=3 commands=288 checksum=55bad48ed06ffc44"
    );
    let log = &run.log;
    log.assert_streams_fifo();
    log.assert_launches_executed();
    log.assert_no_errors();
    for symbol in [
        "cuLaunchKernel",
        "cuMemAlloc_v2",
        "cuCtxCreate_v2",
        "cuMemcpyDtoHAsync_v2",
        "cuStreamDestroy",
    ] {
        assert!(log.called(symbol), "{symbol} was not entered");
    }
    assert!(
        !log.calls()
            .iter()
            .any(|c| c.starts_with("cuGetProcAddress")),
        "dlsym-direct must not use cuGetProcAddress"
    );
}

#[test]
fn a_program_linked_with_lcuda_runs() {
    let run = run(path(linked_program()), &[], &[]);
    assert_eq!(run.line(), "linked ok streams=2 tags=20 sum=391808");
    run.log.assert_streams_fifo();
    run.log.assert_launches_executed();
    assert!(run.log.called("cuCtxCreate_v2") && run.log.called("cuLaunchKernel"));
}

#[test]
fn a_preloaded_library_does_not_capture_the_fake_drivers_own_functions() {
    let preload = compile_c("preload.c", "libpreload.so", &["-shared", "-fPIC"]);
    let env = [("LD_PRELOAD", path(&preload))];
    // Control: a program bound to cuLaunchKernel at link time calls the preloaded definition.
    let linked = run(path(linked_program()), &[], &env);
    assert_eq!(
        linked.code,
        Some(1),
        "the preload was not in effect:\n{}",
        linked.stdout
    );
    assert!(
        linked.stderr.contains("returned 12345"),
        "{}",
        linked.stderr
    );
    // cuGetProcAddress and dlsym on the driver's handle give the fake's own functions.
    for (app, args) in [
        (env!("CARGO_BIN_EXE_runtime-like"), &["legacy"][..]),
        (env!("CARGO_BIN_EXE_dlsym-direct"), &[][..]),
    ] {
        let run = run(app, args, &env);
        assert_eq!(run.code, Some(0), "{app}: {}", run.stderr);
        run.log.assert_launches_executed();
    }
}

#[test]
fn kernel_duration_can_be_extended() {
    let run = run(
        env!("CARGO_BIN_EXE_runtime-like"),
        &["legacy"],
        &[("FAKE_CUDA_KERNEL_US", "2000")],
    );
    assert_eq!(run.line(), "legacy ok log=0,1,2,3 b2_before=600");
    let kernels: Vec<_> = run
        .log
        .execs()
        .into_iter()
        .filter(|l| l["op"] == "kernel")
        .collect();
    assert_eq!(kernels.len(), 4);
    for kernel in kernels {
        assert!(
            num(kernel, "end_ns") - num(kernel, "start_ns") >= 2_000_000,
            "{kernel}"
        );
    }
}

#[test]
fn doctor_claims_level_three_only_when_its_self_test_sees_it() {
    // The fake driver makes no resource-manager calls: the self-test runs under the
    // interposer, finds no channel group, and level 3 is reported unavailable with the reason.
    let out = std::process::Command::new(support::baton_binary())
        .args(["doctor", "--json", "--cuda-lib"])
        .arg(support::fake_library())
        .arg("--interposer")
        .arg(support::interposer_library())
        .env("BATON_SOCKET", "/nonexistent/baton.sock")
        .output()
        .expect("baton runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("doctor prints JSON");
    let levels = &v["driver"]["devices"][0]["levels"];
    assert_eq!(levels[0]["supported"], true, "{v}");
    assert_eq!(levels[2]["level"], 3, "{v}");
    assert_eq!(levels[2]["supported"], false, "{v}");
    let how = levels[2]["how"].as_str().unwrap_or("");
    assert!(how.contains("channel group was not seen"), "{how}");
    // Level 2 is claimed after its self-test: the fake driver honours stream-memory waits.
    assert_eq!(levels[1]["level"], 2, "{v}");
    assert_eq!(levels[1]["supported"], true, "{v}");
    assert_eq!(levels[1]["self_test"]["held_50ms"], true, "{v}");
    // Spatial sharing is claimed after its self-test: the fake driver's SM probe reports the
    // SMs of the green context it ran on (8 of 132).
    let sp = &v["driver"]["devices"][0]["spatial"];
    assert_eq!(sp["available"], true, "{v}");
    assert_eq!(sp["self_test"]["partition_sms"], 8, "{v}");
    assert_eq!(sp["self_test"]["sms_used_confined"], 8, "{v}");
    assert_eq!(sp["self_test"]["sms_used_whole"], 132, "{v}");
    assert_eq!(sp["self_test"]["all_blocks_ran"], true, "{v}");
}

#[test]
fn doctor_without_self_tests_claims_neither_level_two_nor_spatial() {
    let out = std::process::Command::new(support::baton_binary())
        .args(["doctor", "--json", "--no-self-test", "--cuda-lib"])
        .arg(support::fake_library())
        .env("BATON_SOCKET", "/nonexistent/baton.sock")
        .output()
        .expect("baton runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("doctor prints JSON");
    let dev = &v["driver"]["devices"][0];
    assert_eq!(dev["levels"][1]["supported"], false, "{v}");
    assert_eq!(dev["spatial"]["available"], false, "{v}");
    assert!(
        dev["spatial"]["how"]
            .as_str()
            .unwrap_or("")
            .contains("8 of 132 SMs can be made"),
        "{v}"
    );
}

#[test]
fn the_demo_runs_on_a_cuda_device_when_there_is_one() {
    // With a driver and a device (here the fake one, which runs Baton's PTX kernels by name),
    // `baton demo` runs its four phases as real processes — the Baton phase under `baton run`
    // with the interposer and a daemon of its own — and reports every field.
    let out = std::process::Command::new(support::baton_binary())
        .args(["demo", "--json", "--duration-s", "0.5"])
        .env("LD_LIBRARY_PATH", support::driver_dir())
        .env("BATON_INTERPOSER", support::interposer_library())
        .env_remove("BATON_SOCKET")
        .output()
        .expect("baton runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the demo prints JSON");
    assert_eq!(v["device"], "gpu", "{v}");
    for k in [
        "hp_alone_p99_us",
        "hp_native_p99_us",
        "hp_baton_p99_us",
        "be_alone_tput",
        "be_native_tput",
        "be_baton_tput",
        "hp_busy_fraction",
    ] {
        assert!(v[k].as_f64().is_some_and(|x| x > 0.0), "{k} in {v}");
    }
}

#[test]
fn the_report_says_when_a_held_thread_held_pythons_lock() {
    // A low-priority launch held back (its buffer full while a high-priority kernel runs) from
    // Python: through ctypes.PyDLL the thread keeps the interpreter lock, through ctypes.CDLL
    // it does not. The report counts the holds, and which of them held the lock.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/python_lock.py");
    for (how, with_lock) in [("pydll", true), ("cdll", false)] {
        let report = support::temp_dir("python-lock").join("report.json");
        let out = std::process::Command::new("python3")
            .arg(&script)
            .arg(how)
            .env("LD_LIBRARY_PATH", support::driver_dir())
            .env("LD_PRELOAD", support::interposer_library())
            .env("BATON_REPORT", &report)
            .env("BATON_MAX_BUFFERED", "2")
            .env_remove("BATON_SOCKET")
            .output()
            .expect("python3 runs (CI installs it)");
        assert!(
            out.status.success(),
            "{how}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "python-lock ok"
        );
        let text = std::fs::read_to_string(&report).expect("a report");
        let v: serde_json::Value =
            serde_json::from_str(text.lines().last().expect("a line")).expect("JSON");
        let held = v["submitter_held"].as_u64().expect("a count");
        let locked = v["held_with_python_lock"].as_u64().expect("a count");
        assert!(held >= 1, "{how}: {v}");
        if with_lock {
            assert_eq!(locked, held, "{how}: {v}");
        } else {
            assert_eq!(locked, 0, "{how}: {v}");
        }
    }
}
