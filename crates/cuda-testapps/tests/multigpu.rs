//! Several GPUs on the fake driver (`FAKE_CUDA_DEVICES`), with real processes under `baton
//! run` and one daemon: devices renumbered by `CUDA_VISIBLE_DEVICES` are the same GPU to the
//! daemon, processes on different GPUs never hold each other back, and the ranks of one job
//! (`BATON_GANG`) on two GPUs are held back and resumed together beside a latency-critical
//! process on one of them (`baton daemon --gang together`), where per-device scheduling leaves
//! the other rank busy-waiting.

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::{
    DECISIONS, baton_binary, burst_window, driver_dir, during_holds, finish, finish_with_stderr,
    hold_over, holds, interposer_library, launch_calls, log_lines, num, temp_dir, wait_until,
};

const RUNTIME_LIKE: &str = env!("CARGO_BIN_EXE_runtime-like");

/// `runtime-like devices` on four fake GPUs, natively.
#[test]
fn the_fake_driver_renumbers_devices_as_cuda_visible_devices_says() {
    let dir = temp_dir("devices");
    let run = |visible: Option<&str>, log: &Path| {
        let mut c = Command::new(RUNTIME_LIKE);
        c.arg("devices")
            .env("LD_LIBRARY_PATH", driver_dir())
            .env("FAKE_CUDA_DEVICES", "4")
            .env("FAKE_CUDA_LOG", log)
            .env_remove("CUDA_VISIBLE_DEVICES");
        if let Some(v) = visible {
            c.env("CUDA_VISIBLE_DEVICES", v);
        }
        let out = c.output().expect("run runtime-like");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let uuid = |i: u32| format!("GPU-{i:02x}ba704e-0000-4000-8000-0000000000{i:02x}");
    let all = run(None, &dir.join("all.log"));
    assert_eq!(
        all,
        format!(
            "devices n=4 0={} 1={} 2={} 3={}",
            uuid(0),
            uuid(1),
            uuid(2),
            uuid(3)
        )
    );
    // By index and by UUID prefix, in the list's order; the list ends at an unknown entry.
    let log = dir.join("visible.log");
    let some = run(Some("2,GPU-00ba,9,1"), &log);
    assert_eq!(some, format!("devices n=2 0={} 1={}", uuid(2), uuid(0)));
    // Ordinal 0's kernels (tags 0–3) ran on physical device 2, ordinal 1's (10–13) on 0.
    let mut ran: Vec<(i64, u64)> = log_lines(&log)
        .iter()
        .filter(|l| l["ev"] == "exec" && l["name"] == "append_tag")
        .map(|l| (l["args"][2].as_i64().unwrap_or(-1), num(l, "device")))
        .collect();
    ran.sort_unstable();
    assert_eq!(
        ran,
        [
            (0, 2),
            (1, 2),
            (2, 2),
            (3, 2),
            (10, 0),
            (11, 0),
            (12, 0),
            (13, 0)
        ]
    );
}

struct Setup<'a> {
    socket: &'a Path,
    go: &'a Path,
}

impl Setup<'_> {
    /// `runtime-like scenario` under `baton run --priority priority` on the GPUs `visible`.
    fn start(
        &self,
        scenario: &str,
        priority: &str,
        visible: &str,
        log: &Path,
        env: &[(&str, &str)],
    ) -> Child {
        let mut c = Command::new(baton_binary());
        c.args(["run", "--interposer"])
            .arg(interposer_library())
            .args(["--priority", priority, "--", RUNTIME_LIKE, scenario])
            .env("LD_LIBRARY_PATH", driver_dir())
            .env("FAKE_CUDA_DEVICES", "2")
            .env("CUDA_VISIBLE_DEVICES", visible)
            .env("FAKE_CUDA_LOG", log)
            .env("FAKE_CUDA_KERNEL_US", "2000")
            .env("BATON_SOCKET", self.socket)
            .env("BATON_TEST_GO", self.go)
            .env(DECISIONS.0, DECISIONS.1)
            .env_remove("BATON_GANG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            c.env(k, v);
        }
        c.spawn().expect("start baton run")
    }

    fn daemon(&self, gang: &str) -> Child {
        let d = Command::new(baton_binary())
            .args(["daemon", "--gang", gang, "--socket"])
            .arg(self.socket)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the daemon");
        wait_until("the daemon's socket", Duration::from_secs(20), || {
            self.socket.exists()
        });
        d
    }

    fn stop(&self, mut daemon: Child) {
        let _ = Command::new(baton_binary())
            .args(["daemon", "--stop", "--socket"])
            .arg(self.socket)
            .output();
        let _ = daemon.wait();
    }

    fn list(&self, by_device: bool) -> Value {
        let mut c = Command::new(baton_binary());
        c.args(["list", "--json", "--socket"]).arg(self.socket);
        if by_device {
            c.arg("--by-device");
        }
        c.output()
            .ok()
            .and_then(|o| serde_json::from_slice::<Value>(&o.stdout).ok())
            .unwrap_or(Value::Null)
    }

    /// Waits until process `pid` has a queue at the daemon.
    fn registered(&self, pid: u32) {
        wait_until(
            "a process's queues at the daemon",
            Duration::from_secs(20),
            || {
                self.list(false)["processes"].as_array().is_some_and(|ps| {
                    ps.iter().any(|p| {
                        p["pid"] == pid && p["queues"].as_array().is_some_and(|q| !q.is_empty())
                    })
                })
            },
        );
    }
}

