//! The GPU demo's four phases without a GPU: the clients are a script standing in for the
//! `baton` binary, writing the results a real client would, so what the parent starts, in
//! which order, under which `baton run` options, and how it reads the results is checked.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use baton_demo::gpu::{self, GpuDemoError, GpuPlan};
use baton_demo::{DemoDevice, Phase};

/// A stand-in for `baton`: `run OPTIONS -- EXE ARGS` runs ARGS; `demo --gpu-worker ROLE
/// --worker-out OUT …` writes a result whose numbers depend on the phase (OUT's name); a BE
/// client given `--ready-file R --stop-file S` creates R, then waits for S; `daemon --stop`
/// exits. Every call is appended to `log`. With `fail_paired`, a BE client given a ready file
/// exits 1 at once.
fn fake_baton(dir: &Path, log: &Path, fail_paired: bool) -> PathBuf {
    let script = format!(
        r#"#!/bin/sh
log='{log}'
echo "$* socket=$BATON_SOCKET" >> "$log"
if [ "$1" = run ]; then
    while [ "$1" != -- ]; do shift; done
    shift 2
fi
if [ "$1" = daemon ]; then exit 0; fi
role=$3; out=$5; ready=; stop=
while [ $# -gt 0 ]; do
    case "$1" in
        --ready-file) ready=$2 ;;
        --stop-file) stop=$2 ;;
    esac
    shift
done
phase=$(basename "$out" .json)
case "$phase" in
    alone-hp) p50=100; p99=120 ;;
    native-hp) p50=300; p99=600 ;;
    baton-hp) p50=105; p99=125 ;;
    alone-be) tput=1.0 ;;
    native-be) tput=0.6 ;;
    baton-be) tput=0.5 ;;
esac
if [ "$role" = hp ]; then
    printf '{{"schema":"baton.demo.gpu-hp/1","requests":10,"p50_us":%s,"p99_us":%s,"busy_fraction":0.4}}' $p50 $p99 > "$out"
    exit 0
fi
if [ -n "$ready" ]; then
    {fail}
    : > "$ready"
    while [ ! -e "$stop" ]; do sleep 0.01; done
fi
printf '{{"schema":"baton.demo.gpu-be/1","kernels":50,"throughput":%s,"iters_per_us":2.0}}' $tput > "$out"
"#,
        log = log.display(),
        fail = if fail_paired { "exit 1" } else { ":" },
    );
    let path = dir.join(if fail_paired {
        "baton-failing"
    } else {
        "baton"
    });
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn plan() -> GpuPlan {
    GpuPlan {
        seconds: 0.5,
        hp_kernels: 40,
        hp_kernel_us: (20, 80),
        hp_period_ms: 5.0,
        be_kernel_us: (1000, 5000),
        be_depth: 32,
        seed: 1,
    }
}

#[test]
fn four_phases_each_with_its_clients_and_options() {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("gpu-clients-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("calls.log");

    let mut phases = Vec::new();
    let summary = gpu::run(&plan(), &fake_baton(&dir, &log, false), &mut |p| {
        assert_eq!((p.index, p.count), (phases.len(), 4));
        phases.push(p.phase);
    })
    .unwrap();
    assert_eq!(phases, Phase::ALL);
    assert_eq!(summary.device, DemoDevice::Gpu);
    assert!(summary.simulated.is_none());
    let f = &summary.figures;
    assert_eq!((f.hp_alone_p50_us, f.hp_alone_p99_us), (100.0, 120.0));
    assert_eq!((f.hp_native_p50_us, f.hp_native_p99_us), (300.0, 600.0));
    assert_eq!((f.hp_baton_p50_us, f.hp_baton_p99_us), (105.0, 125.0));
    assert_eq!(
        (f.be_alone_tput, f.be_native_tput, f.be_baton_tput),
        (1.0, 0.6, 0.5)
    );
    assert_eq!(f.hp_busy_fraction, 0.4);

    let calls = std::fs::read_to_string(&log).unwrap();
    let calls: Vec<&str> = calls.lines().collect();
    let flags = plan().args().join(" ");
    assert_eq!(calls.len(), 7, "{calls:#?}");
    assert!(calls[0].starts_with("demo --gpu-worker hp --worker-out "));
    assert!(calls[0].contains(&flags), "{}", calls[0]);
    assert!(calls[1].starts_with("demo --gpu-worker be --worker-out "));
    assert!(!calls[1].contains("--ready-file"));
    // Native: BE first (with its ready and stop files), then HP.
    assert!(calls[2].starts_with("demo --gpu-worker be ") && calls[2].contains("--stop-file"));
    assert!(calls[3].starts_with("demo --gpu-worker hp "));
    // Under Baton: the same through `baton run`, then the daemon is stopped.
    assert!(
        calls[4].starts_with("run --priority 0 --level 3 -- "),
        "{}",
        calls[4]
    );
    assert!(
        calls[5].starts_with("run --priority 10 -- "),
        "{}",
        calls[5]
    );
    assert!(
        calls[6].starts_with("daemon --stop --socket "),
        "{}",
        calls[6]
    );
    // Every client talks to the run's own daemon.
    let socket = calls[0].rsplit("socket=").next().unwrap();
    assert!(socket.ends_with("baton.sock"), "{socket}");
    assert!(calls[..6].iter().all(|c| c.ends_with(socket)));
    assert!(calls[6].contains(socket));

    // A BE client that dies before it is ready stops the run with a message saying so.
    let e = gpu::run(&plan(), &fake_baton(&dir, &log, true), &mut |_| {}).unwrap_err();
    assert!(matches!(e, GpuDemoError::NotReady(_)), "{e}");
    assert_eq!(
        e.to_string(),
        "the BE client stopped before it was ready (exit status: 1)"
    );
    // A binary that does not exist cannot start the first client.
    let e = gpu::run(&plan(), &dir.join("missing"), &mut |_| {}).unwrap_err();
    assert!(e.to_string().starts_with("starting the hp client: "), "{e}");
    let _ = std::fs::remove_dir_all(
        std::env::temp_dir().join(format!("baton-gpu-demo-{}", std::process::id())),
    );
    std::fs::remove_dir_all(&dir).ok();
}
