//! Stream priorities: slow kernels queued on a low-priority stream, then a burst on the
//! highest-priority stream. The result line only counts; how the two interleave is read from
//! the driver's log by the tests (natively they overlap; under Baton the low stream yields).

use baton_cuda_sys::CU_STREAM_NON_BLOCKING;

use super::Session;
use crate::error::{AppError, ensure};
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
