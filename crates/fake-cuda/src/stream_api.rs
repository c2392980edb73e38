//! Stream entry points: creation, destruction, synchronization, queries, cross-stream waits
//! and stream memory operations, each with its `_ptsz` form where the driver has one.

use std::ffi::{c_int, c_uint};
use std::sync::Arc;

use baton_cuda_sys::{
    CU_STREAM_NON_BLOCKING, CU_STREAM_WAIT_VALUE_FLUSH, CU_STREAM_WAIT_VALUE_NOR,
    CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER, CUcontext, CUdeviceptr, CUevent, CUgreenCtx, CUresult,
    CUstream, cuuint32_t,
};

use crate::capture_api::potentially_unsafe;
use crate::current;
use crate::entry::exports;
use crate::events_api;
use crate::handle::{Kind, raw_of, to_ptr};
use crate::ops::Op;
use crate::result::{CuResult, put, put_opt};
use crate::state::initialized;
use crate::stream::{self, DefaultStream, GREATEST_PRIORITY, Stream, StreamKind};

unsafe fn create(out: *mut CUstream, flags: c_uint, priority: c_int) -> CuResult<()> {
    let g = initialized()?;
    let ctx = current::context()?;
    if out.is_null() || flags & !CU_STREAM_NON_BLOCKING != 0 {
        return Err(CUresult::INVALID_VALUE);
    }
    let kind = if flags & CU_STREAM_NON_BLOCKING != 0 {
        StreamKind::NonBlocking
    } else {
        StreamKind::Blocking
    };
    let priority = priority.clamp(GREATEST_PRIORITY, 0);
    let stream = Stream::new(
        g.handle(Kind::Stream),
        kind,
        flags,
        priority,
        Arc::downgrade(&ctx.streams),
        None,
    );
    ctx.streams.add_stream(Arc::clone(&stream));
    g.streams.insert(stream.handle.raw, Arc::clone(&stream));
    // SAFETY: `out` is not NULL and the caller guarantees it is writable.
    unsafe { put(out, stream::handle_of(&stream)) }
}

fn destroy(raw: CUstream) -> CuResult<()> {
    let g = initialized()?;
    let stream = g
        .streams
        .remove(raw_of(raw))
        .ok_or(CUresult::INVALID_HANDLE)?;
    if let Some(ctx) = stream.ctx.upgrade() {
        ctx.remove_stream(&stream);
    }
    // Queued work still executes; the worker exits once the queue is drained.
    stream.close();
    Ok(())
}

/// Fails (and invalidates the capture) when `stream` is capturing.
fn refuse_while_capturing(stream: &Stream) -> CuResult<()> {
    if stream.is_capturing() {
        stream.invalidate_capture();
        return Err(CUresult::STREAM_CAPTURE_UNSUPPORTED);
    }
    Ok(())
}

fn synchronize(raw: CUstream, mode: DefaultStream) -> CuResult<()> {
    let stream = current::stream(raw, mode)?;
    refuse_while_capturing(&stream)?;
    potentially_unsafe()?;
    for dep in stream.sync_deps()? {
        dep.wait();
    }
    stream
        .ctx
        .upgrade()
        .ok_or(CUresult::INVALID_CONTEXT)?
        .sticky()
}

fn query(raw: CUstream, mode: DefaultStream) -> CuResult<()> {
    let stream = current::stream(raw, mode)?;
    refuse_while_capturing(&stream)?;
    potentially_unsafe()?;
    stream
        .ctx
        .upgrade()
        .ok_or(CUresult::INVALID_CONTEXT)?
        .sticky()?;
    if stream.sync_deps()?.iter().all(stream::Dep::is_done) {
        Ok(())
    } else {
        Err(CUresult::NOT_READY)
    }
}

unsafe fn get_priority(raw: CUstream, out: *mut c_int, mode: DefaultStream) -> CuResult<()> {
    let stream = current::stream(raw, mode)?;
    // SAFETY: the caller guarantees `out` is NULL or writable.
    unsafe { put(out, stream.priority) }
}

unsafe fn get_flags(raw: CUstream, out: *mut c_uint, mode: DefaultStream) -> CuResult<()> {
    let stream = current::stream(raw, mode)?;
    // SAFETY: the caller guarantees `out` is NULL or writable.
    unsafe { put(out, stream.flags) }
}

