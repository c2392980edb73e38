//! Two processes, for scheduling across processes (`baton run --priority`, the daemon): a
//! best-effort `flood` of slow kernels, and a latency-critical `burst` that creates its stream
//! at once (so the daemon knows it before the flood starts), then waits for a go file and
//! launches a short burst (or, given a stop file, keeps its stream busy until that file
//! appears). The tests read both processes' driver logs: while the burst is ready, the flood's
//! launches must not reach the driver.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use baton_cuda_sys::CU_STREAM_NON_BLOCKING;

use super::session::Session;
use crate::error::{AppError, ensure};
use crate::gpu::KArg::{I32, Ptr};

/// Kernels the flood launches.
pub const FLOOD: i32 = 48;
/// Kernels in the burst.
pub const BURST: i32 = 8;

/// The file the burst waits for: `$BATON_TEST_GO`.
fn go_file() -> Result<PathBuf, AppError> {
    std::env::var_os("BATON_TEST_GO")
        .map(PathBuf::from)
        .ok_or_else(|| AppError::Mismatch("BATON_TEST_GO is not set".into()))
}

pub fn flood(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    let (stream, _, _) = g.stream_with_priority(CU_STREAM_NON_BLOCKING, 0)?;
    let (log, counter) = (g.alloc(FLOOD as usize)?, g.alloc(1)?);
    g.memset32(counter, 0, 1)?;
    for t in 0..FLOOD {
        g.launch(k.append, stream, &[Ptr(log), Ptr(counter), I32(100 + t)])?;
    }
    g.sync(stream)?;
    let out = g.download(log, FLOOD as usize)?;
    let expected: Vec<i32> = (100..100 + FLOOD).collect();
    ensure(out == expected, || format!("flood tags {out:?}"))?;
    g.destroy_stream(stream)?;
    Ok(format!("flood ok n={FLOOD}"))
}

/// The flood as a framework's training loop often runs it: on the legacy default stream, the
/// whole context synchronized after every fourth kernel (what `torch.cuda.synchronize()`
/// does). A hold on the process must reach it through those synchronizations.
pub fn flood_ctx_sync(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    let legacy: baton_cuda_sys::CUstream = std::ptr::null_mut();
    let (log, counter) = (g.alloc(FLOOD as usize)?, g.alloc(1)?);
    g.memset32(counter, 0, 1)?;
    for t in 0..FLOOD {
        g.launch(k.append, legacy, &[Ptr(log), Ptr(counter), I32(100 + t)])?;
        if t % 4 == 3 {
            g.ctx_sync()?;
        }
    }
    g.ctx_sync()?;
    let out = g.download(log, FLOOD as usize)?;
    let expected: Vec<i32> = (100..100 + FLOOD).collect();
    ensure(out == expected, || format!("flood tags {out:?}"))?;
    Ok(format!("flood-ctx-sync ok n={FLOOD}"))
}

/// Rounds a burst told to wait for a stop file runs at most (its log's capacity).
const MAX_ROUNDS: i32 = 4096;

