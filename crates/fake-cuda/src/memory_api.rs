//! Memory entry points: device and pinned host allocations, synchronous and stream-ordered.
//!
//! `cuMemFree` first waits for all queued work, as the real driver does in practice.
//! Stream-ordered allocations (`cuMemAllocAsync`) are usable as soon as the call returns; the
//! queued command only marks their place in stream order (and in the log).

use std::ffi::{c_uint, c_void};

use baton_cuda_sys::{
    CU_MEMHOSTALLOC_DEVICEMAP, CU_MEMHOSTALLOC_PORTABLE, CU_MEMHOSTALLOC_WRITECOMBINED,
    CUdeviceptr, CUdeviceptr_v1, CUresult, CUstream,
};

use crate::capture_api::potentially_unsafe;
use crate::current;
use crate::entry::exports;
use crate::memory::{AllocKind, TOTAL_MEMORY, allocate, host_ptr};
use crate::ops::Op;
use crate::result::{CuResult, put};
use crate::state::{Global, initialized};
use crate::stream::DefaultStream;

/// Frees synchronously: waits for all queued work first, as the real driver does.
fn free_now(g: &Global, addr: u64, kinds: &[AllocKind]) -> CuResult<()> {
    for ctx in g.all_contexts() {
        for dep in ctx.streams.all_pending() {
            dep.wait();
        }
    }
    baton_core::locks::write(&g.machine.memory).free(addr, kinds)
}

fn mem_alloc(out: *mut CUdeviceptr, size: usize) -> CuResult<()> {
    let g = initialized()?;
    current::context()?;
    potentially_unsafe()?;
    if out.is_null() {
        return Err(CUresult::INVALID_VALUE);
    }
    let addr = allocate(&g.machine.memory, size, AllocKind::Device)?;
    // SAFETY: `out` is not NULL and the caller guarantees it is writable.
    unsafe { put(out, addr) }
}

fn mem_alloc_v1(out: *mut CUdeviceptr_v1, size: c_uint) -> CuResult<()> {
    let g = initialized()?;
    current::context()?;
    potentially_unsafe()?;
    if out.is_null() {
        return Err(CUresult::INVALID_VALUE);
    }
    let memory = &g.machine.memory;
    let addr = allocate(memory, size as usize, AllocKind::Device32)?;
    let Ok(addr32) = u32::try_from(addr) else {
        let _ = baton_core::locks::write(memory).free(addr, &[AllocKind::Device32]);
        return Err(CUresult::OUT_OF_MEMORY);
    };
    // SAFETY: `out` is not NULL and the caller guarantees it is writable.
    unsafe { put(out, addr32) }
}

fn mem_free(addr: CUdeviceptr) -> CuResult<()> {
    let g = initialized()?;
    if addr == 0 {
        return Ok(());
    }
    potentially_unsafe()?;
    free_now(g, addr, &[AllocKind::Device, AllocKind::Device32])
}

fn host_alloc(out: *mut *mut c_void, size: usize, flags: c_uint) -> CuResult<()> {
    let g = initialized()?;
    current::context()?;
    let known =
        CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
    if out.is_null() || flags & !known != 0 {
        return Err(CUresult::INVALID_VALUE);
    }
    let addr = allocate(&g.machine.memory, size, AllocKind::Host)?;
    let ptr = host_ptr(addr).cast::<c_void>();
    // SAFETY: `out` is not NULL and the caller guarantees it is writable.
    unsafe { put(out, ptr) }
}

fn host_free(ptr: *mut c_void) -> CuResult<()> {
    let g = initialized()?;
    free_now(g, ptr.expose_provenance() as u64, &[AllocKind::Host])
}

fn mem_get_info(free: *mut usize, total: *mut usize) -> CuResult<()> {
    let g = initialized()?;
    current::context()?;
    let used = baton_core::locks::read(&g.machine.memory).used();
    // SAFETY: the caller guarantees both pointers are NULL or writable.
    unsafe {
        put(free, TOTAL_MEMORY.saturating_sub(used))?;
        put(total, TOTAL_MEMORY)
    }
}

