//! Green context entry points: SM resources, their split, descriptors, green contexts and their
//! streams.
//!
//! The device has 132 SMs (as its `MULTIPROCESSOR_COUNT` says) and splits them in groups of a
//! multiple of 8, as Hopper does.

use std::ffi::{c_int, c_uint};
use std::sync::Arc;

use baton_cuda_sys::{
    CU_DEV_RESOURCE_TYPE_SM, CU_GREEN_CTX_DEFAULT_STREAM, CU_STREAM_NON_BLOCKING, CUdevResource,
    CUdevResourceDesc, CUdevice, CUgreenCtx, CUresult, CUstream,
};

use crate::context_api;
use crate::device::physical;
use crate::entry::exports;
use crate::green::Green;
use crate::handle::{Kind, raw_of, to_ptr};
use crate::kernels::device_sms;
use crate::result::{CuResult, put};
use crate::state::initialized;
use crate::stream::{self, GREATEST_PRIORITY, Stream, StreamKind};

/// The granularity of a split.
const SM_GRANULE: u32 = 8;

fn sm_resource(count: u32) -> CUdevResource {
    CUdevResource {
        type_: CU_DEV_RESOURCE_TYPE_SM,
        sm_count: count,
        ..CUdevResource::default()
    }
}

unsafe fn get_resource(dev: CUdevice, out: *mut CUdevResource, kind: c_uint) -> CuResult<()> {
    initialized()?;
    physical(dev)?;
    if kind != CU_DEV_RESOURCE_TYPE_SM {
        return Err(CUresult::INVALID_VALUE);
    }
    // SAFETY: the caller's out-pointer.
    unsafe { put(out, sm_resource(device_sms())) }
}

unsafe fn split(
    result: *mut CUdevResource,
    groups: *mut c_uint,
    input: *const CUdevResource,
    remaining: *mut CUdevResource,
    flags: c_uint,
    min_count: c_uint,
) -> CuResult<()> {
    initialized()?;
    if groups.is_null() || input.is_null() || flags != 0 || min_count == 0 {
        return Err(CUresult::INVALID_VALUE);
    }
    // SAFETY: checked non-null; the caller's valid resource.
    let input = unsafe { *input };
    if input.type_ != CU_DEV_RESOURCE_TYPE_SM {
        return Err(CUresult::INVALID_VALUE);
    }
    let count = min_count.div_ceil(SM_GRANULE) * SM_GRANULE;
    // SAFETY: checked non-null.
    let asked = unsafe { *groups };
    let n = (input.sm_count / count).min(asked);
    if n == 0 {
        return Err(CUresult::INVALID_VALUE);
    }
    if !result.is_null() {
        for i in 0..n as usize {
            // SAFETY: the caller provides `*groups` elements.
            unsafe { result.add(i).write(sm_resource(count)) };
        }
    }
    // SAFETY: checked non-null.
    unsafe { groups.write(n) };
    if !remaining.is_null() {
        // SAFETY: the caller's out-pointer.
        unsafe { remaining.write(sm_resource(input.sm_count - n * count)) };
    }
    Ok(())
}

unsafe fn generate(
    out: *mut CUdevResourceDesc,
    resources: *mut CUdevResource,
    count: c_uint,
) -> CuResult<()> {
    initialized()?;
    if resources.is_null() || count != 1 {
        return Err(CUresult::INVALID_VALUE);
    }
    // SAFETY: one resource, checked non-null.
    let r = unsafe { *resources };
    if r.type_ != CU_DEV_RESOURCE_TYPE_SM || r.sm_count == 0 {
        return Err(CUresult::INVALID_VALUE);
    }
    // The descriptor carries the SM count in its pointer value (never dereferenced).
    // SAFETY: the caller's out-pointer.
    unsafe { put(out, to_ptr(u64::from(r.sm_count))) }
}

unsafe fn create(
    out: *mut CUgreenCtx,
    desc: CUdevResourceDesc,
    dev: CUdevice,
    flags: c_uint,
) -> CuResult<()> {
    let g = initialized()?;
    physical(dev)?;
    let sms = u32::try_from(raw_of(desc)).map_err(|_| CUresult::INVALID_VALUE)?;
    if sms == 0 || sms > device_sms() || flags != CU_GREEN_CTX_DEFAULT_STREAM {
        return Err(CUresult::INVALID_VALUE);
    }
    let green = Arc::new(Green {
        handle: g.handle(Kind::GreenCtx),
        sms,
        ctx: context_api::retain_primary(g, dev)?,
    });
    g.greens.insert(green.handle.raw, Arc::clone(&green));
    // SAFETY: the caller's out-pointer.
    unsafe { put(out, to_ptr(green.handle.raw)) }
}

fn destroy(h: CUgreenCtx) -> CuResult<()> {
    let g = initialized()?;
    let green = g.greens.remove(raw_of(h)).ok_or(CUresult::INVALID_HANDLE)?;
    context_api::primary_release(green.ctx.device)
}

unsafe fn stream_create(
    out: *mut CUstream,
    h: CUgreenCtx,
    flags: c_uint,
    priority: c_int,
) -> CuResult<()> {
    let g = initialized()?;
    let green = g.greens.get(raw_of(h)).ok_or(CUresult::INVALID_HANDLE)?;
    if out.is_null() || flags != CU_STREAM_NON_BLOCKING {
        return Err(CUresult::INVALID_VALUE);
    }
    let stream = Stream::new(
        g.handle(Kind::Stream),
        StreamKind::NonBlocking,
        flags,
        priority.clamp(GREATEST_PRIORITY, 0),
        Arc::downgrade(&green.ctx.streams),
        Some(green.sms),
    );
    green.ctx.streams.add_stream(Arc::clone(&stream));
    g.streams.insert(stream.handle.raw, Arc::clone(&stream));
    // SAFETY: checked non-null; the caller's out-pointer.
    unsafe { put(out, stream::handle_of(&stream)) }
}

exports! {
    /// The device's SMs as a resource.
    fn cuDeviceGetDevResource(device: CUdevice, resource: *mut CUdevResource, type_: c_uint): PFN_cuDeviceGetDevResource
        => get_resource(device, resource, type_);
    /// Splits an SM resource into groups of at least `minCount` SMs (a multiple of 8).
    fn cuDevSmResourceSplitByCount(result: *mut CUdevResource, nbGroups: *mut c_uint, input: *const CUdevResource, remaining: *mut CUdevResource, useFlags: c_uint, minCount: c_uint): PFN_cuDevSmResourceSplitByCount
        => split(result, nbGroups, input, remaining, useFlags, minCount);
    /// A descriptor of one SM resource.
    fn cuDevResourceGenerateDesc(phDesc: *mut CUdevResourceDesc, resources: *mut CUdevResource, nbResources: c_uint): PFN_cuDevResourceGenerateDesc
        => generate(phDesc, resources, nbResources);
    /// A green context over a descriptor's SMs (retains the primary context).
    fn cuGreenCtxCreate(phCtx: *mut CUgreenCtx, desc: CUdevResourceDesc, dev: CUdevice, flags: c_uint): PFN_cuGreenCtxCreate
        => create(phCtx, desc, dev, flags);
    /// Destroys a green context.
    fn cuGreenCtxDestroy(hCtx: CUgreenCtx): PFN_cuGreenCtxDestroy => destroy(hCtx);
    /// A non-blocking stream of a green context.
    fn cuGreenCtxStreamCreate(phStream: *mut CUstream, greenCtx: CUgreenCtx, flags: c_uint, priority: c_int): PFN_cuGreenCtxStreamCreate
        => stream_create(phStream, greenCtx, flags, priority);
}
