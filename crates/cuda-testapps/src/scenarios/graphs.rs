//! Stream capture into graphs, graph launches, and stream-ordered allocation.

use baton_cuda_sys::{
    CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
    CU_STREAM_CAPTURE_STATUS_ACTIVE, CU_STREAM_CAPTURE_STATUS_NONE, CU_STREAM_DEFAULT, CUresult,
};

use super::session::{Session, checksum, join};
use crate::error::{AppError, ensure, expect_code};
use crate::gpu::KArg::*;

/// Capture three kernels and a fill, check nothing ran, instantiate, launch three times and
/// destroy the graph before the launches ran (they still run).
/// A second capture is invalidated by a synchronization of the capturing stream.
pub fn capture(s: &Session) -> Result<String, AppError> {
    const LAUNCHES: usize = 3;
    let (g, k) = (&s.gpu, &s.k);
    let stream = g.stream(CU_STREAM_DEFAULT)?;
    let (buf, log, counter, marks) = (g.alloc(8)?, g.alloc(8)?, g.alloc(1)?, g.alloc(4)?);
    let initial: Vec<i32> = (1..=8).collect();
    g.upload(buf, &initial)?;
    g.memset32(log, 0, 8)?;
    g.memset32(counter, 0, 1)?;
    g.memset32(marks, 0, 4)?;

    g.begin_capture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL)?;
    let status = g.is_capturing(stream)?;
    ensure(status == CU_STREAM_CAPTURE_STATUS_ACTIVE, || {
        format!("capturing status {status:?}")
    })?;
    g.launch(k.add, stream, &[Ptr(buf), I32(8), I32(1)])?;
    g.launch(k.mul, stream, &[Ptr(buf), I32(8), I32(2)])?;
    g.launch(k.append, stream, &[Ptr(log), Ptr(counter), I32(7)])?;
    g.memset32_async(marks, 0x5a, 4, stream)?;
    let (info_status, id, has_graph, deps) = g.capture_info(stream)?;
    ensure(
        info_status == CU_STREAM_CAPTURE_STATUS_ACTIVE && id != 0 && has_graph && deps == 1,
        || format!("capture info: {info_status:?} id {id} graph {has_graph} deps {deps}"),
    )?;
    let graph = g.end_capture(stream)?;
    let after = g.is_capturing(stream)?;
    ensure(after == CU_STREAM_CAPTURE_STATUS_NONE, || {
        format!("status after end {after:?}")
    })?;

    // Captured work did not execute.
    let untouched = g.download(buf, 8)?;
    ensure(untouched == initial, || {
        format!("captured kernels ran before the graph launch: {untouched:?}")
    })?;
    ensure(g.download(marks, 4)? == [0; 4], || {
        "captured fill ran before the graph launch".into()
    })?;

    let exec = g.instantiate(graph)?;
    for _ in 0..LAUNCHES {
        g.graph_launch(exec, stream)?;
    }
    // Destroyed at once, before the launches ran: CUDA still runs what was launched.
    g.destroy_graph(exec, graph)?;
    g.sync(stream)?;
    let out = g.download(buf, 8)?;
    let expected: Vec<i32> = initial
        .iter()
        .map(|&v| (0..LAUNCHES).fold(v, |x, _| (x + 1) * 2))
        .collect();
    ensure(out == expected, || {
        format!("after {LAUNCHES} launches: {out:?}, expected {expected:?}")
    })?;
    let tags = g.download(log, LAUNCHES)?;
    ensure(
        tags == [7; LAUNCHES] && g.download(counter, 1)? == [LAUNCHES as i32],
        || format!("tags {tags:?}"),
    )?;
    ensure(g.download(marks, 4)? == [0x5a; 4], || {
        "captured fill".into()
    })?;

    // Synchronizing a capturing stream is prohibited and invalidates the capture.
    g.begin_capture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
    g.launch(k.add, stream, &[Ptr(buf), I32(8), I32(100)])?;
    let refused = g.sync_code(stream);
    expect_code(
        "cuStreamSynchronize while capturing",
        refused,
        CUresult::STREAM_CAPTURE_UNSUPPORTED,
    )?;
    let invalidated = g.end_capture_code(stream);
    expect_code(
        "cuStreamEndCapture of an invalidated capture",
        invalidated,
        CUresult::STREAM_CAPTURE_INVALIDATED,
    )?;
    ensure(g.download(buf, 8)? == expected, || {
        "an invalidated capture's kernel ran".into()
    })?;
    g.destroy_stream(stream)?;
    Ok(format!(
        "capture ok launches={LAUNCHES} tags={} refused={} invalidated={} checksum={:016x}",
        join(&tags),
        refused.0,
        invalidated.0,
        checksum(&out)
    ))
}

