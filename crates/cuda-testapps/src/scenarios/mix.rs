//! Long-running programs for soak and chaos runs.
//!
//! - `mix` runs the seeded [`Plan`] of `$BATON_TEST_SEED` (default 1) with
//!   `$BATON_TEST_STEPS` steps (default 400), sleeping `$BATON_TEST_THINK_US` microseconds
//!   (default 0) after each, then checks its own results: every stream's log holds exactly
//!   the tags launched on it, in order, and every copy made after a cross-stream wait saw at
//!   least the kernels of the other stream that it waited for. The driver's log is checked
//!   separately ([`crate::mix::check`]).
//! - `hang` launches a kernel that runs for `$BATON_TEST_HANG_US` microseconds (default: for
//!   ever, as a hung kernel does) and waits for it, after printing `hung` once the launch is
//!   made.

use std::io::Write;
use std::time::Duration;

use baton_cuda_sys::{CU_EVENT_DISABLE_TIMING, CU_STREAM_DEFAULT, CU_STREAM_NON_BLOCKING};

use super::session::{Session, checksum};
use crate::error::{AppError, ensure};
use crate::gpu::KArg::{I32, Ptr, U64};
use crate::mix::{Plan, Step};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

pub fn mix(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    let seed = env_u64("BATON_TEST_SEED", 1);
    let steps = usize::try_from(env_u64("BATON_TEST_STEPS", 400)).unwrap_or(400);
    let think = Duration::from_micros(env_u64("BATON_TEST_THINK_US", 0));
    let plan = Plan::new(seed, steps);
    let n = plan.streams();
    let mut streams = Vec::with_capacity(n);
    let (mut logs, mut counters, mut events) = (Vec::new(), Vec::new(), Vec::new());
    for (i, nonblocking) in plan.nonblocking.iter().enumerate() {
        let flags = if *nonblocking {
            CU_STREAM_NON_BLOCKING
        } else {
            CU_STREAM_DEFAULT
        };
        // Priorities 0 and -1 alternate: the device's stream priorities are hints only.
        let (stream, _, _) = g.stream_with_priority(flags, -((i % 2) as i32))?;
        streams.push(stream);
        logs.push(g.alloc(plan.tags(i).len().max(1))?);
        let counter = g.alloc(1)?;
        g.memset32(counter, 0, 1)?;
        counters.push(counter);
        events.push(g.event(CU_EVENT_DISABLE_TIMING)?);
    }
    let copies = plan.copies();
    let snaps = g.alloc(copies.max(1))?;
    g.memset32(snaps, 0xffff_ffff, copies.max(1))?;
    for step in &plan.steps {
        match *step {
            Step::Launch { stream, tag } => g.launch(
                k.append,
                streams[stream],
                &[Ptr(logs[stream]), Ptr(counters[stream]), I32(tag)],
            )?,
            Step::Depend { from, to, copy, .. } => {
                g.record(events[from], streams[from])?;
                g.wait_event(streams[to], events[from])?;
                g.copy_async(snaps + 4 * copy as u64, counters[from], 1, streams[to])?;
            }
            Step::Sync { stream } => g.sync(streams[stream])?,
        }
        if !think.is_zero() {
            std::thread::sleep(think);
        }
    }
    for stream in &streams {
        g.sync(*stream)?;
    }
    let mut all = Vec::new();
    for (i, log) in logs.iter().enumerate() {
        let expected = plan.tags(i);
        let got = g.download(*log, expected.len().max(1))?;
        let got = &got[..expected.len()];
        ensure(got == expected.as_slice(), || {
            format!("stream {i} ran {got:?}, launched {expected:?}")
        })?;
        let count = g.download(counters[i], 1)?[0];
        ensure(count as usize == expected.len(), || {
            format!(
                "stream {i} counted {count} kernels, launched {}",
                expected.len()
            )
        })?;
        all.extend_from_slice(got);
    }
    let seen = g.download(snaps, copies.max(1))?;
    for step in &plan.steps {
        if let Step::Depend {
            from, copy, before, ..
        } = *step
        {
            let total = plan.tags(from).len() as i32;
            ensure(seen[copy] >= before && seen[copy] <= total, || {
                format!(
                    "copy {copy} saw {} kernels of stream {from} done; it waited for {before} \
                     (of {total})",
                    seen[copy]
                )
            })?;
        }
    }
    for (stream, event) in streams.iter().zip(&events) {
        g.destroy_event(*event)?;
        g.destroy_stream(*stream)?;
    }
    Ok(format!(
        "mix ok seed={seed} streams={n} kernels={} copies={copies} checksum={:016x}",
        plan.kernels(),
        checksum(&all)
    ))
}

pub fn hang(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    let us = env_u64("BATON_TEST_HANG_US", u64::MAX);
    let (stream, _, _) = g.stream_with_priority(CU_STREAM_NON_BLOCKING, 0)?;
    g.launch(k.spin, stream, &[U64(us)])?;
    println!("hung");
    // The parent reads the line while this process waits.
    let _ = std::io::stdout().flush();
    g.sync(stream)?;
    g.destroy_stream(stream)?;
    Ok(format!("hang ok us={us}"))
}
