//! Context entry points: creation and destruction, the calling thread's context stack, the
//! primary context, synchronization and the thread's stream-capture mode.
//!
//! The stack itself, and so the current context, is the calling thread's state (`current.rs`).

use std::ffi::{c_int, c_uint};
use std::sync::Arc;

use baton_cuda_sys::{
    CU_CTX_FLAGS_MASK, CU_STREAM_CAPTURE_MODE_RELAXED, CUcontext, CUctxCreateParams, CUdevice,
    CUexecAffinityParam, CUresult, CUstreamCaptureMode,
};

use crate::context::Context;
use crate::current::{self, with_thread};
use crate::device::physical;
use crate::entry::exports;
use crate::handle::{Kind, raw_of, to_ptr};
use crate::result::{CuResult, put, put_opt};
use crate::state::{Global, initialized};
use crate::stream::GREATEST_PRIORITY;
use crate::sync::lock;

/// `cuThreadExchangeStreamCaptureMode`: sets the thread's mode, returns the old one in `mode`.
unsafe fn exchange_capture_mode(mode: *mut CUstreamCaptureMode) -> CuResult<()> {
    initialized()?;
    // SAFETY: the caller guarantees `mode` is NULL or valid for reads and writes.
    let Some(mode) = (unsafe { mode.as_mut() }) else {
        return Err(CUresult::INVALID_VALUE);
    };
    if mode.0 > CU_STREAM_CAPTURE_MODE_RELAXED.0 {
        return Err(CUresult::INVALID_VALUE);
    }
    *mode = with_thread(|t| std::mem::replace(&mut t.capture_mode, *mode))?;
    Ok(())
}

fn find_ctx(g: &Global, ctx: CUcontext) -> CuResult<Arc<Context>> {
    g.contexts.get(raw_of(ctx)).ok_or(CUresult::INVALID_CONTEXT)
}

unsafe fn create(out: *mut CUcontext, flags: c_uint, dev: CUdevice) -> CuResult<()> {
    let g = initialized()?;
    let device = physical(dev)?;
    if out.is_null() || flags & !CU_CTX_FLAGS_MASK != 0 {
        return Err(CUresult::INVALID_VALUE);
    }
    let ctx = Context::new(
        g.handle(Kind::Context),
        g.handle(Kind::Stream),
        flags,
        dev,
        device.index,
    );
    g.contexts.insert(ctx.handle.raw, Arc::clone(&ctx));
    with_thread(|t| t.stack.push(ctx.handle.raw))?;
    // SAFETY: `out` is not NULL and the caller guarantees it is writable.
    unsafe { put(out, to_ptr(ctx.handle.raw)) }
}

unsafe fn create_v3(
    out: *mut CUcontext,
    params: *mut CUexecAffinityParam,
    count: c_int,
    flags: c_uint,
    dev: CUdevice,
) -> CuResult<()> {
    if count < 0 || (count > 0 && params.is_null()) {
        return Err(CUresult::INVALID_VALUE);
    }
    // SAFETY: forwarded from the caller.
    unsafe { create(out, flags, dev) }
}

unsafe fn create_v4(
    out: *mut CUcontext,
    params: *mut CUctxCreateParams,
    flags: c_uint,
    dev: CUdevice,
) -> CuResult<()> {
    if !params.is_null() {
        // SAFETY: a non-NULL `params` points to a CUctxCreateParams, as the API requires.
        let params = unsafe { params.read() };
        if params.numExecAffinityParams < 0
            || (params.numExecAffinityParams > 0 && params.execAffinityParams.is_null())
        {
            return Err(CUresult::INVALID_VALUE);
        }
    }
    // SAFETY: forwarded from the caller.
    unsafe { create(out, flags, dev) }
}

fn destroy(ctx: CUcontext) -> CuResult<()> {
    let g = initialized()?;
    let ctx = find_ctx(g, ctx)?;
    if lock(&g.primary)
        .values()
        .any(|p| p.ctx.as_ref().is_some_and(|p| Arc::ptr_eq(p, &ctx)))
    {
        return Err(CUresult::INVALID_CONTEXT);
    }
    for dep in ctx.streams.all_pending() {
        dep.wait();
    }
    g.contexts.remove(ctx.handle.raw);
    let streams = std::mem::take(&mut *lock(&ctx.streams.order));
    for stream in streams.blocking.iter().chain(&streams.nonblocking) {
        g.streams.remove(stream.handle.raw);
        stream.close();
    }
    ctx.streams.legacy.close();
    with_thread(|t| {
        t.stack.retain(|raw| *raw != ctx.handle.raw);
        t.per_thread.retain(|(raw, _)| *raw != ctx.handle.raw);
    })
}

