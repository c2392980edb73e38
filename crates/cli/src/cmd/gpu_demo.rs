//! `baton demo` on a real GPU: the same story as on the simulated device, with real
//! processes. A latency-critical client issues requests of short kernels (`hp_kernels` of
//! 20–80 µs) every few milliseconds; a best-effort client keeps the GPU full of long kernels
//! (1–5 ms of work). Four runs: HP alone, BE alone, both natively (the GPU time-slices the two
//! processes), and both under Baton (`baton run --priority 10` / `--priority 0 --level 3`, one
//! daemon). The clients are this same binary (`baton demo --gpu-worker hp|be`), driving the
//! GPU through the driver API with kernels JIT-compiled from PTX (`baton_cuda::probe`): no
//! CUDA toolkit needed.

use std::ffi::c_uint;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use baton_core::Nanos;
use baton_cuda::probe::{self, Context, Kernels, ProbeError};
use serde_json::{Value, json};

/// What the clients do; the parent passes it on the command line.
#[derive(Clone, Debug)]
pub struct Plan {
    pub seconds: f64,
    pub hp_kernels: u32,
    pub hp_kernel_us: (u64, u64),
    pub hp_period_ms: f64,
    pub be_kernel_us: (u64, u64),
    pub be_depth: u32,
    pub seed: u64,
}

impl Plan {
    fn args(&self) -> Vec<String> {
        vec![
            "--duration-s".into(),
            self.seconds.to_string(),
            "--hp-kernels".into(),
            self.hp_kernels.to_string(),
            "--hp-kernel-us".into(),
            format!("{}-{}", self.hp_kernel_us.0, self.hp_kernel_us.1),
            "--hp-period-ms".into(),
            self.hp_period_ms.to_string(),
            "--be-kernel-ms".into(),
            format!(
                "{}-{}",
                self.be_kernel_us.0 as f64 / 1000.0,
                self.be_kernel_us.1 as f64 / 1000.0
            ),
            "--be-depth".into(),
            self.be_depth.to_string(),
            "--seed".into(),
            self.seed.to_string(),
        ]
    }
}

/// The first GPU's name, if a CUDA driver with a device is here.
pub fn available() -> Option<String> {
    probe::first_device_name(probe::open_driver(None).ok()?)
}

/// A small deterministic generator (xorshift) for kernel lengths.
struct Rng(u64);

impl Rng {
    fn between(&mut self, (lo, hi): (u64, u64)) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        lo + self.0 % (hi.saturating_sub(lo) + 1)
    }
}

/// The kernels on the first device, through the driver's exports (Baton's hooks for the
/// intercepted ones when this client runs under `baton run`).
fn open() -> Result<Kernels, ProbeError> {
    let d = probe::open_driver(None)?;
    Kernels::load(&Context::primary(d, 0)?)
}

/// The `q`-th percentile of latencies, in µs.
fn pct(v: &mut [Nanos], q: f64) -> f64 {
    v.sort_unstable();
    baton_core::percentile(v, q).0 as f64 / 1e3
}

/// Multiply-adds for `us` of work at `per_us` per microsecond.
#[expect(
    clippy::cast_possible_truncation,
    reason = "a positive product far below u64::MAX; float-to-int casts saturate"
)]
fn iters(us: u64, per_us: f64) -> u64 {
    (us as f64 * per_us).max(1.0) as u64
}

/// The latency-critical client: `hp_kernels` short kernels per request, then a wait.
pub fn hp_worker(p: &Plan, out: &Path) -> Result<(), String> {
    let k = open().map_err(|e| e.to_string())?;
    k.spin(1_000, 1, 32).map_err(|e| e.to_string())?;
    k.sync().map_err(|e| e.to_string())?;
    let mut rng = Rng(p.seed | 1);
    let (mut lat, mut busy) = (Vec::new(), 0.0);
    let period = Duration::from_secs_f64(p.hp_period_ms / 1e3);
    let start = Instant::now();
    let mut next = start;
    while start.elapsed().as_secs_f64() < p.seconds {
        let t0 = Instant::now();
        for _ in 0..p.hp_kernels {
            k.spin(rng.between(p.hp_kernel_us) * 1000, 66, 128)
                .map_err(|e| e.to_string())?;
        }
        k.sync().map_err(|e| e.to_string())?;
        let took = t0.elapsed();
        lat.push(Nanos(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX)));
        busy += took.as_secs_f64();
        next += period;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let n = lat.len();
    let v = json!({"requests": n, "p50_us": pct(&mut lat, 0.5), "p99_us": pct(&mut lat, 0.99),
                   "busy_fraction": busy / wall});
    std::fs::write(out, v.to_string()).map_err(|e| e.to_string())
}

