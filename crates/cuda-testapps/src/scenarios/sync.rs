//! Synchronization scenarios: events, stream and context synchronization and queries,
//! synchronous copies and fills, and stream memory operations.
//!
//! Work is held back with `cuStreamWaitValue32` on a flag the scenario releases, so every
//! "not ready yet" observation is deterministic.

use baton_cuda_sys::{
    CU_EVENT_DEFAULT, CU_EVENT_DISABLE_TIMING, CU_STREAM_DEFAULT, CU_STREAM_NON_BLOCKING,
    CU_STREAM_WAIT_VALUE_AND, CU_STREAM_WAIT_VALUE_EQ, CU_STREAM_WAIT_VALUE_GEQ,
    CU_STREAM_WAIT_VALUE_NOR, CUresult, CUstream,
};

use super::session::{Session, checksum, join};
use crate::error::{AppError, ensure, expect_code};
use crate::gpu::KArg::*;

const LEGACY: CUstream = std::ptr::null_mut();

/// Record on one stream, wait on another; query before and after; synchronize; elapsed time.
pub fn events(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    let (a, b) = (g.stream(CU_STREAM_DEFAULT)?, g.stream(CU_STREAM_DEFAULT)?);
    let flag = g.pinned(1)?;
    let buf = g.alloc(16)?;
    let initial: Vec<i32> = (1..=16).collect();
    g.upload(buf, &initial)?;
    let (start, done, untimed, never) = (
        g.event(CU_EVENT_DEFAULT)?,
        g.event(CU_EVENT_DEFAULT)?,
        g.event(CU_EVENT_DISABLE_TIMING)?,
        g.event(CU_EVENT_DEFAULT)?,
    );
    g.record(start, a)?;
    g.wait_value(a, flag.addr(), 1, CU_STREAM_WAIT_VALUE_GEQ)?;
    g.launch(k.add, a, &[Ptr(buf), I32(16), I32(1)])?;
    g.record(done, a)?;
    g.wait_event(b, done)?;
    g.launch(k.mul, b, &[Ptr(buf), I32(16), I32(2)])?;
    g.record(untimed, b)?;
    let pending = g.event_query(done);
    expect_code("cuEventQuery before release", pending, CUresult::NOT_READY)?;
    expect_code(
        "cuStreamQuery(b) before release",
        g.query(b),
        CUresult::NOT_READY,
    )?;
    let never_recorded = g.event_query(never);
    expect_code(
        "cuEventQuery of an unrecorded event",
        never_recorded,
        CUresult::SUCCESS,
    )?;
    flag.set(0, 1);
    g.event_sync(done)?;
    let after = g.event_query(done);
    expect_code(
        "cuEventQuery after cuEventSynchronize",
        after,
        CUresult::SUCCESS,
    )?;
    g.sync(b)?;
    let out = g.download(buf, 16)?;
    let expected: Vec<i32> = initial.iter().map(|v| (v + 1) * 2).collect();
    ensure(out == expected, || {
        format!("buffer {out:?}, expected {expected:?}")
    })?;
    let elapsed = g.elapsed(start, done).map_err(|code| AppError::Cuda {
        call: "cuEventElapsedTime",
        code,
        expected: CUresult::SUCCESS,
    })?;
    ensure(elapsed >= 0.0, || format!("elapsed {elapsed} ms"))?;
    let untimed_code = g.elapsed(start, untimed).err().unwrap_or(CUresult::SUCCESS);
    expect_code(
        "cuEventElapsedTime with CU_EVENT_DISABLE_TIMING",
        untimed_code,
        CUresult::INVALID_HANDLE,
    )?;
    for event in [start, done, untimed, never] {
        g.destroy_event(event)?;
    }
    g.free_pinned(flag)?;
    Ok(format!(
        "events ok pending={} unrecorded={} after={} elapsed_nonnegative=1 untimed={} checksum={:016x}",
        pending.0,
        never_recorded.0,
        after.0,
        untimed_code.0,
        checksum(&out)
    ))
}

