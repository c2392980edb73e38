//! Stream priorities: slow kernels queued on a low-priority stream, then a burst on the
//! highest-priority stream. The result line only counts; how the two interleave is read from
//! the driver's log by the tests (natively they overlap; under Baton the low stream yields).

use std::sync::Mutex;
use std::time::Duration;

use baton_cuda_sys::{CU_STREAM_NON_BLOCKING, CU_STREAM_WAIT_VALUE_GEQ, CUstream};

use super::session::Session;
use crate::error::{AppError, ensure};
use crate::gpu::Gpu;
use crate::gpu::KArg::{I32, Ptr};

/// Kernels on the low-priority stream (tags 100…).
pub const LOW: i32 = 12;
/// Kernels on the high-priority stream (tags 0…).
pub const HIGH: i32 = 8;

pub fn priority(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    let (low, low_prio, _) = g.stream_with_priority(CU_STREAM_NON_BLOCKING, 0)?;
    let (high, high_prio, _) = g.stream_with_priority(CU_STREAM_NON_BLOCKING, -5)?;
    ensure(high_prio < low_prio, || {
        format!("priorities {high_prio} (high) and {low_prio} (low) are not ordered")
    })?;
    let (log, counter) = (g.alloc((LOW + HIGH) as usize)?, g.alloc(1)?);
    g.memset32(counter, 0, 1)?;
    for t in 0..LOW {
        g.launch(k.append, low, &[Ptr(log), Ptr(counter), I32(100 + t)])?;
    }
    for t in 0..HIGH {
        g.launch(k.append, high, &[Ptr(log), Ptr(counter), I32(t)])?;
    }
    g.sync(high)?;
    g.sync(low)?;
    let mut out = g.download(log, (LOW + HIGH) as usize)?;
    out.sort_unstable();
    let expected: Vec<i32> = (0..HIGH).chain(100..100 + LOW).collect();
    ensure(out == expected, || format!("tags {out:?}"))?;
    for stream in [low, high] {
        g.destroy_stream(stream)?;
    }
    Ok(format!("priority ok low={LOW} high={HIGH}"))
}

/// A high-priority stream that waits for an event recorded in the middle of a low-priority
/// stream's slow work. Under Baton at Level 2 the low stream is gated as soon as the high one
/// is ready, with the event's record already launched behind its gate: the high stream's wait
/// must still be satisfied (the gate reopens until the record completes).
pub fn gated_wait(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    let (low, _, _) = g.stream_with_priority(CU_STREAM_NON_BLOCKING, 0)?;
    let (high, _, _) = g.stream_with_priority(CU_STREAM_NON_BLOCKING, -5)?;
    let (log, counter) = (g.alloc((LOW + HIGH) as usize)?, g.alloc(1)?);
    g.memset32(counter, 0, 1)?;
    let half = g.event(0)?;
    for t in 0..LOW {
        g.launch(k.append, low, &[Ptr(log), Ptr(counter), I32(100 + t)])?;
        if t == LOW / 2 - 1 {
            g.record(half, low)?;
        }
    }
    g.wait_event(high, half)?;
    for t in 0..HIGH {
        g.launch(k.append, high, &[Ptr(log), Ptr(counter), I32(t)])?;
    }
    g.sync(high)?;
    // Every high kernel ran after the first half of the low ones.
    let order = g.download(log, (LOW + HIGH) as usize)?;
    let first_high = order.iter().position(|&t| t < 100).unwrap_or(order.len());
    let low_before = order[..first_high].iter().filter(|&&t| t >= 100).count();
    ensure(low_before >= (LOW / 2) as usize, || {
        format!("only {low_before} low kernels ran before the event: {order:?}")
    })?;
    g.sync(low)?;
    g.destroy_event(half)?;
    for stream in [low, high] {
        g.destroy_stream(stream)?;
    }
    Ok(format!("gated-wait ok low={LOW} high={HIGH}"))
}

/// A low-priority (CUDA priority 0) and a high-priority (−5) stream, each with its own log of
/// `append_tag` kernels (low: `LOW` kernels, tags 100…; high: `HIGH`, tags 0…), so each
/// stream's own order reads from its log while the two streams' kernels overlap.
struct Pair {
    low: CUstream,
    high: CUstream,
    low_log: (u64, u64),
    high_log: (u64, u64),
}

