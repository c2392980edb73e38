//! Ordering scenarios: per-stream FIFO order, legacy default stream synchronization, and
//! per-thread default streams.

use baton_cuda_sys::{
    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, CU_STREAM_DEFAULT, CU_STREAM_NON_BLOCKING,
    CU_STREAM_PER_THREAD, CU_STREAM_WAIT_VALUE_GEQ, CUresult, CUstream,
};

use super::session::{Session, checksum, join};
use crate::api::{Api, Resolve};
use crate::error::{AppError, ensure, expect_code};
use crate::gpu::{Gpu, KArg::*};

const LEGACY: CUstream = std::ptr::null_mut();

/// Many kernels, copies and fills on three streams; every stream's `append_tag` log must be in
/// submission order and its data must match the host model of the same operations in order.
pub fn order(s: &Session) -> Result<String, AppError> {
    const STREAMS: usize = 3;
    const ROUNDS: usize = 50;
    const N: usize = 64;
    let (g, k) = (&s.gpu, &s.k);
    let mut commands = 0;
    let mut all = Vec::new();
    let mut lanes = Vec::new();
    for lane in 0..STREAMS {
        let stream = g.stream(CU_STREAM_DEFAULT)?;
        let (data, snap, log, counter) = (g.alloc(N)?, g.alloc(N)?, g.alloc(ROUNDS)?, g.alloc(1)?);
        let initial: Vec<i32> = (0..N).map(|i| (i + lane) as i32).collect();
        g.upload_async(data, &initial, stream)?;
        g.memset32_async(counter, 0, 1, stream)?;
        g.memset32_async(log, u32::MAX, ROUNDS, stream)?;
        commands += 3;
        lanes.push((stream, data, snap, log, counter, initial.clone(), initial));
    }
    for round in 0..ROUNDS {
        for (lane, (stream, data, snap, log, counter, model, model_snap)) in
            lanes.iter_mut().enumerate()
        {
            let tag = (lane * 1000 + round) as i32;
            g.launch(k.append, *stream, &[Ptr(*log), Ptr(*counter), I32(tag)])?;
            commands += 1;
            match round % 3 {
                0 => {
                    g.launch(
                        k.add,
                        *stream,
                        &[Ptr(*data), I32(N as i32), I32(round as i32)],
                    )?;
                    model
                        .iter_mut()
                        .for_each(|v| *v = v.wrapping_add(round as i32));
                    commands += 1;
                }
                1 => {
                    g.launch(k.mul, *stream, &[Ptr(*data), I32(N as i32), I32(3)])?;
                    model.iter_mut().for_each(|v| *v = v.wrapping_mul(3));
                    commands += 1;
                }
                _ => {}
            }
            if round % 10 == 9 {
                g.copy_async(*snap, *data, N, *stream)?;
                model_snap.clone_from(model);
                commands += 1;
            }
        }
    }
    for (lane, (stream, data, snap, log, counter, model, model_snap)) in lanes.iter().enumerate() {
        let out = [g.pinned(N)?, g.pinned(N)?, g.pinned(ROUNDS)?, g.pinned(1)?];
        g.download_async(&out[0], *data, N, *stream)?;
        g.download_async(&out[1], *snap, N, *stream)?;
        g.download_async(&out[2], *log, ROUNDS, *stream)?;
        g.download_async(&out[3], *counter, 1, *stream)?;
        commands += 4;
        g.sync(*stream)?;
        let [data_out, snap_out, log_out, counter_out] = out.map(|p| p.to_vec());
        let expected_log: Vec<i32> = (0..ROUNDS).map(|r| (lane * 1000 + r) as i32).collect();
        ensure(log_out == expected_log, || {
            format!("stream {lane}: log {log_out:?}")
        })?;
        ensure(counter_out == [ROUNDS as i32], || {
            format!("stream {lane}: counter {counter_out:?}")
        })?;
        ensure(data_out == *model, || {
            format!("stream {lane}: data differs from the in-order model")
        })?;
        ensure(snap_out == *model_snap, || {
            format!("stream {lane}: snapshot differs from the in-order model")
        })?;
        all.extend(data_out);
        all.extend(snap_out);
        all.extend(log_out);
        g.destroy_stream(*stream)?;
    }
    Ok(format!(
        "order ok streams={STREAMS} commands={commands} checksum={:016x}",
        checksum(&all)
    ))
}

