//! Decision latency across 100 processes: from a queue becoming ready (or idle) in one process
//! to the resulting operation reaching the agent, over real Unix sockets.
//!
//! ```text
//! cargo bench -p baton-lab --bench decision_latency            # prints JSON
//! BATON_BENCH_OUT=docs/benchmarks/daemon/daemon-vm.json cargo bench -p baton-lab --bench decision_latency
//! ```
//!
//! Setup: the daemon (HPF) on a thread of this process; 99 `baton-sim-client` processes with
//! 4 queues each on one simulated device, priorities 0–3, each flipping a random queue between
//! ready and idle every 50 ms on average (~2,000 events/s in all); then the **probe**, an
//! in-process `DaemonClient` with 4 queues (HP at priority 10, three at 5), connected last.
//! Each iteration makes the probe's HP queue ready: HPF suspends every other queue on the
//! device, so the decision fans out to all 100 processes, the probe's last (it has the
//! highest client number); the latency is from the HP submit to the probe's agent applying
//! the suspension of its own queue. Then HP goes idle and the same is measured for the
//! resumption. The daemon's CPU time is read from its thread's CPU clock over the run.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton_agent::{ClientConfig, DaemonClient, QueueInfo};
use baton_core::{
    CommandKind, Drive, HwCommand, HwError, HwQueue, LaunchConfig, Level, MonotonicClock, Nanos,
    QueueControl, ResumeFlags, SuspendFlags, XQueue, XQueueError, XQueueId, XQueueStatus,
    percentile,
};
use baton_daemon::{Daemon, DaemonConfig};
use baton_protocol::{Backend, DeviceRef, Hint, LatencySummary, Reply, Request, WirePriority};
use serde::Serialize;

const BACKGROUND: usize = 99;
const QUEUES: usize = 4;
const ITERATIONS: usize = 1500;

#[derive(Clone, Copy, Debug)]
struct Cmd;

impl HwCommand for Cmd {
    fn kind(&self) -> CommandKind {
        CommandKind::Kernel
    }
}

/// Completes what it launched only when told to.
#[derive(Clone, Default)]
struct ManualHw(Arc<Mutex<(u64, u64)>>);

impl HwQueue for ManualHw {
    type Command = Cmd;
    type SyncPoint = u64;
    fn max_level(&self) -> Level {
        Level::L1
    }
    fn launch(&self, _c: Cmd) -> Result<(), HwError> {
        self.0.lock().unwrap().0 += 1;
        Ok(())
    }
    fn sync_point(&self) -> Result<u64, HwError> {
        Ok(self.0.lock().unwrap().0)
    }
    fn is_reached(&self, sp: &u64) -> Result<bool, HwError> {
        Ok(self.0.lock().unwrap().1 >= *sp)
    }
    fn query_idle(&self) -> Result<bool, HwError> {
        let g = self.0.lock().unwrap();
        Ok(g.1 >= g.0)
    }
    fn wait(&self, sp: &u64) -> Result<(), HwError> {
        if self.is_reached(sp)? {
            Ok(())
        } else {
            Err(HwError::WouldBlock)
        }
    }
    fn synchronize(&self) -> Result<(), HwError> {
        let sp = self.sync_point()?;
        self.wait(&sp)
    }
}

/// A queue that notes when the daemon's operations reach it.
struct Probe {
    xq: Arc<XQueue<ManualHw>>,
    seen: Arc<Mutex<Vec<(bool, Instant)>>>,
}

impl QueueControl for Probe {
    fn id(&self) -> XQueueId {
        self.xq.id()
    }
    fn status(&self) -> XQueueStatus {
        self.xq.status()
    }
    fn suspend(&self, f: SuspendFlags) -> Result<(), XQueueError> {
        self.seen.lock().unwrap().push((true, Instant::now()));
        self.xq.suspend(f)
    }
    fn resume(&self, f: ResumeFlags) -> Result<(), XQueueError> {
        self.seen.lock().unwrap().push((false, Instant::now()));
        self.xq.resume(f)
    }
    fn set_level(&self, l: Level) -> Result<(), XQueueError> {
        self.xq.set_level(l)
    }
    fn set_launch_config(&self, c: LaunchConfig) {
        self.xq.set_launch_config(c);
    }
    fn set_attention(&self, attention: baton_core::Attention) {
        self.xq.set_attention(attention);
    }
}