fn push(ctx: CUcontext) -> CuResult<()> {
    let g = initialized()?;
    let ctx = find_ctx(g, ctx)?;
    with_thread(|t| t.stack.push(ctx.handle.raw))
}

unsafe fn pop(out: *mut CUcontext) -> CuResult<()> {
    initialized()?;
    let top = with_thread(|t| t.stack.pop())?.ok_or(CUresult::INVALID_CONTEXT)?;
    if !out.is_null() {
        // SAFETY: `out` is not NULL and the caller guarantees it is writable.
        unsafe { put(out, to_ptr(top))? };
    }
    Ok(())
}

fn set_current(ctx: CUcontext) -> CuResult<()> {
    let g = initialized()?;
    if ctx.is_null() {
        return with_thread(|t| {
            t.stack.pop();
        });
    }
    let ctx = find_ctx(g, ctx)?;
    with_thread(|t| match t.stack.last_mut() {
        Some(top) => *top = ctx.handle.raw,
        None => t.stack.push(ctx.handle.raw),
    })
}

unsafe fn get_current(out: *mut CUcontext) -> CuResult<()> {
    let g = initialized()?;
    let top =
        with_thread(|t| t.stack.last().copied())?.filter(|raw| g.contexts.get(*raw).is_some());
    // SAFETY: the caller guarantees `out` is NULL or writable.
    unsafe { put(out, top.map_or(std::ptr::null_mut(), to_ptr)) }
}

unsafe fn get_device(out: *mut CUdevice) -> CuResult<()> {
    let ctx = current::context()?;
    // SAFETY: the caller guarantees `out` is NULL or writable.
    unsafe { put(out, ctx.device) }
}

unsafe fn priority_range(least: *mut c_int, greatest: *mut c_int) -> CuResult<()> {
    current::context()?;
    // SAFETY: the caller guarantees each pointer is NULL or writable; both are optional.
    unsafe {
        put_opt(least, 0);
        put_opt(greatest, GREATEST_PRIORITY);
    }
    Ok(())
}

unsafe fn primary_retain(out: *mut CUcontext, dev: CUdevice) -> CuResult<()> {
    let g = initialized()?;
    if out.is_null() {
        return Err(CUresult::INVALID_VALUE);
    }
    let ctx = retain_primary(g, dev)?;
    // SAFETY: `out` is not NULL and the caller guarantees it is writable.
    unsafe { put(out, to_ptr(ctx.handle.raw)) }
}

/// Device `dev`'s primary context, made on first use, with one more reference.
pub(crate) fn retain_primary(g: &Global, dev: CUdevice) -> CuResult<Arc<Context>> {
    let device = physical(dev)?;
    let mut primaries = lock(&g.primary);
    let primary = primaries.entry(dev).or_default();
    let ctx = Arc::clone(primary.ctx.get_or_insert_with(|| {
        let ctx = Context::new(
            g.handle(Kind::Context),
            g.handle(Kind::Stream),
            0,
            dev,
            device.index,
        );
        g.contexts.insert(ctx.handle.raw, Arc::clone(&ctx));
        ctx
    }));
    primary.refs += 1;
    Ok(ctx)
}

pub(crate) fn primary_release(dev: CUdevice) -> CuResult<()> {
    let g = initialized()?;
    physical(dev)?;
    let mut primaries = lock(&g.primary);
    let primary = primaries.entry(dev).or_default();
    if primary.refs == 0 {
        return Err(CUresult::INVALID_CONTEXT);
    }
    primary.refs -= 1;
    Ok(())
}

unsafe fn primary_state(dev: CUdevice, flags: *mut c_uint, active: *mut c_int) -> CuResult<()> {
    let g = initialized()?;
    physical(dev)?;
    let primaries = lock(&g.primary);
    let primary = primaries.get(&dev);
    let flags_now = primary
        .and_then(|p| p.ctx.as_ref())
        .map_or(0, |ctx| ctx.flags);
    let refs = primary.map_or(0, |p| p.refs);
    // SAFETY: the caller guarantees both pointers are NULL or writable.
    unsafe {
        put(flags, flags_now)?;
        put(active, c_int::from(refs > 0))
    }
}

fn synchronize() -> CuResult<()> {
    current::context()?.synchronize()
}

