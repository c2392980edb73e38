//! "Device" memory: host allocations addressed as `CUdeviceptr`s.
//!
//! Device memory and pinned host memory (`cuMemAllocHost`, `cuMemHostAlloc`) are both plain
//! host allocations, 256-byte aligned and zeroed, recorded in one [`MemoryTable`]; as with
//! unified addressing, a pinned host pointer is also a valid device pointer. Anything outside
//! the table is pageable host memory.
//!
//! Every device-side access of a command (kernel, copy, fill, stream memory operation)
//! validates its range against the table under the table's read lock, held for the access; a
//! free takes the write lock. An invalid access fails the command with
//! `CUDA_ERROR_ILLEGAL_ADDRESS` instead of touching host memory, so a broken interposer shows
//! up as a test failure, not a crash. `cuMemFree` first waits for all queued work, as the real
//! driver does in practice.
//!
//! The version-1 symbols (`cuMemAlloc` with a 32-bit `CUdeviceptr_v1`) allocate below 2 GiB
//! (`MAP_32BIT`), so their addresses fit.

use std::alloc::Layout;
use std::collections::BTreeMap;
use std::ffi::{c_uint, c_void};
use std::sync::PoisonError;

use baton_cuda_sys::{
    CU_MEMHOSTALLOC_DEVICEMAP, CU_MEMHOSTALLOC_PORTABLE, CU_MEMHOSTALLOC_WRITECOMBINED,
    CUdeviceptr, CUdeviceptr_v1, CUresult, CUstream,
};

use crate::capture::potentially_unsafe;
use crate::context;
use crate::entry::{CuResult, exports, put};
use crate::ops::Op;
use crate::state::{Global, initialized};
use crate::stream::{self, DefaultStream};

/// Alignment of every allocation, as the real driver guarantees.
const ALIGN: usize = 256;
/// The device's memory size reported by `cuMemGetInfo` and `cuDeviceTotalMem`.
pub(crate) const TOTAL_MEMORY: usize = 80 << 30;

/// What an allocation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AllocKind {
    /// `cuMemAlloc_v2`, `cuMemAllocAsync`.
    Device,
    /// `cuMemAlloc` (version 1): mapped below 2 GiB.
    Device32,
    /// Pinned host memory.
    Host,
}

#[derive(Debug)]
struct Alloc {
    size: usize,
    kind: AllocKind,
    /// A `cuMemFreeAsync` for it is queued.
    freeing: bool,
}

/// Live allocations by base address.
#[derive(Default)]
pub(crate) struct MemoryTable {
    allocs: BTreeMap<u64, Alloc>,
    used: usize,
}

impl MemoryTable {
    fn containing(&self, addr: u64) -> Option<(u64, &Alloc)> {
        let (&base, alloc) = self.allocs.range(..=addr).next_back()?;
        (addr - base < alloc.size as u64).then_some((base, alloc))
    }

    /// The kind of the allocation holding `[addr, addr + len)`, if one holds all of it.
    pub fn kind_of(&self, addr: u64, len: usize) -> Option<AllocKind> {
        let (base, alloc) = self.containing(addr)?;
        let end = addr.checked_add(len as u64)?;
        (end <= base + alloc.size as u64).then_some(alloc.kind)
    }

    /// `[addr, addr + len)` as a pointer, if an allocation holds it and `addr` is aligned to
    /// `align`. The pointer stays valid while the caller holds this table (read lock).
    pub fn access(&self, addr: u64, len: usize, align: usize) -> CuResult<*mut u8> {
        if addr % align as u64 != 0 {
            return Err(CUresult::MISALIGNED_ADDRESS);
        }
        match self.kind_of(addr, len) {
            Some(_) => Ok(host_ptr(addr)),
            None => Err(CUresult::ILLEGAL_ADDRESS),
        }
    }

    fn insert(&mut self, addr: u64, size: usize, kind: AllocKind) {
        self.allocs.insert(
            addr,
            Alloc {
                size,
                kind,
                freeing: false,
            },
        );
        self.used += size;
    }

    /// Marks the allocation based at `addr` as queued for freeing.
    fn mark_freeing(&mut self, addr: u64) -> CuResult<()> {
        match self.allocs.get_mut(&addr) {
            Some(alloc) if !alloc.freeing && alloc.kind != AllocKind::Host => {
                alloc.freeing = true;
                Ok(())
            }
            _ => Err(CUresult::INVALID_VALUE),
        }
    }

    /// Removes and releases the allocation based at `addr`, if it is of one of `kinds`.
    pub fn free(&mut self, addr: u64, kinds: &[AllocKind]) -> CuResult<()> {
        let alloc = match self.allocs.get(&addr) {
            Some(alloc) if kinds.contains(&alloc.kind) => self.allocs.remove(&addr),
            _ => None,
        };
        let alloc = alloc.ok_or(CUresult::INVALID_VALUE)?;
        self.used -= alloc.size;
        release(addr, alloc.size, alloc.kind);
        Ok(())
    }
}

