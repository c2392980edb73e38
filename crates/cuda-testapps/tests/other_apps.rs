//! The other ways applications reach the driver: `dlsym` by name, and linking with `-lcuda`;
//! and the fake driver's `FAKE_CUDA_KERNEL_US`.

mod support;

use std::process::Command;

use support::{driver_dir, num, run, temp_dir};

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
    let dir = temp_dir("linked");
    let exe = dir.join("linked");
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/linked.c");
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&compiler)
        .args(["-std=c99", "-Wall", "-Werror", "-O1", source, "-o"])
        .arg(&exe)
        .arg("-L")
        .arg(driver_dir())
        .arg("-lcuda")
        .status()
        .unwrap_or_else(|e| panic!("run the C compiler {compiler:?} (needed by this test): {e}"));
    assert!(status.success(), "compiling linked.c failed: {status}");
    let run = run(exe.to_str().expect("a UTF-8 path"), &[], &[]);
    assert_eq!(run.line(), "linked ok streams=2 tags=20 sum=391808");
    run.log.assert_streams_fifo();
    run.log.assert_launches_executed();
    assert!(run.log.called("cuCtxCreate_v2") && run.log.called("cuLaunchKernel"));
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