fn alloc_async(
    out: *mut CUdeviceptr,
    size: usize,
    raw: CUstream,
    mode: DefaultStream,
) -> CuResult<()> {
    let g = initialized()?;
    let stream = current::stream(raw, mode)?;
    if out.is_null() {
        return Err(CUresult::INVALID_VALUE);
    }
    if stream.is_capturing() {
        stream.invalidate_capture();
        return Err(CUresult::STREAM_CAPTURE_UNSUPPORTED);
    }
    potentially_unsafe()?;
    // The pointer is valid as soon as the call returns; the queued command only marks the
    // allocation's place in stream order (and in the log).
    let addr = allocate(&g.machine.memory, size, AllocKind::Device)?;
    // SAFETY: `out` is not NULL and the caller guarantees it is writable.
    unsafe { put(out, addr)? };
    stream
        .submit(Op::MemAlloc { ptr: addr, size }, Vec::new())
        .map(drop)
}

fn free_async(addr: CUdeviceptr, raw: CUstream, mode: DefaultStream) -> CuResult<()> {
    let g = initialized()?;
    let stream = current::stream(raw, mode)?;
    if stream.is_capturing() {
        stream.invalidate_capture();
        return Err(CUresult::STREAM_CAPTURE_UNSUPPORTED);
    }
    potentially_unsafe()?;
    baton_core::locks::write(&g.machine.memory).mark_freeing(addr)?;
    stream
        .submit(Op::MemFree { ptr: addr }, Vec::new())
        .map(drop)
}

exports! {
    /// Reports free and total device memory.
    fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize): PFN_cuMemGetInfo_v2 => mem_get_info(free, total);
    /// Allocates device memory (version 1: 32-bit address and size).
    fn cuMemAlloc(dptr: *mut CUdeviceptr_v1, bytesize: c_uint): PFN_cuMemAlloc => mem_alloc_v1(dptr, bytesize);
    /// Allocates device memory.
    fn cuMemAlloc_v2(dptr: *mut CUdeviceptr, bytesize: usize): PFN_cuMemAlloc_v2 => mem_alloc(dptr, bytesize);
    /// Frees device memory after all queued work (version 1).
    fn cuMemFree(dptr: CUdeviceptr_v1): PFN_cuMemFree => mem_free(CUdeviceptr::from(dptr));
    /// Frees device memory after all queued work.
    fn cuMemFree_v2(dptr: CUdeviceptr): PFN_cuMemFree_v2 => mem_free(dptr);
    /// Allocates pinned host memory (version 1: 32-bit size).
    fn cuMemAllocHost(pp: *mut *mut c_void, bytesize: c_uint): PFN_cuMemAllocHost => host_alloc(pp, bytesize as usize, 0);
    /// Allocates pinned host memory.
    fn cuMemAllocHost_v2(pp: *mut *mut c_void, bytesize: usize): PFN_cuMemAllocHost_v2 => host_alloc(pp, bytesize, 0);
    /// Allocates pinned host memory with flags.
    fn cuMemHostAlloc(pp: *mut *mut c_void, bytesize: usize, flags: c_uint): PFN_cuMemHostAlloc => host_alloc(pp, bytesize, flags);
    /// Frees pinned host memory after all queued work.
    fn cuMemFreeHost(p: *mut c_void): PFN_cuMemFreeHost => host_free(p);
    /// Allocates in stream order; the pointer is usable at once.
    fn cuMemAllocAsync(dptr: *mut CUdeviceptr, bytesize: usize, stream: CUstream): PFN_cuMemAllocAsync
        => alloc_async(dptr, bytesize, stream, DefaultStream::Legacy);
    /// Per-thread-default-stream form of `cuMemAllocAsync`.
    fn cuMemAllocAsync_ptsz(dptr: *mut CUdeviceptr, bytesize: usize, stream: CUstream): PFN_cuMemAllocAsync
        => alloc_async(dptr, bytesize, stream, DefaultStream::PerThread);
    /// Frees in stream order.
    fn cuMemFreeAsync(dptr: CUdeviceptr, stream: CUstream): PFN_cuMemFreeAsync
        => free_async(dptr, stream, DefaultStream::Legacy);
    /// Per-thread-default-stream form of `cuMemFreeAsync`.
    fn cuMemFreeAsync_ptsz(dptr: CUdeviceptr, stream: CUstream): PFN_cuMemFreeAsync
        => free_async(dptr, stream, DefaultStream::PerThread);
}