/// `BURST` kernels appending their tags 0, 1, … in order once the go file exists. With
/// `$BATON_TEST_BURST_UNTIL` naming a file, the burst runs rounds of `BURST` kernels back to
/// back until that file exists instead: a test ends it once it has seen what the burst must
/// cause, so that the burst's length is no race against how fast the machine is. Eight rounds
/// stay queued behind the one the host waits for (an event recorded after each), so the stream
/// does not run dry while the host is slow to come back: the queue is ready from the first
/// launch to the last kernel's end, unless the host stalls for longer than those rounds take.
pub fn burst(s: &Session) -> Result<String, AppError> {
    /// Rounds queued behind the one the host waits for: 64 kernels, 128 ms of the default 2 ms
    /// ones, more than a loaded 2-CPU machine has been seen to stall the host (two rounds, 32
    /// ms, once let the stream run dry, and the flood legitimately run, mid-burst).
    const AHEAD: usize = 8;
    let (g, k) = (&s.gpu, &s.k);
    let until = std::env::var_os("BATON_TEST_BURST_UNTIL").map(PathBuf::from);
    let capacity = BURST * if until.is_some() { MAX_ROUNDS } else { 1 };
    let (stream, _, _) = g.stream_with_priority(CU_STREAM_NON_BLOCKING, 0)?;
    let (log, counter) = (g.alloc(capacity as usize)?, g.alloc(1)?);
    g.memset32(counter, 0, 1)?;
    let go = go_file()?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while !go.exists() {
        ensure(Instant::now() < deadline, || {
            format!("no go file {} within 20 s", go.display())
        })?;
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut n = 0;
    let mut inflight = std::collections::VecDeque::new();
    loop {
        for _ in 0..BURST {
            g.launch(k.append, stream, &[Ptr(log), Ptr(counter), I32(n)])?;
            n += 1;
        }
        let Some(until) = &until else { break };
        if until.exists() {
            break;
        }
        ensure(n < capacity, || {
            format!("no stop file {} after {n} kernels", until.display())
        })?;
        let ev = g.event(0)?;
        g.record(ev, stream)?;
        inflight.push_back(ev);
        if inflight.len() > AHEAD
            && let Some(ev) = inflight.pop_front()
        {
            g.event_sync(ev)?;
            g.destroy_event(ev)?;
        }
    }
    g.sync(stream)?;
    for ev in inflight {
        g.destroy_event(ev)?;
    }
    let out = g.download(log, n as usize)?;
    ensure(out == (0..n).collect::<Vec<_>>(), || {
        format!("burst tags {out:?}")
    })?;
    g.destroy_stream(stream)?;
    Ok(format!("burst ok n={n}"))
}

/// `$name` as a whole number, or `default` when unset or not one.
fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(default)
}

/// A best-effort flood for as long as another program needs one: kernels of
/// `$BATON_TEST_FLOOD_US` µs (default 1000), the stream synchronized after every
/// `$BATON_TEST_FLOOD_DEPTH` (default 4), until `$BATON_TEST_FLOOD_S` seconds (default 60) have
/// passed or the process is killed; from `$BATON_TEST_FLOOD_LONG_AFTER_S` seconds on (if set),
/// its kernels take `$BATON_TEST_FLOOD_LONG_US` µs instead (a job that changes what it runs on
/// the same stream). With `$BATON_TEST_FLOOD_EVENTS` set it paces itself as PyTorch's GEMM flood
/// does instead: an event recorded after every kernel, and the event `depth` kernels back waited
/// for. The contention tests run every scenario beside it; a deep flood of short kernels is a
/// training loop running ahead of the GPU.
pub fn be_flood(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    let seconds = env_u64("BATON_TEST_FLOOD_S", 60);
    let us = env_u64("BATON_TEST_FLOOD_US", 1_000);
    let depth = env_u64("BATON_TEST_FLOOD_DEPTH", 4).max(1);
    let long = std::env::var("BATON_TEST_FLOOD_LONG_AFTER_S")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map(|s| {
            let us = env_u64("BATON_TEST_FLOOD_LONG_US", 10_000);
            (Instant::now() + Duration::from_secs(s), us)
        });
    let events = std::env::var_os("BATON_TEST_FLOOD_EVENTS").is_some();
    let pool = idle_urgent_streams(s)?;
    let (stream, _, _) = g.stream_with_priority(CU_STREAM_NON_BLOCKING, 0)?;
    let until = Instant::now() + Duration::from_secs(seconds);
    let mut n = 0u64;
    let mut inflight = std::collections::VecDeque::new();
    while Instant::now() < until {
        let us = match long {
            Some((from, long_us)) if Instant::now() >= from => long_us,
            _ => us,
        };
        g.launch(k.spin, stream, &[crate::gpu::KArg::U64(us)])?;
        n += 1;
        if events {
            let ev = g.event(0)?;
            g.record(ev, stream)?;
            inflight.push_back(ev);
            if inflight.len() as u64 >= depth
                && let Some(old) = inflight.pop_front()
            {
                g.event_sync(old)?;
                g.destroy_event(old)?;
            }
        } else if n % depth == 0 {
            g.sync(stream)?;
        }
    }
    g.sync(stream)?;
    for ev in inflight {
        g.destroy_event(ev)?;
    }
    g.destroy_stream(stream)?;
    for p in pool {
        g.destroy_stream(p)?;
    }
    Ok(format!("be-flood ok n={n}"))
}