unsafe fn get_ctx(
    raw: CUstream,
    out: *mut CUcontext,
    green: *mut CUgreenCtx,
    mode: DefaultStream,
) -> CuResult<()> {
    let stream = current::stream(raw, mode)?;
    let ctx = stream.ctx.upgrade().ok_or(CUresult::INVALID_CONTEXT)?;
    // SAFETY: the caller guarantees `out` is NULL or writable and `green` NULL or writable.
    unsafe {
        put(out, to_ptr(ctx.handle.raw))?;
        put_opt(green, std::ptr::null_mut());
    }
    Ok(())
}

/// Checks that `addr` is a 4-byte aligned word of device-accessible memory.
fn check_word(addr: CUdeviceptr) -> CuResult<()> {
    let g = initialized()?;
    let mem = baton_core::locks::read(&g.machine.memory);
    mem.access(addr, 4, 4)
        .map(drop)
        .map_err(|_| CUresult::INVALID_VALUE)
}

fn wait_value(
    raw: CUstream,
    addr: CUdeviceptr,
    value: cuuint32_t,
    flags: c_uint,
    mode: DefaultStream,
) -> CuResult<()> {
    let stream = current::stream(raw, mode)?;
    if flags & !(CU_STREAM_WAIT_VALUE_FLUSH | CU_STREAM_WAIT_VALUE_NOR) != 0 {
        return Err(CUresult::INVALID_VALUE);
    }
    check_word(addr)?;
    stream
        .submit(Op::WaitValue { addr, value, flags }, Vec::new())
        .map(drop)
}

fn write_value(
    raw: CUstream,
    addr: CUdeviceptr,
    value: cuuint32_t,
    flags: c_uint,
    mode: DefaultStream,
) -> CuResult<()> {
    let stream = current::stream(raw, mode)?;
    if flags & !CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER != 0 {
        return Err(CUresult::INVALID_VALUE);
    }
    check_word(addr)?;
    stream
        .submit(Op::WriteValue { addr, value, flags }, Vec::new())
        .map(drop)
}

use DefaultStream::{Legacy, PerThread};

