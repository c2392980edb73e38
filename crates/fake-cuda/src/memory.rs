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
//! up as a test failure, not a crash.
//!
//! Allocations for the version-1 symbols ([`AllocKind::Device32`]: `cuMemAlloc` with a 32-bit
//! `CUdeviceptr_v1`) lie below 2 GiB (`MAP_32BIT`), so their addresses fit.
//!
//! The process's table is part of the machine state (`machine.rs`); the entry points are in
//! `memory_api.rs`.

use std::alloc::Layout;
use std::collections::BTreeMap;
use std::sync::RwLock;

use baton_cuda_sys::CUresult;

use crate::result::CuResult;

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

    /// Bytes allocated.
    pub fn used(&self) -> usize {
        self.used
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
    pub fn mark_freeing(&mut self, addr: u64) -> CuResult<()> {
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

/// Allocates `size` zeroed bytes of `kind` and records them in `table`.
pub(crate) fn allocate(table: &RwLock<MemoryTable>, size: usize, kind: AllocKind) -> CuResult<u64> {
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
    baton_core::locks::write(table).insert(addr, size, kind);
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