/// Legacy default stream semantics: legacy work waits for earlier work of blocking streams,
/// blocking streams wait for earlier legacy work, a non-blocking stream waits for neither.
///
/// Stream `b1` waits on a flag that only the non-blocking stream sets, so the log order
/// `0,1,2,3` is forced, and a broken implementation deadlocks rather than passing.
pub fn legacy(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    let (b1, b2, nb) = (
        g.stream(CU_STREAM_DEFAULT)?,
        g.stream(CU_STREAM_DEFAULT)?,
        g.stream(CU_STREAM_NON_BLOCKING)?,
    );
    let (log, counter, flag) = (g.alloc(8)?, g.alloc(1)?, g.alloc(1)?);
    g.memset32(log, u32::MAX, 8)?;
    g.memset32(counter, 0, 1)?;
    g.memset32(flag, 0, 1)?;
    let tag = |t: i32| [Ptr(log), Ptr(counter), I32(t)];
    g.wait_value(b1, flag, 1, CU_STREAM_WAIT_VALUE_GEQ)?;
    g.launch(k.append, b1, &tag(1))?;
    g.launch(k.append, LEGACY, &tag(2))?;
    g.launch(k.append, b2, &tag(3))?;
    let b2_before = g.query(b2);
    expect_code(
        "cuStreamQuery(b2) while b1 waits",
        b2_before,
        CUresult::NOT_READY,
    )?;
    g.launch(k.append, nb, &tag(0))?;
    g.write_value(nb, flag, 1)?;
    g.sync(b2)?;
    let out = g.download(log, 4)?;
    ensure(out == [0, 1, 2, 3], || {
        format!("log {out:?}, expected 0,1,2,3")
    })?;
    expect_code(
        "cuStreamQuery(legacy) at the end",
        g.query(LEGACY),
        CUresult::SUCCESS,
    )?;
    for stream in [b1, b2, nb] {
        g.destroy_stream(stream)?;
    }
    Ok(format!(
        "legacy ok log={} b2_before={}",
        join(&out),
        b2_before.0
    ))
}

/// Per-thread default streams: each host thread's NULL stream (through the `_ptsz` symbols
/// `cuGetProcAddress` returns for `CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM`) is its own
/// blocking stream; legacy work waits for them; `CU_STREAM_PER_THREAD` names the caller's.
pub fn ptds(s: &Session) -> Result<String, AppError> {
    let (g, k, ctx) = (&s.gpu, &s.k, s.ctx);
    let ptds = Gpu {
        api: Api::load(Resolve::ProcAddress(
            &s.driver,
            CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
        ))?,
    };
    let (log, counter, flag) = (g.alloc(8)?, g.alloc(1)?, g.alloc(1)?);
    g.memset32(log, u32::MAX, 8)?;
    g.memset32(counter, 0, 1)?;
    g.memset32(flag, 0, 1)?;
    let tag = move |t: i32| [Ptr(log), Ptr(counter), I32(t)];
    std::thread::scope(|scope| {
        // Thread 1: its per-thread stream waits for the flag, then appends 1.
        scope
            .spawn(move || -> Result<(), AppError> {
                ptds.set_current(ctx)?;
                ptds.wait_value(LEGACY, flag, 1, CU_STREAM_WAIT_VALUE_GEQ)?;
                ptds.launch(k.append, LEGACY, &tag(1))
            })
            .join()
            .unwrap_or_else(|_| Err(AppError::Mismatch("thread 1 panicked".into())))
    })?;
    let second = std::thread::scope(|scope| {
        // Thread 2: a different per-thread stream, so it is not stuck behind thread 1's wait.
        scope
            .spawn(move || -> Result<CUresult, AppError> {
                ptds.set_current(ctx)?;
                ptds.launch(k.append, LEGACY, &tag(0))?;
                ptds.write_value(LEGACY, flag, 1)?;
                ptds.sync(LEGACY)?;
                Ok(ptds.query(LEGACY))
            })
            .join()
            .unwrap_or_else(|_| Err(AppError::Mismatch("thread 2 panicked".into())))
    })?;
    expect_code(
        "cuStreamQuery_ptsz after synchronizing",
        second,
        CUresult::SUCCESS,
    )?;
    // The legacy stream waits for both threads' per-thread streams.
    g.launch(k.append, LEGACY, &tag(2))?;
    // The main thread's per-thread stream, named explicitly through the legacy symbols.
    g.launch(k.append, CU_STREAM_PER_THREAD, &tag(3))?;
    // A `_ptds` synchronous copy on the main thread's per-thread stream.
    let out = ptds.download(log, 4)?;
    ensure(out == [0, 1, 2, 3], || {
        format!("log {out:?}, expected 0,1,2,3")
    })?;
    Ok(format!("ptds ok log={}", join(&out)))
}
