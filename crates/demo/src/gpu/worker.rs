//! The two clients, each a process: what they launch, what they measure, what they write.

use std::ffi::c_uint;
use std::path::Path;
use std::time::{Duration, Instant};

use baton_core::{Nanos, percentile};
use baton_cuda::probe::{self, Context, Kernels, ProbeError};
use serde::{Deserialize, Serialize};

use super::error::GpuDemoError;
use super::plan::GpuPlan;

/// What the HP client measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HpResult {
    /// [`HpResult::SCHEMA`].
    pub schema: String,
    /// Requests completed.
    pub requests: usize,
    /// Their median latency, µs.
    pub p50_us: f64,
    /// Their 99th-percentile latency, µs.
    pub p99_us: f64,
    /// The fraction of the run a request was on the GPU.
    pub busy_fraction: f64,
}

impl HpResult {
    /// The document's schema.
    pub const SCHEMA: &'static str = "baton.demo.gpu-hp/1";

    /// The result of requests that took `latencies`, `busy_s` seconds in all, over a run of
    /// `wall_s` seconds.
    pub fn new(mut latencies: Vec<Nanos>, busy_s: f64, wall_s: f64) -> HpResult {
        latencies.sort_unstable();
        let us = |q: f64| percentile(&latencies, q).0 as f64 / 1e3;
        HpResult {
            schema: Self::SCHEMA.into(),
            requests: latencies.len(),
            p50_us: us(0.5),
            p99_us: us(0.99),
            busy_fraction: busy_s / wall_s,
        }
    }
}

/// What the BE client measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BeResult {
    /// [`BeResult::SCHEMA`].
    pub schema: String,
    /// Kernels launched.
    pub kernels: usize,
    /// GPU-seconds of work done per second (the work of its kernels as timed alone).
    pub throughput: f64,
    /// The calibration: multiply-adds per microsecond with the GPU to itself.
    pub iters_per_us: f64,
}

impl BeResult {
    /// The document's schema.
    pub const SCHEMA: &'static str = "baton.demo.gpu-be/1";

    /// The result of `kernels` kernels worth `done_us` µs of work in `wall_s` seconds.
    pub fn new(kernels: usize, done_us: f64, wall_s: f64, iters_per_us: f64) -> BeResult {
        BeResult {
            schema: Self::SCHEMA.into(),
            kernels,
            throughput: done_us / 1e6 / wall_s,
            iters_per_us,
        }
    }
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

/// Multiply-adds for `us` of work at `per_us` per microsecond.
#[expect(
    clippy::cast_possible_truncation,
    reason = "a positive product far below u64::MAX; float-to-int casts saturate"
)]
fn iters(us: u64, per_us: f64) -> u64 {
    (us as f64 * per_us).max(1.0) as u64
}

/// Writes a result document to `out`.
fn write(out: &Path, result: &impl Serialize) -> Result<(), GpuDemoError> {
    let text = serde_json::to_string(result).map_err(std::io::Error::other)?;
    Ok(std::fs::write(out, text)?)
}

/// The latency-critical client: `hp_kernels` short kernels per request, then a wait; writes
/// its [`HpResult`] to `out`.
pub fn hp_worker(p: &GpuPlan, out: &Path) -> Result<(), GpuDemoError> {
    let k = open()?;
    k.spin(1_000, 1, 32)?;
    k.sync()?;
    let mut rng = Rng(p.seed | 1);
    let (mut lat, mut busy) = (Vec::new(), 0.0);
    let period = Duration::from_secs_f64(p.hp_period_ms / 1e3);
    let start = Instant::now();
    let mut next = start;
    while start.elapsed().as_secs_f64() < p.seconds {
        let t0 = Instant::now();
        for _ in 0..p.hp_kernels {
            k.spin(rng.between(p.hp_kernel_us) * 1000, 66, 128)?;
        }
        k.sync()?;
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
    write(out, &HpResult::new(lat, busy, wall))
}

/// The best-effort client: kernels of a fixed amount of work, `be_depth` outstanding, until
/// `stop` exists (or the plan's time is up); writes its [`BeResult`] to `out`. Creates
/// `ready` once warmed up.
pub fn be_worker(
    p: &GpuPlan,
    out: &Path,
    ready: Option<&Path>,
    stop: Option<&Path>,
) -> Result<(), GpuDemoError> {
    let k = open()?;
    let grid: c_uint = 132 * 4;
    // Calibrate: how many multiply-adds take a microsecond with the GPU to ourselves.
    k.work(10_000, grid, 256)?;
    k.sync()?;
    let t0 = Instant::now();
    k.work(400_000, grid, 256)?;
    k.sync()?;
    let per_us = 400_000.0 / (t0.elapsed().as_secs_f64() * 1e6).max(1.0);
    let depth = p.be_depth.max(1) as usize;
    let events = k.event_ring(depth)?;
    if let Some(r) = ready {
        std::fs::write(r, b"")?;
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
            events.wait(slot)?;
        }
        let us = rng.between(p.be_kernel_us);
        k.work(iters(us, per_us), grid, 256)?;
        events.record(slot)?;
        done_us += us as f64;
        n += 1;
    }
    k.sync()?;
    let wall = start.elapsed().as_secs_f64();
    write(out, &BeResult::new(n, done_us, wall, per_us))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hp_results_come_from_the_recorded_latencies() {
        let lat: Vec<Nanos> = (1..=100).rev().map(|i| Nanos(i * 1_000)).collect();
        let r = HpResult::new(lat, 0.25, 1.0);
        assert_eq!(r.requests, 100);
        assert_eq!(r.p50_us, 50.0);
        assert_eq!(r.p99_us, 99.0);
        assert_eq!(r.busy_fraction, 0.25);
        let none = HpResult::new(Vec::new(), 0.0, 1.0);
        assert_eq!((none.requests, none.p50_us, none.p99_us), (0, 0.0, 0.0));
        assert_eq!(
            serde_json::to_string(&HpResult::new(vec![Nanos(1_500)], 0.5, 2.0)).unwrap(),
            r#"{"schema":"baton.demo.gpu-hp/1","requests":1,"p50_us":1.5,"p99_us":1.5,"busy_fraction":0.25}"#
        );
    }

    #[test]
    fn be_results_count_work_per_second() {
        let r = BeResult::new(300, 1.5e6, 2.0, 123.0);
        assert_eq!(r.throughput, 0.75);
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"schema":"baton.demo.gpu-be/1","kernels":300,"throughput":0.75,"iters_per_us":123.0}"#
        );
    }

    #[test]
    fn kernel_lengths_are_reproducible_and_within_range() {
        let (mut a, mut b) = (Rng(7 | 1), Rng(7 | 1));
        for _ in 0..1000 {
            let x = a.between((20, 80));
            assert_eq!(x, b.between((20, 80)));
            assert!((20..=80).contains(&x));
        }
        assert_eq!(Rng(3).between((5, 5)), 5);
        assert_eq!(iters(0, 10.0), 1);
        assert_eq!(iters(1000, 2.5), 2500);
    }

    #[test]
    fn results_are_written_as_one_line() {
        let dir = std::env::temp_dir().join(format!("baton-gpu-worker-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("hp.json");
        let r = HpResult::new(vec![Nanos(2_000)], 0.1, 1.0);
        write(&out, &r).unwrap();
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(!text.contains('\n'));
        assert_eq!(serde_json::from_str::<HpResult>(&text).unwrap(), r);
        assert!(matches!(
            write(&dir.join("missing/hp.json"), &r),
            Err(GpuDemoError::Io(_))
        ));
        std::fs::remove_dir_all(&dir).ok();
    }
}
