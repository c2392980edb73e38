//! Copies and fills, in stream order, in every form the driver exports.
//!
//! - Synchronous forms (`cuMemcpyHtoD_v2`, `cuMemsetD32_v2`, … and their `_ptds` variants) are
//!   submitted to the default stream (legacy, or per-thread for `_ptds`), with its implicit
//!   synchronization, and return only when the copy has executed. (The real driver may return
//!   earlier for some of them; waiting is always allowed.)
//! - Asynchronous forms from pageable host memory copy the source into a staging buffer before
//!   returning, and those to pageable host memory return only when done, as the real driver
//!   does; with pinned memory (from `cuMemAllocHost`/`cuMemHostAlloc`) they are fully
//!   asynchronous.
//! - The version-1 forms take 32-bit device addresses and sizes.

use std::ffi::{c_uint, c_ushort, c_void};
use std::sync::Arc;

use baton_cuda_sys::{CUdeviceptr, CUdeviceptr_v1, CUresult, CUstream};

use crate::current;
use crate::entry::exports;
use crate::memory::{AllocKind, host_ptr};
use crate::ops::{Op, Source};
use crate::result::CuResult;
use crate::state::initialized;
use crate::stream::{self, DefaultStream, Submitted};

/// What an entry point says a side of a copy is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Device,
    Host,
    /// `cuMemcpy`/`cuMemcpyAsync`: whatever the address is.
    Unified,
}

/// How the call relates to its stream.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Call {
    /// Synchronous form: the default stream of `DefaultStream`, and wait.
    Wait,
    /// Asynchronous form on this stream.
    Async(CUstream),
}

/// Resolves `(addr, len)` to (is device-accessible, is device memory proper), checking that a
/// side declared as device memory is.
fn classify(addr: u64, len: usize, side: Side) -> CuResult<(bool, bool)> {
    if addr == 0 {
        return Err(CUresult::INVALID_VALUE);
    }
    let g = initialized()?;
    let kind = baton_core::locks::read(&g.machine.memory).kind_of(addr, len);
    match (side, kind) {
        (Side::Device, None) => Err(CUresult::INVALID_VALUE),
        (_, Some(kind)) => Ok((true, kind != AllocKind::Host)),
        (_, None) => Ok((false, false)),
    }
}

fn stream_for(call: Call, mode: DefaultStream) -> CuResult<Arc<stream::Stream>> {
    match call {
        Call::Wait => current::stream(std::ptr::null_mut(), mode),
        Call::Async(raw) => current::stream(raw, mode),
    }
}

/// Waits for a submitted command when the call must not return before it ran.
fn finish(submitted: &Submitted, stream: &stream::Stream, wait: bool) -> CuResult<()> {
    if wait {
        submitted.wait();
        if let Some(ctx) = stream.ctx.upgrade() {
            return ctx.sticky();
        }
    }
    Ok(())
}

/// # Safety
///
/// Host sides must be valid for `bytes` bytes (readable source, writable destination).
unsafe fn copy(
    dst: u64,
    dst_side: Side,
    src: u64,
    src_side: Side,
    bytes: usize,
    call: Call,
    mode: DefaultStream,
) -> CuResult<()> {
    let stream = stream_for(call, mode)?;
    if bytes == 0 {
        return Ok(());
    }
    let (dst_device, dst_is_dev) = classify(dst, bytes, dst_side)?;
    let (src_device, src_is_dev) = classify(src, bytes, src_side)?;
    let dir = match (src_is_dev, dst_is_dev) {
        (false, true) => "HtoD",
        (true, false) => "DtoH",
        (true, true) => "DtoD",
        (false, false) => "HtoH",
    };
    let asynchronous = matches!(call, Call::Async(_));
    let source = if asynchronous && !src_device {
        // SAFETY: the caller guarantees the host source is readable for `bytes` bytes.
        let staged = unsafe { std::slice::from_raw_parts(host_ptr(src).cast_const(), bytes) };
        Source::Staged {
            addr: src,
            bytes: Arc::from(staged),
        }
    } else {
        Source::Addr(src)
    };
    let op = Op::Memcpy {
        dst,
        src: source,
        bytes,
        dir,
        dst_device,
        src_device,
    };
    let submitted = stream.submit(op, Vec::new())?;
    finish(&submitted, &stream, !asynchronous || !dst_device)
}