/// `cuMemAllocAsync`: the pointer is usable at once, in stream order; `cuMemFreeAsync` frees
/// it in stream order.
pub fn async_alloc(s: &Session) -> Result<String, AppError> {
    const N: usize = 1024;
    let (g, k) = (&s.gpu, &s.k);
    let stream = g.stream(CU_STREAM_DEFAULT)?;
    let out = g.pinned(N)?;
    let mut sums = Vec::new();
    for round in 0..4 {
        let ptr = g.alloc_async(N, stream)?;
        ensure(ptr != 0, || "cuMemAllocAsync returned NULL".into())?;
        g.memset32_async(ptr, 3, N, stream)?;
        g.launch(k.add, stream, &[Ptr(ptr), I32(N as i32), I32(round)])?;
        g.memcpy_async(out.addr(), ptr, N, stream)?;
        g.free_async(ptr, stream)?;
        g.sync(stream)?;
        let values = out.to_vec();
        ensure(values.iter().all(|&v| v == 3 + round), || {
            format!("round {round}: {:?}", &values[..4])
        })?;
        sums.push(values.iter().sum::<i32>());
    }
    g.destroy_stream(stream)?;
    g.free_pinned(out)?;
    Ok(format!("async-alloc ok count={N} sums={}", join(&sums)))
}

/// A capture in each mode (global, thread-local, relaxed), begun while the capturing stream's
/// earlier work still runs, with pauses between captured calls (a framework's own work) and a
/// second stream forked into the capture and joined back through events; meanwhile another
/// thread keeps launching on a third stream. The capture must succeed, and the graph replayed
/// twice must do exactly its work twice.
pub fn capture_modes(s: &Session) -> Result<String, AppError> {
    use baton_cuda_sys::{
        CU_EVENT_DISABLE_TIMING, CU_STREAM_CAPTURE_MODE_RELAXED, CU_STREAM_NON_BLOCKING,
    };
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;
    const SIDE_LAUNCHES: i32 = 30;
    let (g, k) = (&s.gpu, &s.k);
    let (main, fork, side) = (
        g.stream(CU_STREAM_NON_BLOCKING)?,
        g.stream(CU_STREAM_NON_BLOCKING)?,
        g.stream(CU_STREAM_NON_BLOCKING)?,
    );
    let (forked, joined) = (
        g.event(CU_EVENT_DISABLE_TIMING)?,
        g.event(CU_EVENT_DISABLE_TIMING)?,
    );
    let (buf, side_buf) = (g.alloc(8)?, g.alloc(8)?);
    g.memset32(side_buf, 0, 8)?;
    let side_addr = side as usize;
    let mut results = Vec::new();
    for mode in [
        CU_STREAM_CAPTURE_MODE_GLOBAL,
        CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
        CU_STREAM_CAPTURE_MODE_RELAXED,
    ] {
        g.memset32(buf, 1, 8)?;
        let launched = AtomicU32::new(0);
        let graph = std::thread::scope(|scope| -> Result<_, AppError> {
            let other = scope.spawn(|| -> Result<(), AppError> {
                let side = side_addr as baton_cuda_sys::CUstream;
                g.set_current(s.ctx)?;
                for _ in 0..SIDE_LAUNCHES {
                    g.launch(k.add, side, &[Ptr(side_buf), I32(8), I32(1)])?;
                    launched.fetch_add(1, Ordering::AcqRel);
                    std::thread::sleep(Duration::from_micros(200));
                }
                Ok(())
            });
            // Earlier work still running when the capture begins, and the other thread busy.
            g.launch(k.spin, main, &[U64(3_000)])?;
            while launched.load(Ordering::Acquire) < 3 {
                std::thread::yield_now();
            }
            g.begin_capture(main, mode)?;
            g.launch(k.add, main, &[Ptr(buf), I32(8), I32(1)])?;
            std::thread::sleep(Duration::from_millis(2));
            g.record(forked, main)?;
            g.wait_event(fork, forked)?;
            g.launch(k.mul, fork, &[Ptr(buf), I32(8), I32(3)])?;
            g.record(joined, fork)?;
            g.wait_event(main, joined)?;
            std::thread::sleep(Duration::from_millis(2));
            g.launch(k.add, main, &[Ptr(buf), I32(8), I32(2)])?;
            let graph = g.end_capture(main);
            other
                .join()
                .map_err(|_| AppError::Mismatch("the launching thread panicked".into()))??;
            graph
        })?;
        let exec = g.instantiate(graph)?;
        g.graph_launch(exec, main)?;
        g.graph_launch(exec, main)?;
        g.sync(main)?;
        g.destroy_graph(exec, graph)?;
        // ((1 + 1) * 3 + 2) = 8, then ((8 + 1) * 3 + 2) = 29.
        let out = g.download(buf, 8)?;
        ensure(out == [29; 8], || format!("mode {mode:?}: {out:?}"))?;
        results.push(out[0]);
    }
    g.sync(side)?;
    let side_out = g.download(side_buf, 8)?;
    ensure(side_out == [3 * SIDE_LAUNCHES; 8], || {
        format!("the other thread's work: {side_out:?}")
    })?;
    for stream in [main, fork, side] {
        g.destroy_stream(stream)?;
    }
    Ok(format!("capture-modes ok results={}", join(&results)))
}