/// Stream and context synchronization and queries, synchronous copies and fills on the legacy
/// stream (which return only when done and see earlier legacy work).
pub fn sync(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    let stream = g.stream(CU_STREAM_DEFAULT)?;
    let flag = g.pinned(1)?;
    let buf = g.alloc(32)?;
    let idle = g.query(stream);
    expect_code("cuStreamQuery of an idle stream", idle, CUresult::SUCCESS)?;
    g.wait_value(stream, flag.addr(), 1, CU_STREAM_WAIT_VALUE_EQ)?;
    g.launch(k.fill, stream, &[Ptr(buf), I32(32), I32(7)])?;
    let busy = g.query(stream);
    expect_code(
        "cuStreamQuery of a waiting stream",
        busy,
        CUresult::NOT_READY,
    )?;
    flag.set(0, 1);
    g.sync(stream)?;
    let done = g.query(stream);
    expect_code(
        "cuStreamQuery after cuStreamSynchronize",
        done,
        CUresult::SUCCESS,
    )?;
    ensure(g.download(buf, 32)? == [7; 32], || "fill_i32 result".into())?;

    // Synchronous copies around a legacy-stream kernel: no explicit synchronization needed.
    let data: Vec<i32> = (0..32).map(|i| i * 3).collect();
    g.upload(buf, &data)?;
    g.launch(k.add, LEGACY, &[Ptr(buf), I32(32), I32(5)])?;
    let copied = g.download(buf, 32)?;
    let expected: Vec<i32> = data.iter().map(|v| v + 5).collect();
    ensure(copied == expected, || {
        format!("after a legacy kernel: {copied:?}")
    })?;
    let other = g.alloc(32)?;
    g.copy(other, buf, 32)?;
    ensure(g.download(other, 32)? == expected, || {
        "cuMemcpyDtoD result".into()
    })?;

    // Synchronous fills of 8, 16 and 32 bits.
    g.memset8(buf, 0x11, 16)?;
    g.memset16(buf + 16, 0x2233, 8)?;
    g.memset32(buf + 32, 0x4455_6677, 4)?;
    let filled = g.download(buf, 12)?;
    let expected_fill = [[0x1111_1111; 4], [0x2233_2233; 4], [0x4455_6677; 4]].concat();
    ensure(filled == expected_fill, || format!("fills {filled:x?}"))?;

    // Context synchronization waits for slow work on every stream.
    g.launch(k.spin, stream, &[U64(20_000)])?;
    g.launch(k.fill, stream, &[Ptr(other), I32(32), I32(9)])?;
    g.ctx_sync()?;
    let after_ctx = g.query(stream);
    expect_code(
        "cuStreamQuery after cuCtxSynchronize",
        after_ctx,
        CUresult::SUCCESS,
    )?;
    ensure(g.download(other, 32)? == [9; 32], || {
        "work finished by cuCtxSynchronize".into()
    })?;

    // CUDA 13's form, which `cudaDeviceSynchronize` calls, waits for a non-blocking stream's
    // work too: the copy on the legacy stream after it is not ordered after that stream.
    let nonblocking = g.stream(CU_STREAM_NON_BLOCKING)?;
    for _ in 0..8 {
        g.launch(k.spin, nonblocking, &[U64(2_000)])?;
        g.launch(k.add, nonblocking, &[Ptr(other), I32(32), I32(1)])?;
    }
    g.device_sync()?;
    let after_v2 = g.download(other, 32)?;
    ensure(after_v2 == [17; 32], || {
        format!("work not finished by cuCtxSynchronize_v2: {after_v2:?}")
    })?;
    g.destroy_stream(nonblocking)?;
    g.destroy_stream(stream)?;
    g.free(other)?;
    g.free(buf)?;
    g.free_pinned(flag)?;
    Ok(format!(
        "sync ok idle={} busy={} done={} after_ctx={} copied={:016x} filled={:016x}",
        idle.0,
        busy.0,
        done.0,
        after_ctx.0,
        checksum(&copied),
        checksum(&filled)
    ))
}

/// `cuStreamWaitValue32` with GEQ, AND, EQ and NOR, released by `cuStreamWriteValue32` on
/// another stream and by the host writing pinned memory.
pub fn wait_value(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    let (a, c, e) = (
        g.stream(CU_STREAM_DEFAULT)?,
        g.stream(CU_STREAM_DEFAULT)?,
        g.stream(CU_STREAM_DEFAULT)?,
    );
    let writer = g.stream(CU_STREAM_NON_BLOCKING)?;
    let (word, zero, results) = (g.alloc(1)?, g.alloc(1)?, g.alloc(4)?);
    let host_word = g.pinned(1)?;
    g.memset32(word, 0, 1)?;
    g.memset32(zero, 0, 1)?;
    g.memset32(results, 0, 4)?;
    let fill = |slot: u64, value: i32| [Ptr(results + 4 * slot), I32(1), I32(value)];

    g.wait_value(a, word, 5, CU_STREAM_WAIT_VALUE_GEQ)?;
    g.launch(k.fill, a, &fill(0, 1))?;
    g.wait_value(c, host_word.addr(), 0b100, CU_STREAM_WAIT_VALUE_AND)?;
    g.launch(k.fill, c, &fill(1, 2))?;
    g.write_value(writer, word, 3)?;
    let geq_blocked = g.query(a);
    expect_code(
        "cuStreamQuery(a): 3 is not >= 5",
        geq_blocked,
        CUresult::NOT_READY,
    )?;
    g.write_value(writer, word, 5)?;
    let and_blocked = g.query(c);
    expect_code(
        "cuStreamQuery(c) before the host writes",
        and_blocked,
        CUresult::NOT_READY,
    )?;
    host_word.set(0, 0b110);
    g.wait_value(e, word, 5, CU_STREAM_WAIT_VALUE_EQ)?;
    g.launch(k.fill, e, &fill(2, 3))?;
    g.wait_value(e, zero, 0xffff_fff0, CU_STREAM_WAIT_VALUE_NOR)?;
    g.launch(k.fill, e, &fill(3, 4))?;
    for stream in [a, c, e, writer] {
        g.sync(stream)?;
    }
    let out = g.download(results, 4)?;
    ensure(out == [1, 2, 3, 4], || format!("results {out:?}"))?;
    for stream in [a, c, e, writer] {
        g.destroy_stream(stream)?;
    }
    g.free_pinned(host_word)?;
    Ok(format!(
        "wait-value ok results={} blocked={},{}",
        join(&out),
        geq_blocked.0,
        and_blocked.0
    ))
}