fn cli(socket: &std::path::Path, r: &Request) -> Reply {
    let mut s = std::os::unix::net::UnixStream::connect(socket).unwrap();
    let hello = baton_protocol::Hello::new(baton_protocol::Role::Cli, std::process::id(), "bench");
    baton_protocol::client_handshake(&mut s, &hello).unwrap();
    baton_protocol::write_frame(&mut s, r).unwrap();
    baton_protocol::read_frame(&mut s).unwrap().unwrap()
}

fn thread_cpu(clock: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id from pthread_getcpuclockid and a writable timespec.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// Latencies of one kind, in µs.
#[derive(Serialize)]
struct Stats {
    samples: usize,
    p50_us: f64,
    p90_us: f64,
    p99_us: f64,
    max_us: f64,
    mean_us: f64,
}

fn stats(v: Vec<Duration>) -> Stats {
    let mut v: Vec<Nanos> = v
        .iter()
        .map(|d| Nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)))
        .collect();
    v.sort_unstable();
    let at = |q: f64| percentile(&v, q).as_micros_f64();
    Stats {
        samples: v.len(),
        p50_us: at(0.5),
        p90_us: at(0.9),
        p99_us: at(0.99),
        max_us: at(1.0),
        mean_us: v.iter().map(|n| n.as_micros_f64()).sum::<f64>() / v.len() as f64,
    }
}

/// What the benchmark prints (and writes to `$BATON_BENCH_OUT`).
#[derive(Serialize)]
struct Report {
    /// `baton.bench.decision-latency/1`.
    schema: &'static str,
    benchmark: &'static str,
    one_agent_affected: RunReport,
    all_agents_affected: RunReport,
}

/// One run's measurements.
#[derive(Serialize)]
struct RunReport {
    background_device: &'static str,
    processes: usize,
    queues_per_process: usize,
    iterations: usize,
    background_churn_ms: u64,
    ready_to_suspend: Stats,
    idle_to_resume: Stats,
    daemon_cpu_s: f64,
    wall_s: f64,
    daemon_cpu_percent_of_one_core: f64,
    daemon_decisions: u64,
    daemon_operations_sent: u64,
    daemon_decision_latency_ns: LatencySummary,
    machine: Machine,
}

/// Where it ran.
#[derive(Serialize)]
struct Machine {
    cpus: usize,
    model: String,
}

fn main() {
    let out = Report {
        schema: "baton.bench.decision-latency/1",
        benchmark: "decision_latency",
        one_agent_affected: run(false),
        all_agents_affected: run(true),
    };
    let text = serde_json::to_string_pretty(&out).unwrap();
    println!("{text}");
    if let Some(path) = std::env::var_os("BATON_BENCH_OUT") {
        let mut f = std::fs::File::create(path).unwrap();
        writeln!(f, "{text}").unwrap();
    }
}