/// `$BATON_TEST_IDLE_URGENT_STREAMS` (default 0) streams of the most urgent CUDA priority,
/// created and never used, as PyTorch creates its pools of high-priority streams.
fn idle_urgent_streams(s: &Session) -> Result<Vec<baton_cuda_sys::CUstream>, AppError> {
    (0..env_u64("BATON_TEST_IDLE_URGENT_STREAMS", 0))
        .map(|_| Ok(s.gpu.stream_with_priority(CU_STREAM_NON_BLOCKING, -5)?.0))
        .collect()
}

/// A latency-critical service bound by its own launching, as an LLM decoder's token loop is:
/// short kernels launched `$BATON_TEST_PACED_GAP_US` µs apart (default 200) by the host, the
/// stream synchronized after every `$BATON_TEST_PACED_STEP` of them (default 200, a token),
/// for `$BATON_TEST_PACED_S` seconds (default 6). Its stream has work nearly all the time
/// while the device is mostly idle, and it rarely waits for it. With
/// `$BATON_TEST_PACED_THEN_KERNEL_US` set, it then launches one kernel that long and sleeps
/// through it without waiting for it (a service turned to long device work that it polls).
pub fn paced(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    let gap = Duration::from_micros(env_u64("BATON_TEST_PACED_GAP_US", 200));
    let step = env_u64("BATON_TEST_PACED_STEP", 200).max(1);
    let until = Instant::now() + Duration::from_secs(env_u64("BATON_TEST_PACED_S", 6));
    let (stream, _, _) = g.stream_with_priority(CU_STREAM_NON_BLOCKING, 0)?;
    let mut n = 0u64;
    while Instant::now() < until {
        g.launch(k.spin, stream, &[crate::gpu::KArg::U64(5)])?;
        n += 1;
        if n % step == 0 {
            g.sync(stream)?;
        }
        std::thread::sleep(gap);
    }
    g.sync(stream)?;
    if let Some(us) = std::env::var("BATON_TEST_PACED_THEN_KERNEL_US")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        g.launch(k.spin, stream, &[crate::gpu::KArg::U64(us)])?;
        std::thread::sleep(Duration::from_micros(us));
        g.sync(stream)?;
    }
    g.destroy_stream(stream)?;
    Ok(format!("paced ok n={n}"))
}

/// A latency-critical program that sends bursts at random moments, as the GPU transparency
/// suite's prober does: 1 to 4 kernels of `$BATON_TEST_PROBER_US` µs (default 500), waited for,
/// then a pause of 0.2 to 4 ms, drawn from `$BATON_TEST_PROBER_SEED` (default 1), until the file
/// `$BATON_TEST_PROBER_UNTIL` exists or `$BATON_TEST_PROBER_S` seconds (default 60) have
/// passed. A best-effort program beside it is suspended and resumed at points of its work that
/// neither program chooses.
pub fn prober(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    let us = env_u64("BATON_TEST_PROBER_US", 500);
    let until_file = std::env::var_os("BATON_TEST_PROBER_UNTIL").map(PathBuf::from);
    let until = Instant::now() + Duration::from_secs(env_u64("BATON_TEST_PROBER_S", 60));
    // xorshift64*: a seeded sequence, the same for the same seed.
    let mut state = env_u64("BATON_TEST_PROBER_SEED", 1).max(1);
    let mut draw = |n: u64| {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    };
    let (stream, _, _) = g.stream_with_priority(CU_STREAM_NON_BLOCKING, 0)?;
    let mut bursts = 0u64;
    while Instant::now() < until && !until_file.as_ref().is_some_and(|f| f.exists()) {
        for _ in 0..=draw(4) {
            g.launch(k.spin, stream, &[crate::gpu::KArg::U64(us)])?;
        }
        g.sync(stream)?;
        bursts += 1;
        std::thread::sleep(Duration::from_micros(200 + draw(3_800)));
    }
    g.destroy_stream(stream)?;
    Ok(format!("prober ok bursts={bursts}"))
}