/// The best-effort client: kernels of a fixed amount of work, `be_depth` outstanding, until
/// `stop` exists (or the plan's time is up); reports GPU-seconds of work done per second.
pub fn be_worker(
    p: &Plan,
    out: &Path,
    ready: Option<&Path>,
    stop: Option<&Path>,
) -> Result<(), String> {
    let e = |e: ProbeError| e.to_string();
    let k = open().map_err(e)?;
    let grid: c_uint = 132 * 4;
    // Calibrate: how many multiply-adds take a microsecond with the GPU to ourselves.
    k.work(10_000, grid, 256).map_err(e)?;
    k.sync().map_err(e)?;
    let t0 = Instant::now();
    k.work(400_000, grid, 256).map_err(e)?;
    k.sync().map_err(e)?;
    let per_us = 400_000.0 / (t0.elapsed().as_secs_f64() * 1e6).max(1.0);
    let depth = p.be_depth.max(1) as usize;
    let events = k.event_ring(depth).map_err(e)?;
    if let Some(r) = ready {
        std::fs::write(r, b"").map_err(|e| e.to_string())?;
    }
    let mut rng = Rng((p.seed ^ 0x9e37_79b9) | 1);
    let (mut n, mut done_us) = (0usize, 0.0);
    let start = Instant::now();
    let over = |start: Instant| match stop {
        Some(s) => s.exists() || start.elapsed().as_secs_f64() > p.seconds * 4.0 + 60.0,
        None => start.elapsed().as_secs_f64() > p.seconds,
    };
    while !over(start) {
        let slot = n % depth;
        if n >= depth {
            events.wait(slot).map_err(e)?;
        }
        let us = rng.between(p.be_kernel_us);
        k.work(iters(us, per_us), grid, 256).map_err(e)?;
        events.record(slot).map_err(e)?;
        done_us += us as f64;
        n += 1;
    }
    k.sync().map_err(e)?;
    let wall = start.elapsed().as_secs_f64();
    let v = json!({"kernels": n, "throughput": done_us / 1e6 / wall, "iters_per_us": per_us});
    std::fs::write(out, v.to_string()).map_err(|e| e.to_string())
}