/// One run. `fan_out`: the background shares the probe's device, so each probe decision
/// changes every process; otherwise the background is on another device and only the probe's
/// own queue changes (the policy still weighs all 400 queues).
fn run(fan_out: bool) -> RunReport {
    let dir = std::env::temp_dir().join(format!("baton-bench-{}-{fan_out}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let socket = dir.join("baton.sock");
    let daemon = Daemon::bind(DaemonConfig::new(socket.clone())).expect("bind");
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let daemon_thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(daemon.serve(async move {
            let _ = stop_rx.await;
        }))
        .unwrap();
    });
    let mut clock: libc::clockid_t = 0;
    // SAFETY: a live thread's pthread handle and a writable clock id.
    unsafe {
        use std::os::unix::thread::JoinHandleExt;
        libc::pthread_getcpuclockid(daemon_thread.as_pthread_t(), &mut clock);
    }

    // BATON_SIM_CLIENT points at the client binary when the bench runs on another machine.
    let client = std::env::var_os("BATON_SIM_CLIENT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_baton-sim-client")));
    let mut clients: Vec<Child> = (0..BACKGROUND)
        .map(|i| {
            Command::new(&client)
                .arg("--socket")
                .arg(&socket)
                .args(["--queues", &QUEUES.to_string()])
                .args(["--priority", &(i % 4).to_string()])
                .args(["--churn-ms", "50", "--seed", &(i + 1).to_string()])
                .args(["--device", if fan_out { "sim-0" } else { "sim-1" }])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn a sim client")
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Reply::Status(s) = cli(&socket, &Request::Status) {
            if s.queues as usize == BACKGROUND * QUEUES {
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the clients did not all register"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // The probe, connected last.
    let cfg = ClientConfig::new(vec![socket.clone()], Arc::new(MonotonicClock::new()));
    let probe = DaemonClient::start(cfg).unwrap();
    let device = DeviceRef {
        backend: Backend::Sim,
        id: "sim-0".into(),
        ordinal: 0,
    };
    let mut queues = Vec::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    for i in 0..QUEUES {
        let hw = ManualHw::default();
        let xq = Arc::new(
            XQueue::builder(hw.clone())
                .drive(Drive::External)
                .sink(probe.sink())
                .build()
                .unwrap(),
        );
        let prio = if i == 0 { 10 } else { 5 };
        probe.register(
            Arc::new(Probe {
                xq: Arc::clone(&xq),
                seen: if i == 1 {
                    Arc::clone(&seen)
                } else {
                    Arc::new(Mutex::new(Vec::new()))
                },
            }),
            QueueInfo {
                label: format!("probe {i}"),
                device: device.clone(),
                hints: vec![Hint::Priority(WirePriority(prio))],
            },
        );
        queues.push((hw, xq));
    }
    while !matches!(cli(&socket, &Request::Status), Reply::Status(s) if s.queues as usize == (BACKGROUND + 1) * QUEUES)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    let (hp_hw, hp) = &queues[0];
    let wait_for = |n: usize, suspended: bool| -> Instant {
        let limit = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(&(s, t)) = seen.lock().unwrap().get(n) {
                assert_eq!(s, suspended, "operation {n}");
                return t;
            }
            assert!(Instant::now() < limit, "no operation {n} reached the probe");
            std::hint::spin_loop();
        }
    };
    let (mut ready_lat, mut idle_lat) = (Vec::new(), Vec::new());
    let cpu0 = thread_cpu(clock);
    let wall0 = Instant::now();
    let mut n = 0;
    for i in 0..ITERATIONS {
        let t0 = Instant::now();
        hp.submit(Cmd).unwrap();
        let t1 = wait_for(n, true);
        n += 1;
        std::thread::sleep(Duration::from_micros(1000 + (i as u64 * 7919) % 2000));
        let t2 = Instant::now();
        {
            let mut g = hp_hw.0.lock().unwrap();
            g.1 = g.0;
        }
        hp.poll();
        let t3 = wait_for(n, false);
        n += 1;
        ready_lat.push(t1 - t0);
        idle_lat.push(t3 - t2);
        std::thread::sleep(Duration::from_micros(1000 + (i as u64 * 104_729) % 2000));
    }
    let wall = wall0.elapsed();
    let cpu = thread_cpu(clock) - cpu0;
    let status = match cli(&socket, &Request::Status) {
        Reply::Status(s) => s,
        r => panic!("{r:?}"),
    };
    drop(probe);
    for c in &mut clients {
        let _ = c.kill();
        let _ = c.wait();
    }
    let _ = stop_tx.send(());
    let _ = daemon_thread.join();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|m| m.trim_start_matches([' ', '\t', ':']))
        })
        .unwrap_or("unknown")
        .to_string();
    let _ = std::fs::remove_dir_all(&dir);
    RunReport {
        background_device: if fan_out {
            "the probe's (every decision reaches all 100 processes; the probe's frame is sent last)"
        } else {
            "another (each decision changes the probe's queue only)"
        },
        processes: BACKGROUND + 1,
        queues_per_process: QUEUES,
        iterations: ITERATIONS,
        background_churn_ms: 50,
        ready_to_suspend: stats(ready_lat),
        idle_to_resume: stats(idle_lat),
        daemon_cpu_s: cpu.as_secs_f64(),
        wall_s: wall.as_secs_f64(),
        daemon_cpu_percent_of_one_core: 100.0 * cpu.as_secs_f64() / wall.as_secs_f64(),
        daemon_decisions: status.decisions,
        daemon_operations_sent: status.operations_sent,
        daemon_decision_latency_ns: status.decision_latency,
        machine: Machine {
            cpus: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(0),
            model,
        },
    }
}