#[test]
fn one_gpu_under_two_ordinals_is_one_device_and_other_gpus_run_free() {
    let dir = temp_dir("ordinals");
    let (socket, go) = (dir.join("baton.sock"), dir.join("go"));
    let s = Setup {
        socket: &socket,
        go: &go,
    };
    let daemon = s.daemon("independent");
    let (hp_log, be_log, free_log) = (dir.join("hp.log"), dir.join("be.log"), dir.join("free.log"));
    // The burst sees GPU 1 as its ordinal 0; the flood sees it as its ordinal 1.
    let hp = s.start("burst", "10", "1", &hp_log, &[]);
    s.registered(hp.id());
    let be = s.start("flood", "0", "0,1", &be_log, &[("BATON_TEST_DEVICE", "1")]);
    // Another flood on GPU 0 only.
    let free = s.start("flood", "0", "0", &free_log, &[]);
    wait_until(
        "both floods' first launches",
        Duration::from_secs(20),
        || {
            !launch_calls(&log_lines(&be_log)).is_empty()
                && !launch_calls(&log_lines(&free_log)).is_empty()
        },
    );
    let (be_pid, free_pid) = (be.id(), free.id());
    s.registered(be_pid);
    s.registered(free_pid);
    let devices = s.list(true);
    std::fs::write(&go, b"go").unwrap();
    assert_eq!(finish(hp, "burst"), "burst ok n=8");
    let (be_out, be_err) = finish_with_stderr(be, "flood on GPU 1");
    assert_eq!(be_out, "flood ok n=48");
    let (free_out, free_err) = finish_with_stderr(free, "flood on GPU 0");
    assert_eq!(free_out, "flood ok n=48");
    s.stop(daemon);

    // The daemon keys both processes on GPU 1 by its UUID, whatever their ordinals.
    let gpu1 = devices["devices"]
        .as_array()
        .and_then(|ds| {
            ds.iter()
                .find(|d| d["id"] == "GPU-01ba704e-0000-4000-8000-000000000001")
        })
        .unwrap_or_else(|| panic!("no GPU 1 in {devices:#}"));
    let ordinals: Vec<(u64, u64)> = gpu1["queues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| (num(q, "pid"), num(q, "ordinal")))
        .collect();
    assert!(ordinals.contains(&(u64::from(be_pid), 1)), "{devices:#}");
    assert!(ordinals.iter().any(|(_, o)| *o == 0), "{devices:#}");
    assert!(
        !ordinals.iter().any(|(p, _)| *p == u64::from(free_pid)),
        "{devices:#}"
    );

    // The flood on the burst's GPU was held over the burst, and nothing of it reached the
    // driver while held.
    let (_, end) = burst_window(&hp_log);
    let be_holds = holds(&be_err);
    let hold = hold_over(&be_holds, end)
        .unwrap_or_else(|| panic!("the flood on GPU 1 was not held over the burst: {be_holds:?}"));
    let leaked = during_holds(&launch_calls(&log_lines(&be_log)), &be_holds);
    assert!(
        leaked.is_empty(),
        "{} launches of the flood on the burst's GPU reached the driver while it was held",
        leaked.len()
    );
    // The flood on GPU 0 was never held for it, and ran meanwhile: its kernels executed
    // while the other was held.
    assert_eq!(
        hold_over(&holds(&free_err), end),
        None,
        "the flood on GPU 0 was held"
    );
    let ran = log_lines(&free_log)
        .iter()
        .filter(|l| l["ev"] == "exec" && l["name"] == "append_tag")
        .filter(|l| num(l, "start_ns") > hold.0 && num(l, "start_ns") < hold.1)
        .count();
    assert!(ran > 0, "the flood on the other GPU was held back too");
    assert!(
        log_lines(&free_log)
            .iter()
            .filter(|l| l["ev"] == "exec")
            .all(|l| num(l, "device") == 0),
        "the GPU 0 flood ran elsewhere"
    );
}

/// What one rank did beside the burst: its launch calls and holds (see [`support::holds`]),
/// and its output.
struct Rank {
    calls: Vec<u64>,
    holds: Vec<(u64, u64)>,
    out: String,
}

impl Rank {
    /// The hold over the burst's end, if the rank had one; then none of its launches reached
    /// the driver while it was held.
    fn held_over(&self, end: u64) -> Option<(u64, u64)> {
        let hold = hold_over(&self.holds, end)?;
        let leaked = during_holds(&self.calls, &self.holds);
        assert!(
            leaked.is_empty(),
            "{} launches of a held rank reached its driver",
            leaked.len()
        );
        Some(hold)
    }
}

/// Two ranks of one job on GPUs 0 and 1 meeting at a barrier after every step, beside a
/// burst on GPU 0; what each rank did, and the end of the burst.
fn gang_run(mode: &str) -> ([Rank; 2], u64) {
    let dir = temp_dir(&format!("gang-{mode}"));
    let (socket, go) = (dir.join("baton.sock"), dir.join("go"));
    let barrier = dir.join("barrier");
    std::fs::create_dir_all(&barrier).unwrap();
    let s = Setup {
        socket: &socket,
        go: &go,
    };
    let daemon = s.daemon(mode);
    let hp_log = dir.join("hp.log");
    let hp = s.start(
        "burst",
        "10",
        "0",
        &hp_log,
        // 80 ms of work.
        &[("FAKE_CUDA_KERNEL_US", "10000")],
    );
    s.registered(hp.id());
    let logs = [dir.join("rank0.log"), dir.join("rank1.log")];
    let bar = barrier.to_string_lossy().into_owned();
    let ranks: Vec<Child> = (0..2)
        .map(|r| {
            let rank = r.to_string();
            s.start(
                "rank",
                "0",
                &rank,
                &logs[r],
                &[
                    ("BATON_GANG", "train-job"),
                    ("BATON_TEST_RANK", &rank),
                    // A third member of the barrier, this test, holds both ranks at their
                    // first step until the daemon lists them: 40 steps take well under a
                    // second on an idle machine, less than listing them may take.
                    ("BATON_TEST_WORLD", "3"),
                    ("BATON_TEST_STEPS", "40"),
                    ("BATON_TEST_BARRIER", &bar),
                    ("FAKE_CUDA_KERNEL_US", "1000"),
                ],
            )
        })
        .collect();
    wait_until("both ranks' first step", Duration::from_secs(30), || {
        barrier.join("step-0.rank-0").exists() && barrier.join("step-0.rank-1").exists()
    });
    let pids: Vec<u32> = ranks.iter().map(Child::id).collect();
    for p in &pids {
        s.registered(*p);
    }
    for step in 0..40 {
        std::fs::write(barrier.join(format!("step-{step}.rank-2")), b"").unwrap();
    }
    std::fs::write(&go, b"go").unwrap();
    assert_eq!(finish(hp, "burst"), "burst ok n=8");
    let outs: Vec<(String, String)> = ranks
        .into_iter()
        .enumerate()
        .map(|(r, c)| finish_with_stderr(c, &format!("rank {r}")))
        .collect();
    s.stop(daemon);
    let (_, end) = burst_window(&hp_log);
    // Every rank ran on its own GPU, and was resumed: it launched after the burst.
    for (r, log) in logs.iter().enumerate() {
        let lines = log_lines(log);
        assert!(
            lines
                .iter()
                .filter(|l| l["ev"] == "exec")
                .all(|l| num(l, "device") == r as u64)
        );
        assert!(
            launch_calls(&lines).iter().any(|t| *t > end),
            "rank {r} never launched after the burst"
        );
    }
    let rank = |r: usize| Rank {
        calls: launch_calls(&log_lines(&logs[r])),
        holds: holds(&outs[r].1),
        out: outs[r].0.clone(),
    };
    ([rank(0), rank(1)], end)
}

#[test]
fn a_gang_is_held_back_and_resumed_together_across_gpus() {
    let ([r0, r1], end) = gang_run("together");
    assert!(
        [&r0, &r1].iter().all(|r| r.out.contains("ok steps=40")),
        "{} / {}",
        r0.out,
        r1.out
    );
    // Both ranks held over the burst, though only rank 0 shares its GPU.
    for (i, r) in [&r0, &r1].iter().enumerate() {
        assert!(
            r.held_over(end).is_some(),
            "rank {i} was not held over the burst: {:?}",
            r.holds
        );
    }
    let ([r0, r1], end) = gang_run("independent");
    assert!(
        [&r0, &r1].iter().all(|r| r.out.contains("ok steps=40")),
        "{} / {}",
        r0.out,
        r1.out
    );
    // Per device, rank 0 is held and rank 1 busy-waits for it on GPU 1 meanwhile.
    let hold = r0.held_over(end).unwrap_or_else(|| {
        panic!(
            "rank 0 was not held beside the burst on GPU 0: {:?}",
            r0.holds
        )
    });
    assert_eq!(
        hold_over(&r1.holds, end),
        None,
        "rank 1 was held, alone on GPU 1"
    );
    let busy = r1
        .calls
        .iter()
        .filter(|t| **t > hold.0 && **t < hold.1)
        .count();
    assert!(
        busy > 0,
        "rank 1 did not busy-wait on GPU 1 while rank 0 was held"
    );
}

#[test]
fn a_gang_that_yields_gives_way_only_on_the_gpu_where_it_is_outranked() {
    // Under MPS with `--yield`, a process keeps its kernels to part of the SMs while a more
    // urgent process is on its GPU, and is never held back for it. A gang of two such ranks
    // beside a service on GPU 0: rank 0 keeps to 8 SMs there; rank 1, alone on GPU 1, keeps
    // the whole GPU. Holding gangs together (`--gang together`) must not confine rank 1 too
    // (on the GPU, the time-slice form of that mistake handed rank 1's GPU to a low-priority
    // filler and cut the job to a small fraction of its steps: docs/MULTI_GPU.md).
    let dir = temp_dir("gang-yielding");
    let (socket, go) = (dir.join("baton.sock"), dir.join("go"));
    let s = Setup {
        socket: &socket,
        go: &go,
    };
    let daemon = s.daemon("together");
    let hp_log = dir.join("hp.log");
    // The service waits for the go file, which comes once both ranks are done: it is on GPU 0
    // all the while, and outranks rank 0 there.
    let hp = s.start("burst", "10", "0", &hp_log, &[]);
    s.registered(hp.id());
    let logs = [dir.join("rank0.log"), dir.join("rank1.log")];
    let ranks: Vec<Child> = (0..2)
        .map(|r| {
            s.start(
                "flood",
                "0",
                &r.to_string(),
                &logs[r],
                &[
                    ("BATON_GANG", "train-job"),
                    ("BATON_MPS", "on"),
                    ("BATON_YIELD", "on"),
                    ("BATON_YIELD_SMS", "8"),
                    // 48 kernels of 20 ms, 8 in flight: long past the daemon's first word
                    // on a loaded machine.
                    ("FAKE_CUDA_KERNEL_US", "20000"),
                ],
            )
        })
        .collect();
    for c in &ranks {
        s.registered(c.id());
    }
    for (r, c) in ranks.into_iter().enumerate() {
        assert_eq!(finish(c, &format!("rank {r}")), "flood ok n=48");
    }
    std::fs::write(&go, b"go").unwrap();
    assert_eq!(finish(hp, "burst"), "burst ok n=8");
    s.stop(daemon);
    let sms = |r: usize| -> Vec<Option<u64>> {
        log_lines(&logs[r])
            .iter()
            .filter(|l| l["ev"] == "exec" && l["op"] == "kernel")
            .map(|l| l["sms"].as_u64())
            .collect()
    };
    let (rank0, rank1) = (sms(0), sms(1));
    assert_eq!(
        (rank0.len(), rank1.len()),
        (48, 48),
        "every kernel ran once"
    );
    // A queue starts bounded, so both ranks keep to their SMs until the daemon's first word
    // on them: rank 0 for good (the service's process is on GPU 0 all along), rank 1 only
    // until then (nothing outranks it on GPU 1); once it has the whole GPU, it keeps it.
    assert!(
        rank0.iter().all(|k| *k == Some(8)),
        "rank 0 ran on the whole of GPU 0 beside the service: {rank0:?}"
    );
    let freed = rank1.iter().position(Option::is_none);
    assert!(
        freed.is_some_and(|i| rank1[i..].iter().all(Option::is_none)),
        "rank 1, alone on GPU 1, kept to part of its SMs because its gang's other rank was \
         outranked elsewhere: {rank1:?}"
    );
}