/// The parent: four runs, each client a child process; returns the report.
pub fn run(p: &Plan, progress: &mut dyn FnMut(&str, usize)) -> Result<Value, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding baton itself: {e}"))?;
    let tmp = std::env::temp_dir().join(format!("baton-gpu-demo-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;
    let socket = tmp.join("baton.sock");
    let worker = |role: &str,
                  out: &Path,
                  extra: &[&Path],
                  baton: Option<&[&str]>|
     -> Result<Child, String> {
        let mut cmd = match baton {
            Some(run) => {
                let mut c = Command::new(&exe);
                c.arg("run").args(run).arg("--").arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        cmd.args(["demo", "--gpu-worker", role, "--worker-out"])
            .arg(out)
            .args(p.args())
            .env("BATON_SOCKET", &socket)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        if let [ready, stop] = extra {
            cmd.arg("--ready-file")
                .arg(ready)
                .arg("--stop-file")
                .arg(stop);
        }
        cmd.spawn()
            .map_err(|e| format!("starting the {role} client: {e}"))
    };
    let finish = |mut c: Child, what: &str, out: &Path| -> Result<Value, String> {
        let st = c.wait().map_err(|e| e.to_string())?;
        let text = std::fs::read_to_string(out)
            .map_err(|_| format!("the {what} client failed ({st}) and wrote no result"))?;
        serde_json::from_str(&text).map_err(|e| format!("the {what} client's result: {e}"))
    };
    let pair = |name: &str,
                hp_run: Option<&[&str]>,
                be_run: Option<&[&str]>|
     -> Result<(Value, Value), String> {
        let (ready, stop) = (
            tmp.join(format!("{name}.ready")),
            tmp.join(format!("{name}.stop")),
        );
        let (hp_out, be_out) = (
            tmp.join(format!("{name}-hp.json")),
            tmp.join(format!("{name}-be.json")),
        );
        let mut be = worker("be", &be_out, &[&ready, &stop], be_run)?;
        let t0 = Instant::now();
        while !ready.exists() {
            if let Ok(Some(st)) = be.try_wait() {
                return Err(format!("the BE client stopped before it was ready ({st})"));
            }
            if t0.elapsed() > Duration::from_secs(120) {
                let _ = be.kill();
                return Err("the BE client did not get ready in 2 minutes".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let hp = worker("hp", &hp_out, &[], hp_run)?;
        let hp_r = finish(hp, "HP", &hp_out);
        std::fs::write(&stop, b"").map_err(|e| e.to_string())?;
        let be_r = finish(be, "BE", &be_out)?;
        Ok((hp_r?, be_r))
    };
    progress("HP alone", 0);
    let out = tmp.join("alone-hp.json");
    let alone = finish(worker("hp", &out, &[], None)?, "HP", &out)?;
    progress("BE alone", 1);
    let out = tmp.join("alone-be.json");
    let be_alone = finish(worker("be", &out, &[], None)?, "BE", &out)?;
    progress("native", 2);
    let (native_hp, native_be) = pair("native", None, None)?;
    progress("Baton", 3);
    let baton = pair(
        "baton",
        Some(&["--priority", "10"]),
        Some(&["--priority", "0", "--level", "3"]),
    );
    let _ = Command::new(&exe)
        .args(["daemon", "--stop", "--socket"])
        .arg(&socket)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let (baton_hp, baton_be) = baton?;
    let _ = std::fs::remove_dir_all(&tmp);
    let f = |v: &Value, k: &str| v[k].as_f64().unwrap_or(0.0);
    Ok(json!({
        "device": "gpu",
        "hp_alone_p50_us": f(&alone, "p50_us"), "hp_alone_p99_us": f(&alone, "p99_us"),
        "hp_native_p50_us": f(&native_hp, "p50_us"), "hp_native_p99_us": f(&native_hp, "p99_us"),
        "hp_baton_p50_us": f(&baton_hp, "p50_us"), "hp_baton_p99_us": f(&baton_hp, "p99_us"),
        "be_alone_tput": f(&be_alone, "throughput"),
        "be_native_tput": f(&native_be, "throughput"),
        "be_baton_tput": f(&baton_be, "throughput"),
        "hp_busy_fraction": f(&alone, "busy_fraction"),
    }))
}

/// The report as a table, like the simulated demo's.
pub fn table(name: &str, r: &Value) -> String {
    let f = |k: &str| r[k].as_f64().unwrap_or(0.0);
    let a99 = f("hp_alone_p99_us").max(1e-9);
    let a50 = f("hp_alone_p50_us").max(1e-9);
    let be = f("be_alone_tput").max(1e-9);
    let mut s = format!("Baton demo on {name}\n\n");
    s += "              HP p50        HP p99        BE throughput (GPU-s/s)\n";
    for (label, k) in [
        ("HP alone", "alone"),
        ("native", "native"),
        ("Baton", "baton"),
    ] {
        let (p50, p99) = (f(&format!("hp_{k}_p50_us")), f(&format!("hp_{k}_p99_us")));
        let tput = if k == "alone" {
            String::from("–")
        } else {
            let t = f(&format!("be_{k}_tput"));
            format!("{t:.2} ({:.0} % of alone)", 100.0 * t / be)
        };
        s += &format!(
            "{label:<12} {:>8.0} µs ×{:<4.2} {:>8.0} µs ×{:<4.2} {tput}\n",
            p50,
            p50 / a50,
            p99,
            p99 / a99
        );
    }
    s += &format!(
        "\nBE alone: {:.2} GPU-s/s; HP keeps the GPU busy {:.0} % of the time when alone.\n",
        f("be_alone_tput"),
        100.0 * f("hp_busy_fraction")
    );
    s
}