impl Pair {
    fn new(g: &Gpu) -> Result<Pair, AppError> {
        let (low, _, _) = g.stream_with_priority(CU_STREAM_NON_BLOCKING, 0)?;
        let (high, _, _) = g.stream_with_priority(CU_STREAM_NON_BLOCKING, -5)?;
        let low_log = (g.alloc(LOW as usize)?, g.alloc(1)?);
        let high_log = (g.alloc(HIGH as usize)?, g.alloc(1)?);
        g.memset32(low_log.1, 0, 1)?;
        g.memset32(high_log.1, 0, 1)?;
        Ok(Pair {
            low,
            high,
            low_log,
            high_log,
        })
    }

    /// Appends tags `range` on the low stream (offset by 100).
    fn low(&self, s: &Session, range: std::ops::Range<i32>) -> Result<(), AppError> {
        for t in range {
            let (log, counter) = self.low_log;
            s.gpu.launch(
                s.k.append,
                self.low,
                &[Ptr(log), Ptr(counter), I32(100 + t)],
            )?;
        }
        Ok(())
    }

    /// Appends tags `range` on the high stream.
    fn high(&self, s: &Session, range: std::ops::Range<i32>) -> Result<(), AppError> {
        for t in range {
            let (log, counter) = self.high_log;
            s.gpu
                .launch(s.k.append, self.high, &[Ptr(log), Ptr(counter), I32(t)])?;
        }
        Ok(())
    }

    /// Synchronizes both streams, checks that each ran its kernels in order, destroys them.
    fn finish(self, g: &Gpu) -> Result<(), AppError> {
        g.sync(self.high)?;
        g.sync(self.low)?;
        let low = g.download(self.low_log.0, LOW as usize)?;
        ensure(low == (100..100 + LOW).collect::<Vec<_>>(), || {
            format!("low tags {low:?}")
        })?;
        let high = g.download(self.high_log.0, HIGH as usize)?;
        ensure(high == (0..HIGH).collect::<Vec<_>>(), || {
            format!("high tags {high:?}")
        })?;
        g.destroy_stream(self.low)?;
        g.destroy_stream(self.high)
    }
}

/// The whole context synchronized while a low-priority stream is suspended: the high stream's
/// burst makes the low one yield (at Level 2 its launched kernels wait behind its gate), then
/// `cuCtxSynchronize` waits for everything, the low stream's work included. It must return.
pub fn ctx_sync_gated(s: &Session) -> Result<String, AppError> {
    let pair = Pair::new(&s.gpu)?;
    pair.low(s, 0..LOW)?;
    pair.high(s, 0..HIGH)?;
    s.gpu.ctx_sync()?;
    pair.finish(&s.gpu)?;
    Ok(format!("ctx-sync-gated ok low={LOW} high={HIGH}"))
}

/// Steps of the `gil` scenario's best-effort thread, and kernels per step.
pub const GIL_STEPS: i32 = 24;
/// Kernels per best-effort step.
pub const GIL_STEP_KERNELS: i32 = 16;
/// Requests of the latency-critical thread, and kernels per request.
pub const GIL_REQUESTS: i32 = 8;
/// Kernels per request.
pub const GIL_REQUEST_KERNELS: i32 = 4;