/// The host pointer behind a device address (device memory is host memory here).
#[allow(clippy::cast_possible_truncation)] // usize is 64 bits: see lib.rs.
pub(crate) fn host_ptr(addr: u64) -> *mut u8 {
    std::ptr::with_exposed_provenance_mut(addr as usize)
}

/// Allocates `size` zeroed bytes of `kind` and records them.
fn allocate(g: &Global, size: usize, kind: AllocKind) -> CuResult<u64> {
    if size == 0 {
        return Err(CUresult::INVALID_VALUE);
    }
    let addr = match kind {
        AllocKind::Device32 => map_low(size)?,
        AllocKind::Device | AllocKind::Host => {
            let layout =
                Layout::from_size_align(size, ALIGN).map_err(|_| CUresult::OUT_OF_MEMORY)?;
            // SAFETY: `layout` has a non-zero size.
            let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
            if ptr.is_null() {
                return Err(CUresult::OUT_OF_MEMORY);
            }
            ptr.expose_provenance() as u64
        }
    };
    g.memory
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(addr, size, kind);
    Ok(addr)
}

#[cfg(target_arch = "x86_64")]
fn map_low(size: usize) -> CuResult<u64> {
    // SAFETY: an anonymous private mapping with no address hint has no preconditions.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_32BIT,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        Err(CUresult::OUT_OF_MEMORY)
    } else {
        Ok(ptr.expose_provenance() as u64)
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn map_low(_size: usize) -> CuResult<u64> {
    Err(CUresult::OUT_OF_MEMORY)
}

fn release(addr: u64, size: usize, kind: AllocKind) {
    let ptr = host_ptr(addr);
    match kind {
        AllocKind::Device32 => {
            // SAFETY: `addr`/`size` is a mapping made by `map_low` and just removed from the
            // table, so no command can reach it any more.
            unsafe { libc::munmap(ptr.cast(), size) };
        }
        AllocKind::Device | AllocKind::Host => {
            // SAFETY: `ptr` was returned by `alloc_zeroed` with this layout (it was valid then,
            // so it is now) and was just removed from the table, so it is freed exactly once.
            unsafe { std::alloc::dealloc(ptr, Layout::from_size_align_unchecked(size, ALIGN)) };
        }
    }
}

/// Frees synchronously: waits for all queued work first, as the real driver does.
fn free_now(g: &Global, addr: u64, kinds: &[AllocKind]) -> CuResult<()> {
    for ctx in g.all_contexts() {
        for dep in ctx.all_pending() {
            dep.wait();
        }
    }
    g.memory
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .free(addr, kinds)
}

fn mem_alloc(out: *mut CUdeviceptr, size: usize) -> CuResult<()> {
    let g = initialized()?;
    context::current()?;
    potentially_unsafe()?;
    if out.is_null() {
        return Err(CUresult::INVALID_VALUE);
    }
    let addr = allocate(g, size, AllocKind::Device)?;
    // SAFETY: `out` is not NULL and the caller guarantees it is writable.
    unsafe { put(out, addr) }
}

fn mem_alloc_v1(out: *mut CUdeviceptr_v1, size: c_uint) -> CuResult<()> {
    let g = initialized()?;
    context::current()?;
    potentially_unsafe()?;
    if out.is_null() {
        return Err(CUresult::INVALID_VALUE);
    }
    let addr = allocate(g, size as usize, AllocKind::Device32)?;
    let Ok(addr32) = u32::try_from(addr) else {
        let _ = g
            .memory
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .free(addr, &[AllocKind::Device32]);
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
    context::current()?;
    let known =
        CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
    if out.is_null() || flags & !known != 0 {
        return Err(CUresult::INVALID_VALUE);
    }
    let addr = allocate(g, size, AllocKind::Host)?;
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
    context::current()?;
    let used = g.memory.read().unwrap_or_else(PoisonError::into_inner).used;
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
    let stream = stream::resolve(raw, mode)?;
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
    let addr = allocate(g, size, AllocKind::Device)?;
    // SAFETY: `out` is not NULL and the caller guarantees it is writable.
    unsafe { put(out, addr)? };
    stream
        .submit(Op::MemAlloc { ptr: addr, size }, Vec::new())
        .map(drop)
}

fn free_async(addr: CUdeviceptr, raw: CUstream, mode: DefaultStream) -> CuResult<()> {
    let g = initialized()?;
    let stream = stream::resolve(raw, mode)?;
    if stream.is_capturing() {
        stream.invalidate_capture();
        return Err(CUresult::STREAM_CAPTURE_UNSUPPORTED);
    }
    potentially_unsafe()?;
    g.memory
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .mark_freeing(addr)?;
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