fn synchronize_v2(ctx: CUcontext) -> CuResult<()> {
    if ctx.is_null() {
        return synchronize();
    }
    find_ctx(initialized()?, ctx)?.synchronize()
}

exports! {
    /// Creates a context and makes it current (version 1).
    fn cuCtxCreate(pctx: *mut CUcontext, flags: c_uint, dev: CUdevice): PFN_cuCtxCreate => create(pctx, flags, dev);
    /// Creates a context and makes it current.
    fn cuCtxCreate_v2(pctx: *mut CUcontext, flags: c_uint, dev: CUdevice): PFN_cuCtxCreate_v2 => create(pctx, flags, dev);
    /// Creates a context with execution-affinity parameters (ignored).
    fn cuCtxCreate_v3(pctx: *mut CUcontext, params: *mut CUexecAffinityParam, count: c_int, flags: c_uint, dev: CUdevice): PFN_cuCtxCreate_v3
        => create_v3(pctx, params, count, flags, dev);
    /// Creates a context with creation parameters (ignored).
    fn cuCtxCreate_v4(pctx: *mut CUcontext, params: *mut CUctxCreateParams, flags: c_uint, dev: CUdevice): PFN_cuCtxCreate_v4
        => create_v4(pctx, params, flags, dev);
    /// Destroys a context after its work (version 1).
    fn cuCtxDestroy(ctx: CUcontext): PFN_cuCtxDestroy => destroy(ctx);
    /// Destroys a context after its work.
    fn cuCtxDestroy_v2(ctx: CUcontext): PFN_cuCtxDestroy_v2 => destroy(ctx);
    /// Pushes a context on the calling thread's stack (version 1).
    fn cuCtxPushCurrent(ctx: CUcontext): PFN_cuCtxPushCurrent => push(ctx);
    /// Pushes a context on the calling thread's stack.
    fn cuCtxPushCurrent_v2(ctx: CUcontext): PFN_cuCtxPushCurrent_v2 => push(ctx);
    /// Pops the calling thread's current context (version 1).
    fn cuCtxPopCurrent(pctx: *mut CUcontext): PFN_cuCtxPopCurrent => pop(pctx);
    /// Pops the calling thread's current context.
    fn cuCtxPopCurrent_v2(pctx: *mut CUcontext): PFN_cuCtxPopCurrent_v2 => pop(pctx);
    /// Replaces the top of the calling thread's stack.
    fn cuCtxSetCurrent(ctx: CUcontext): PFN_cuCtxSetCurrent => set_current(ctx);
    /// Returns the calling thread's current context, or NULL.
    fn cuCtxGetCurrent(pctx: *mut CUcontext): PFN_cuCtxGetCurrent => get_current(pctx);
    /// Returns the current context's device.
    fn cuCtxGetDevice(device: *mut CUdevice): PFN_cuCtxGetDevice => get_device(device);
    /// Waits for all work of the current context.
    fn cuCtxSynchronize(): PFN_cuCtxSynchronize => synchronize();
    /// Sets the calling thread's stream-capture interaction mode, returning the old one.
    fn cuThreadExchangeStreamCaptureMode(mode: *mut CUstreamCaptureMode): PFN_cuThreadExchangeStreamCaptureMode
        => exchange_capture_mode(mode);
    /// Waits for all work of a context (the current one if NULL).
    fn cuCtxSynchronize_v2(ctx: CUcontext): PFN_cuCtxSynchronize_v2 => synchronize_v2(ctx);
    /// Returns the stream priority range (0 least, -5 greatest).
    fn cuCtxGetStreamPriorityRange(least: *mut c_int, greatest: *mut c_int): PFN_cuCtxGetStreamPriorityRange
        => priority_range(least, greatest);
    /// Retains the device's primary context.
    fn cuDevicePrimaryCtxRetain(pctx: *mut CUcontext, dev: CUdevice): PFN_cuDevicePrimaryCtxRetain => primary_retain(pctx, dev);
    /// Releases the device's primary context (version 1).
    fn cuDevicePrimaryCtxRelease(dev: CUdevice): PFN_cuDevicePrimaryCtxRelease => primary_release(dev);
    /// Releases the device's primary context.
    fn cuDevicePrimaryCtxRelease_v2(dev: CUdevice): PFN_cuDevicePrimaryCtxRelease_v2 => primary_release(dev);
    /// Reports the primary context's flags and whether it is active.
    fn cuDevicePrimaryCtxGetState(dev: CUdevice, flags: *mut c_uint, active: *mut c_int): PFN_cuDevicePrimaryCtxGetState
        => primary_state(dev, flags, active);
}