exports! {
    /// Creates a stream (`CU_STREAM_DEFAULT`: blocking, or `CU_STREAM_NON_BLOCKING`).
    fn cuStreamCreate(phStream: *mut CUstream, flags: c_uint): PFN_cuStreamCreate => create(phStream, flags, 0);
    /// Creates a stream with a priority (clamped to the range of `cuCtxGetStreamPriorityRange`).
    fn cuStreamCreateWithPriority(phStream: *mut CUstream, flags: c_uint, priority: c_int): PFN_cuStreamCreateWithPriority
        => create(phStream, flags, priority);
    /// Destroys a stream; queued work still executes (version 1).
    fn cuStreamDestroy(hStream: CUstream): PFN_cuStreamDestroy => destroy(hStream);
    /// Destroys a stream; queued work still executes.
    fn cuStreamDestroy_v2(hStream: CUstream): PFN_cuStreamDestroy_v2 => destroy(hStream);
    /// Waits for the stream's work (the legacy stream: and earlier work of blocking streams).
    fn cuStreamSynchronize(hStream: CUstream): PFN_cuStreamSynchronize => synchronize(hStream, Legacy);
    /// Per-thread-default-stream form of `cuStreamSynchronize`.
    fn cuStreamSynchronize_ptsz(hStream: CUstream): PFN_cuStreamSynchronize => synchronize(hStream, PerThread);
    /// `CUDA_SUCCESS` if the stream is idle, `CUDA_ERROR_NOT_READY` otherwise.
    fn cuStreamQuery(hStream: CUstream): PFN_cuStreamQuery => query(hStream, Legacy);
    /// Per-thread-default-stream form of `cuStreamQuery`.
    fn cuStreamQuery_ptsz(hStream: CUstream): PFN_cuStreamQuery => query(hStream, PerThread);
    /// Makes later work of the stream wait for the event's latest record.
    fn cuStreamWaitEvent(hStream: CUstream, hEvent: CUevent, flags: c_uint): PFN_cuStreamWaitEvent
        => events_api::stream_wait(hStream, hEvent, flags, Legacy);
    /// Per-thread-default-stream form of `cuStreamWaitEvent`.
    fn cuStreamWaitEvent_ptsz(hStream: CUstream, hEvent: CUevent, flags: c_uint): PFN_cuStreamWaitEvent
        => events_api::stream_wait(hStream, hEvent, flags, PerThread);
    /// Returns the stream's priority.
    fn cuStreamGetPriority(hStream: CUstream, priority: *mut c_int): PFN_cuStreamGetPriority
        => get_priority(hStream, priority, Legacy);
    /// Per-thread-default-stream form of `cuStreamGetPriority`.
    fn cuStreamGetPriority_ptsz(hStream: CUstream, priority: *mut c_int): PFN_cuStreamGetPriority
        => get_priority(hStream, priority, PerThread);
    /// Returns the stream's creation flags.
    fn cuStreamGetFlags(hStream: CUstream, flags: *mut c_uint): PFN_cuStreamGetFlags => get_flags(hStream, flags, Legacy);
    /// Per-thread-default-stream form of `cuStreamGetFlags`.
    fn cuStreamGetFlags_ptsz(hStream: CUstream, flags: *mut c_uint): PFN_cuStreamGetFlags
        => get_flags(hStream, flags, PerThread);
    /// Returns the stream's context.
    fn cuStreamGetCtx(hStream: CUstream, pctx: *mut CUcontext): PFN_cuStreamGetCtx
        => get_ctx(hStream, pctx, std::ptr::null_mut(), Legacy);
    /// Per-thread-default-stream form of `cuStreamGetCtx`.
    fn cuStreamGetCtx_ptsz(hStream: CUstream, pctx: *mut CUcontext): PFN_cuStreamGetCtx
        => get_ctx(hStream, pctx, std::ptr::null_mut(), PerThread);
    /// Returns the stream's context and green context (always NULL here).
    fn cuStreamGetCtx_v2(hStream: CUstream, pctx: *mut CUcontext, pGreenCtx: *mut CUgreenCtx): PFN_cuStreamGetCtx_v2
        => get_ctx(hStream, pctx, pGreenCtx, Legacy);
    /// Per-thread-default-stream form of `cuStreamGetCtx_v2`.
    fn cuStreamGetCtx_v2_ptsz(hStream: CUstream, pctx: *mut CUcontext, pGreenCtx: *mut CUgreenCtx): PFN_cuStreamGetCtx_v2
        => get_ctx(hStream, pctx, pGreenCtx, PerThread);
    /// Makes later work of the stream wait until a memory word satisfies a condition.
    fn cuStreamWaitValue32(hStream: CUstream, addr: CUdeviceptr, value: cuuint32_t, flags: c_uint): PFN_cuStreamWaitValue32
        => wait_value(hStream, addr, value, flags, Legacy);
    /// Per-thread-default-stream form of `cuStreamWaitValue32`.
    fn cuStreamWaitValue32_ptsz(hStream: CUstream, addr: CUdeviceptr, value: cuuint32_t, flags: c_uint): PFN_cuStreamWaitValue32
        => wait_value(hStream, addr, value, flags, PerThread);
    /// Makes later work of the stream wait until a memory word satisfies a condition.
    fn cuStreamWaitValue32_v2(hStream: CUstream, addr: CUdeviceptr, value: cuuint32_t, flags: c_uint): PFN_cuStreamWaitValue32_v2
        => wait_value(hStream, addr, value, flags, Legacy);
    /// Per-thread-default-stream form of `cuStreamWaitValue32_v2`.
    fn cuStreamWaitValue32_v2_ptsz(hStream: CUstream, addr: CUdeviceptr, value: cuuint32_t, flags: c_uint): PFN_cuStreamWaitValue32_v2
        => wait_value(hStream, addr, value, flags, PerThread);
    /// Writes a memory word in stream order.
    fn cuStreamWriteValue32(hStream: CUstream, addr: CUdeviceptr, value: cuuint32_t, flags: c_uint): PFN_cuStreamWriteValue32
        => write_value(hStream, addr, value, flags, Legacy);
    /// Per-thread-default-stream form of `cuStreamWriteValue32`.
    fn cuStreamWriteValue32_ptsz(hStream: CUstream, addr: CUdeviceptr, value: cuuint32_t, flags: c_uint): PFN_cuStreamWriteValue32
        => write_value(hStream, addr, value, flags, PerThread);
    /// Writes a memory word in stream order.
    fn cuStreamWriteValue32_v2(hStream: CUstream, addr: CUdeviceptr, value: cuuint32_t, flags: c_uint): PFN_cuStreamWriteValue32_v2
        => write_value(hStream, addr, value, flags, Legacy);
    /// Per-thread-default-stream form of `cuStreamWriteValue32_v2`.
    fn cuStreamWriteValue32_v2_ptsz(hStream: CUstream, addr: CUdeviceptr, value: cuuint32_t, flags: c_uint): PFN_cuStreamWriteValue32_v2
        => write_value(hStream, addr, value, flags, PerThread);
}