fn fill(
    dst: u64,
    value: u32,
    elem: usize,
    count: usize,
    call: Call,
    mode: DefaultStream,
) -> CuResult<()> {
    let stream = stream_for(call, mode)?;
    if count == 0 {
        return Ok(());
    }
    let len = elem.checked_mul(count).ok_or(CUresult::INVALID_VALUE)?;
    let g = initialized()?;
    let mem = baton_core::locks::read(&g.machine.memory);
    mem.access(dst, len, elem)
        .map_err(|_| CUresult::INVALID_VALUE)?;
    drop(mem);
    let submitted = stream.submit(
        Op::Memset {
            dst,
            value,
            elem,
            count,
        },
        Vec::new(),
    )?;
    finish(&submitted, &stream, call == Call::Wait)
}

fn host(ptr: *const c_void) -> u64 {
    ptr.expose_provenance() as u64
}

use Call::{Async, Wait};
use DefaultStream::{Legacy, PerThread};
use Side::{Device as D, Host as H, Unified as U};

exports! {
    /// Copies between any two addresses (unified addressing), synchronously.
    fn cuMemcpy(dst: CUdeviceptr, src: CUdeviceptr, n: usize): PFN_cuMemcpy => copy(dst, U, src, U, n, Wait, Legacy);
    /// Per-thread-default-stream form of `cuMemcpy`.
    fn cuMemcpy_ptds(dst: CUdeviceptr, src: CUdeviceptr, n: usize): PFN_cuMemcpy => copy(dst, U, src, U, n, Wait, PerThread);
    /// Copies between any two addresses in stream order.
    fn cuMemcpyAsync(dst: CUdeviceptr, src: CUdeviceptr, n: usize, s: CUstream): PFN_cuMemcpyAsync
        => copy(dst, U, src, U, n, Async(s), Legacy);
    /// Per-thread-default-stream form of `cuMemcpyAsync`.
    fn cuMemcpyAsync_ptsz(dst: CUdeviceptr, src: CUdeviceptr, n: usize, s: CUstream): PFN_cuMemcpyAsync
        => copy(dst, U, src, U, n, Async(s), PerThread);
    /// Host to device, synchronously (version 1).
    fn cuMemcpyHtoD(dst: CUdeviceptr_v1, src: *const c_void, n: c_uint): PFN_cuMemcpyHtoD
        => copy(dst.into(), D, host(src), H, n as usize, Wait, Legacy);
    /// Host to device, synchronously.
    fn cuMemcpyHtoD_v2(dst: CUdeviceptr, src: *const c_void, n: usize): PFN_cuMemcpyHtoD_v2
        => copy(dst, D, host(src), H, n, Wait, Legacy);
    /// Per-thread-default-stream form of `cuMemcpyHtoD_v2`.
    fn cuMemcpyHtoD_v2_ptds(dst: CUdeviceptr, src: *const c_void, n: usize): PFN_cuMemcpyHtoD_v2
        => copy(dst, D, host(src), H, n, Wait, PerThread);
    /// Device to host, synchronously (version 1).
    fn cuMemcpyDtoH(dst: *mut c_void, src: CUdeviceptr_v1, n: c_uint): PFN_cuMemcpyDtoH
        => copy(host(dst), H, src.into(), D, n as usize, Wait, Legacy);
    /// Device to host, synchronously.
    fn cuMemcpyDtoH_v2(dst: *mut c_void, src: CUdeviceptr, n: usize): PFN_cuMemcpyDtoH_v2
        => copy(host(dst), H, src, D, n, Wait, Legacy);
    /// Per-thread-default-stream form of `cuMemcpyDtoH_v2`.
    fn cuMemcpyDtoH_v2_ptds(dst: *mut c_void, src: CUdeviceptr, n: usize): PFN_cuMemcpyDtoH_v2
        => copy(host(dst), H, src, D, n, Wait, PerThread);
    /// Device to device, synchronously (version 1).
    fn cuMemcpyDtoD(dst: CUdeviceptr_v1, src: CUdeviceptr_v1, n: c_uint): PFN_cuMemcpyDtoD
        => copy(dst.into(), D, src.into(), D, n as usize, Wait, Legacy);
    /// Device to device, synchronously.
    fn cuMemcpyDtoD_v2(dst: CUdeviceptr, src: CUdeviceptr, n: usize): PFN_cuMemcpyDtoD_v2 => copy(dst, D, src, D, n, Wait, Legacy);
    /// Per-thread-default-stream form of `cuMemcpyDtoD_v2`.
    fn cuMemcpyDtoD_v2_ptds(dst: CUdeviceptr, src: CUdeviceptr, n: usize): PFN_cuMemcpyDtoD_v2
        => copy(dst, D, src, D, n, Wait, PerThread);
    /// Host to device in stream order (version 1).
    fn cuMemcpyHtoDAsync(dst: CUdeviceptr_v1, src: *const c_void, n: c_uint, s: CUstream): PFN_cuMemcpyHtoDAsync
        => copy(dst.into(), D, host(src), H, n as usize, Async(s), Legacy);
    /// Host to device in stream order.
    fn cuMemcpyHtoDAsync_v2(dst: CUdeviceptr, src: *const c_void, n: usize, s: CUstream): PFN_cuMemcpyHtoDAsync_v2
        => copy(dst, D, host(src), H, n, Async(s), Legacy);
    /// Per-thread-default-stream form of `cuMemcpyHtoDAsync_v2`.
    fn cuMemcpyHtoDAsync_v2_ptsz(dst: CUdeviceptr, src: *const c_void, n: usize, s: CUstream): PFN_cuMemcpyHtoDAsync_v2
        => copy(dst, D, host(src), H, n, Async(s), PerThread);
    /// Device to host in stream order (version 1).
    fn cuMemcpyDtoHAsync(dst: *mut c_void, src: CUdeviceptr_v1, n: c_uint, s: CUstream): PFN_cuMemcpyDtoHAsync
        => copy(host(dst), H, src.into(), D, n as usize, Async(s), Legacy);
    /// Device to host in stream order.
    fn cuMemcpyDtoHAsync_v2(dst: *mut c_void, src: CUdeviceptr, n: usize, s: CUstream): PFN_cuMemcpyDtoHAsync_v2
        => copy(host(dst), H, src, D, n, Async(s), Legacy);
    /// Per-thread-default-stream form of `cuMemcpyDtoHAsync_v2`.
    fn cuMemcpyDtoHAsync_v2_ptsz(dst: *mut c_void, src: CUdeviceptr, n: usize, s: CUstream): PFN_cuMemcpyDtoHAsync_v2
        => copy(host(dst), H, src, D, n, Async(s), PerThread);
    /// Device to device in stream order (version 1).
    fn cuMemcpyDtoDAsync(dst: CUdeviceptr_v1, src: CUdeviceptr_v1, n: c_uint, s: CUstream): PFN_cuMemcpyDtoDAsync
        => copy(dst.into(), D, src.into(), D, n as usize, Async(s), Legacy);
    /// Device to device in stream order.
    fn cuMemcpyDtoDAsync_v2(dst: CUdeviceptr, src: CUdeviceptr, n: usize, s: CUstream): PFN_cuMemcpyDtoDAsync_v2
        => copy(dst, D, src, D, n, Async(s), Legacy);
    /// Per-thread-default-stream form of `cuMemcpyDtoDAsync_v2`.
    fn cuMemcpyDtoDAsync_v2_ptsz(dst: CUdeviceptr, src: CUdeviceptr, n: usize, s: CUstream): PFN_cuMemcpyDtoDAsync_v2
        => copy(dst, D, src, D, n, Async(s), PerThread);

    /// Fills bytes, synchronously (version 1).
    fn cuMemsetD8(dst: CUdeviceptr_v1, v: u8, n: c_uint): PFN_cuMemsetD8 => fill(dst.into(), v.into(), 1, n as usize, Wait, Legacy);
    /// Fills bytes, synchronously.
    fn cuMemsetD8_v2(dst: CUdeviceptr, v: u8, n: usize): PFN_cuMemsetD8_v2 => fill(dst, v.into(), 1, n, Wait, Legacy);
    /// Per-thread-default-stream form of `cuMemsetD8_v2`.
    fn cuMemsetD8_v2_ptds(dst: CUdeviceptr, v: u8, n: usize): PFN_cuMemsetD8_v2 => fill(dst, v.into(), 1, n, Wait, PerThread);
    /// Fills 16-bit words, synchronously (version 1).
    fn cuMemsetD16(dst: CUdeviceptr_v1, v: c_ushort, n: c_uint): PFN_cuMemsetD16
        => fill(dst.into(), v.into(), 2, n as usize, Wait, Legacy);
    /// Fills 16-bit words, synchronously.
    fn cuMemsetD16_v2(dst: CUdeviceptr, v: c_ushort, n: usize): PFN_cuMemsetD16_v2 => fill(dst, v.into(), 2, n, Wait, Legacy);
    /// Per-thread-default-stream form of `cuMemsetD16_v2`.
    fn cuMemsetD16_v2_ptds(dst: CUdeviceptr, v: c_ushort, n: usize): PFN_cuMemsetD16_v2
        => fill(dst, v.into(), 2, n, Wait, PerThread);
    /// Fills 32-bit words, synchronously (version 1).
    fn cuMemsetD32(dst: CUdeviceptr_v1, v: c_uint, n: c_uint): PFN_cuMemsetD32 => fill(dst.into(), v, 4, n as usize, Wait, Legacy);
    /// Fills 32-bit words, synchronously.
    fn cuMemsetD32_v2(dst: CUdeviceptr, v: c_uint, n: usize): PFN_cuMemsetD32_v2 => fill(dst, v, 4, n, Wait, Legacy);
    /// Per-thread-default-stream form of `cuMemsetD32_v2`.
    fn cuMemsetD32_v2_ptds(dst: CUdeviceptr, v: c_uint, n: usize): PFN_cuMemsetD32_v2 => fill(dst, v, 4, n, Wait, PerThread);
    /// Fills bytes in stream order.
    fn cuMemsetD8Async(dst: CUdeviceptr, v: u8, n: usize, s: CUstream): PFN_cuMemsetD8Async
        => fill(dst, v.into(), 1, n, Async(s), Legacy);
    /// Per-thread-default-stream form of `cuMemsetD8Async`.
    fn cuMemsetD8Async_ptsz(dst: CUdeviceptr, v: u8, n: usize, s: CUstream): PFN_cuMemsetD8Async
        => fill(dst, v.into(), 1, n, Async(s), PerThread);
    /// Fills 16-bit words in stream order.
    fn cuMemsetD16Async(dst: CUdeviceptr, v: c_ushort, n: usize, s: CUstream): PFN_cuMemsetD16Async
        => fill(dst, v.into(), 2, n, Async(s), Legacy);
    /// Per-thread-default-stream form of `cuMemsetD16Async`.
    fn cuMemsetD16Async_ptsz(dst: CUdeviceptr, v: c_ushort, n: usize, s: CUstream): PFN_cuMemsetD16Async
        => fill(dst, v.into(), 2, n, Async(s), PerThread);
    /// Fills 32-bit words in stream order.
    fn cuMemsetD32Async(dst: CUdeviceptr, v: c_uint, n: usize, s: CUstream): PFN_cuMemsetD32Async
        => fill(dst, v, 4, n, Async(s), Legacy);
    /// Per-thread-default-stream form of `cuMemsetD32Async`.
    fn cuMemsetD32Async_ptsz(dst: CUdeviceptr, v: c_uint, n: usize, s: CUstream): PFN_cuMemsetD32Async
        => fill(dst, v, 4, n, Async(s), PerThread);
}