/// Two threads of an interpreter with a global lock, as PyTorch's are under Python's GIL: a
/// launch is made holding the lock, which a thread blocked inside the driver keeps. A
/// best-effort thread launches steps of kernels on a normal stream, synchronizing (without the
/// lock) every fourth step; a latency-critical thread takes the lock for each request's
/// launches on the highest-priority stream, then synchronizes without it. However Baton holds
/// the best-effort thread back (suspension, a full buffer), both must finish.
pub fn gil(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    let (low, _, _) = g.stream_with_priority(CU_STREAM_NON_BLOCKING, 0)?;
    let (high, _, _) = g.stream_with_priority(CU_STREAM_NON_BLOCKING, -5)?;
    let n_low = (GIL_STEPS * GIL_STEP_KERNELS) as usize;
    let n_high = (GIL_REQUESTS * GIL_REQUEST_KERNELS) as usize;
    // One log per stream: each stream's own order reads from its log while the two streams'
    // kernels overlap.
    let (log_low, counter_low) = (g.alloc(n_low)?, g.alloc(1)?);
    let (log_high, counter_high) = (g.alloc(n_high)?, g.alloc(1)?);
    g.memset32(counter_low, 0, 1)?;
    g.memset32(counter_high, 0, 1)?;
    let lock = Mutex::new(());
    // Stream handles cross to the other thread as plain addresses.
    let low_addr = low as usize;
    std::thread::scope(|scope| -> Result<(), AppError> {
        let be = scope.spawn(|| -> Result<(), AppError> {
            let low = low_addr as baton_cuda_sys::CUstream;
            g.set_current(s.ctx)?;
            for step in 0..GIL_STEPS {
                let held = baton_core::locks::lock(&lock);
                for i in 0..GIL_STEP_KERNELS {
                    let tag = 1000 + step * GIL_STEP_KERNELS + i;
                    g.launch(k.append, low, &[Ptr(log_low), Ptr(counter_low), I32(tag)])?;
                }
                drop(held);
                if step % 4 == 3 {
                    g.sync(low)?;
                }
            }
            g.sync(low)
        });
        for r in 0..GIL_REQUESTS {
            std::thread::sleep(Duration::from_millis(3));
            let held = baton_core::locks::lock(&lock);
            for i in 0..GIL_REQUEST_KERNELS {
                let tag = r * GIL_REQUEST_KERNELS + i;
                g.launch(
                    k.append,
                    high,
                    &[Ptr(log_high), Ptr(counter_high), I32(tag)],
                )?;
            }
            drop(held);
            g.sync(high)?;
        }
        be.join()
            .map_err(|_| AppError::Mismatch("the best-effort thread panicked".into()))?
    })?;
    // Each stream ran its kernels in order.
    let low_tags = g.download(log_low, n_low)?;
    ensure(
        low_tags == (1000..1000 + n_low as i32).collect::<Vec<_>>(),
        || format!("best-effort tags out of order: {low_tags:?}"),
    )?;
    let high_tags = g.download(log_high, n_high)?;
    ensure(high_tags == (0..n_high as i32).collect::<Vec<_>>(), || {
        format!("latency-critical tags out of order: {high_tags:?}")
    })?;
    for stream in [low, high] {
        g.destroy_stream(stream)?;
    }
    Ok(format!("gil ok be={n_low} hp={n_high}"))
}

/// A high-priority stream's first launch of a kernel never launched before, while a
/// low-priority stream is suspended with launched work (at Level 2: behind its closed gate).
/// Under lazy loading, loading the kernel waits for all pending work of the context; the low
/// stream's gate must open for it, or the launch never returns.
pub fn lazy_gated(s: &Session) -> Result<String, AppError> {
    let g = &s.gpu;
    let pair = Pair::new(g)?;
    let filled = g.alloc(1)?;
    g.memset32(filled, 0, 1)?;
    pair.low(s, 0..LOW)?;
    pair.high(s, 0..HIGH)?;
    // `fill` has not been launched in this process before.
    g.launch(s.k.fill, pair.high, &[Ptr(filled), I32(1), I32(7)])?;
    pair.finish(g)?;
    let f = g.download(filled, 1)?;
    ensure(f == [7], || format!("fill wrote {f:?}"))?;
    Ok(format!("lazy-gated ok low={LOW} high={HIGH}"))
}

/// A dependency no API call names: the high-priority stream waits (`cuStreamWaitValue32`) for
/// a word the low-priority stream writes after its slow work. Baton cannot see it; whatever it
/// suspends, the program must finish.
pub fn hidden_wait(s: &Session) -> Result<String, AppError> {
    let g = &s.gpu;
    let pair = Pair::new(g)?;
    let word = g.alloc(1)?;
    g.memset32(word, 0, 1)?;
    pair.low(s, 0..LOW)?;
    g.write_value(pair.low, word, 1)?;
    pair.high(s, 0..HIGH / 2)?;
    g.wait_value(pair.high, word, 1, CU_STREAM_WAIT_VALUE_GEQ)?;
    pair.high(s, HIGH / 2..HIGH)?;
    pair.finish(g)?;
    Ok(format!("hidden-wait ok low={LOW} high={HIGH}"))
}