/// Freeing memory waits for the work submitted before (CUDA's `cuMemFree` and `cuMemFreeHost`
/// synchronize the device), so a program may free what it just used without synchronizing —
/// PyTorch's `empty_cache` frees its cached blocks that way. A kernel and a pinned copy still
/// pending at the free must still read valid memory.
pub fn free_pending(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    let stream = g.stream(CU_STREAM_NON_BLOCKING)?;
    let keep = g.alloc(4)?;
    g.memset32(keep, 0, 4)?;
    let mut sums = Vec::new();
    for round in 1..=4 {
        let scratch = g.alloc(4)?;
        let staged = g.pinned(4)?;
        (0..4).for_each(|i| staged.set(i, round));
        g.launch(k.spin, stream, &[U64(1_000)])?;
        g.memcpy_async(scratch, staged.addr(), 4, stream)?;
        g.launch(k.add, stream, &[Ptr(scratch), I32(4), I32(100)])?;
        g.launch(k.copy, stream, &[Ptr(keep), Ptr(scratch), I32(4)])?;
        g.free(scratch)?;
        g.free_pinned(staged)?;
        g.sync(stream)?;
        sums.push(g.download(keep, 4)?.iter().sum::<i32>());
    }
    ensure(sums == [404, 408, 412, 416], || format!("sums {sums:?}"))?;
    g.destroy_stream(stream)?;
    Ok(format!("free-pending ok sums={}", join(&sums)))
}

/// What a framework's caching allocator does across streams: a block written on one stream is
/// read on another, which records an event; the block goes back to the first stream's pool and
/// is reused only once a poll of that event says the read is done (PyTorch's `record_stream`).
/// A pageable upload's source is overwritten as soon as the call returns. The reader must see
/// every round's own values.
pub fn allocator_reuse(s: &Session) -> Result<String, AppError> {
    use baton_cuda_sys::{CU_EVENT_DISABLE_TIMING, CUresult};
    let (g, k) = (&s.gpu, &s.k);
    let (writer, reader) = (
        g.stream(CU_STREAM_NON_BLOCKING)?,
        g.stream(CU_STREAM_NON_BLOCKING)?,
    );
    let (block, out) = (g.alloc(8)?, g.alloc(8 * 4)?);
    let read = g.event(CU_EVENT_DISABLE_TIMING)?;
    let written = g.event(CU_EVENT_DISABLE_TIMING)?;
    let mut polls = 0;
    for round in 0..4 {
        let mut source = vec![round * 10; 8];
        g.upload_async(block, &source, writer)?;
        source.fill(-1);
        g.launch(k.spin, writer, &[U64(500)])?;
        g.launch(k.add, writer, &[Ptr(block), I32(8), I32(1)])?;
        g.record(written, writer)?;
        g.wait_event(reader, written)?;
        g.launch(
            k.copy,
            reader,
            &[Ptr(out + 32 * round as u64), Ptr(block), I32(8)],
        )?;
        g.record(read, reader)?;
        // The block is free for the writer once the read is done; the allocator polls.
        loop {
            match g.event_query(read) {
                CUresult::SUCCESS => break,
                CUresult::NOT_READY => polls += 1,
                other => {
                    return Err(AppError::Cuda {
                        call: "cuEventQuery",
                        code: other,
                        expected: CUresult::SUCCESS,
                    });
                }
            }
            std::thread::yield_now();
        }
    }
    g.sync(reader)?;
    let got = g.download(out, 32)?;
    let expected: Vec<i32> = (0..4).flat_map(|r| [r * 10 + 1; 8]).collect();
    ensure(got == expected, || format!("rounds read {got:?}"))?;
    for stream in [writer, reader] {
        g.destroy_stream(stream)?;
    }
    Ok(format!(
        "allocator-reuse ok values={} polled={}",
        join(&got.iter().step_by(8).copied().collect::<Vec<_>>()),
        polls > 0
    ))
}
