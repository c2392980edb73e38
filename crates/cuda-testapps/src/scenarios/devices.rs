//! Several devices and multi-process jobs.
//!
//! `devices`: every device the process sees (after `CUDA_VISIBLE_DEVICES`), by ordinal and
//! UUID, each with a stream on its primary context running a few kernels; prints
//! `devices n=N 0=UUID 1=UUID …`, so a test can tell which physical GPU each ordinal is.
//!
//! `rank`: one rank of a data-parallel job on device 0 (the test picks the GPU with
//! `CUDA_VISIBLE_DEVICES`): `$BATON_TEST_STEPS` steps (default 8) of four kernels, each step
//! ending at a barrier with the other `$BATON_TEST_WORLD` ranks (files `step-S.rank-R` in
//! `$BATON_TEST_BARRIER`). While a rank waits it launches one `spin_us(200)` kernel at a time
//! and synchronizes, as a collective's kernel busy-waits for its peers on the GPU; it prints
//! `rank R ok steps=S spins=N`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use baton_cuda_sys::CU_STREAM_NON_BLOCKING;

use super::session::Session;
use crate::error::{AppError, ensure};
use crate::gpu::KArg::{I32, Ptr, U64};

pub fn devices(s: &Session) -> Result<String, AppError> {
    let g = &s.gpu;
    let n = g.device_count()?;
    let mut line = format!("devices n={n}");
    for ordinal in 0..n {
        let uuid = g.device_uuid(ordinal)?;
        g.primary_on(ordinal)?;
        let dev = g.ctx_device()?;
        ensure(dev == ordinal, || {
            format!("the primary context of {ordinal} says it is on {dev}")
        })?;
        let k = g.load_kernels()?;
        let (stream, _, _) = g.stream_with_priority(CU_STREAM_NON_BLOCKING, 0)?;
        let (log, counter) = (g.alloc(4)?, g.alloc(1)?);
        g.memset32(counter, 0, 1)?;
        for t in 0..4 {
            g.launch(
                k.append,
                stream,
                &[Ptr(log), Ptr(counter), I32(ordinal * 10 + t)],
            )?;
        }
        g.sync(stream)?;
        let out = g.download(log, 4)?;
        ensure(
            out == (0..4).map(|t| ordinal * 10 + t).collect::<Vec<_>>(),
            || format!("device {ordinal} tags {out:?}"),
        )?;
        g.destroy_stream(stream)?;
        line.push_str(&format!(" {ordinal}={uuid}"));
    }
    g.set_current(s.ctx)?;
    Ok(line)
}

fn env_u32(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub fn rank(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    let me = env_u32("BATON_TEST_RANK", 0);
    let world = env_u32("BATON_TEST_WORLD", 1);
    let steps = env_u32("BATON_TEST_STEPS", 8);
    let dir = std::env::var_os("BATON_TEST_BARRIER")
        .map(PathBuf::from)
        .ok_or_else(|| AppError::Mismatch("BATON_TEST_BARRIER is not set".into()))?;
    let (stream, _, _) = g.stream_with_priority(CU_STREAM_NON_BLOCKING, 0)?;
    let (log, counter) = (g.alloc(4)?, g.alloc(1)?);
    let mut spins = 0u64;
    for step in 0..steps {
        g.memset32(counter, 0, 1)?;
        for t in 0..4 {
            g.launch(k.append, stream, &[Ptr(log), Ptr(counter), I32(t)])?;
        }
        g.sync(stream)?;
        let out = g.download(log, 4)?;
        ensure(out == [0, 1, 2, 3], || {
            format!("rank {me} step {step} tags {out:?}")
        })?;
        let mine = dir.join(format!("step-{step}.rank-{me}"));
        std::fs::write(&mine, b"").map_err(|e| AppError::Mismatch(format!("{e}")))?;
        let deadline = Instant::now() + Duration::from_secs(60);
        while !(0..world).all(|r| dir.join(format!("step-{step}.rank-{r}")).exists()) {
            ensure(Instant::now() < deadline, || {
                format!("rank {me}: the other ranks never reached step {step}")
            })?;
            g.launch(k.spin, stream, &[U64(200)])?;
            g.sync(stream)?;
            spins += 1;
        }
    }
    g.destroy_stream(stream)?;
    Ok(format!("rank {me} ok steps={steps} spins={spins}"))
}
