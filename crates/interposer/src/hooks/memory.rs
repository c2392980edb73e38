//! Copies, fills, stream-ordered allocation.
//!
//! Copies and fills are scheduled (deferred when they must wait), except copies touching
//! pageable host memory, which run in place in order: an application may reuse a pageable
//! buffer as soon as an asynchronous call returns (for such copies the driver's own call
//! blocks as well).
//! Synchronous forms run in order and return when done; the per-thread forms go to Baton's
//! stand-in for the per-thread stream. Allocation runs at once (the pointer must be valid when
//! the call returns), freeing is scheduled after the work that may still use the memory.

use std::ffi::{c_uint, c_ushort, c_void};

use baton_cuda::sys::{CUdeviceptr, CUmemoryPool, CUresult, CUstream};
use baton_cuda::{CudaCommand, HostPtr, MemsetWidth, Op};

use crate::ops::Count;
use crate::registry::Api;
use crate::runtime::Runtime;

macro_rules! dtod_async {
    ($name:ident, $api:expr) => {
        hook!($name(dst: CUdeviceptr, src: CUdeviceptr, bytes: usize, stream: CUstream) |rt, real| {
            let op = Op::Command(&CudaCommand::CopyDtoD { dst, src, bytes });
            rt.scheduled(stream, $api, Count::Other, op)
                // SAFETY: the application's arguments, unchanged, to the function it called.
                .unwrap_or_else(|| unsafe { real(dst, src, bytes, stream) })
        });
    };
}
dtod_async!(cuMemcpyDtoDAsync_v2, Api::Plain);
dtod_async!(cuMemcpyDtoDAsync_v2_ptsz, Api::PerThread);

macro_rules! memset_async {
    ($name:ident, $api:expr, $ty:ty, $width:expr) => {
        hook!($name(dst: CUdeviceptr, value: $ty, count: usize, stream: CUstream) |rt, real| {
            let op = Op::Command(&CudaCommand::Memset { width: $width, dst, value: u32::from(value), count });
            rt.scheduled(stream, $api, Count::Other, op)
                // SAFETY: the application's arguments, unchanged, to the function it called.
                .unwrap_or_else(|| unsafe { real(dst, value, count, stream) })
        });
    };
}
memset_async!(cuMemsetD8Async, Api::Plain, u8, MemsetWidth::D8);
memset_async!(cuMemsetD8Async_ptsz, Api::PerThread, u8, MemsetWidth::D8);
memset_async!(cuMemsetD16Async, Api::Plain, c_ushort, MemsetWidth::D16);
memset_async!(
    cuMemsetD16Async_ptsz,
    Api::PerThread,
    c_ushort,
    MemsetWidth::D16
);
memset_async!(cuMemsetD32Async, Api::Plain, c_uint, MemsetWidth::D32);
memset_async!(
    cuMemsetD32Async_ptsz,
    Api::PerThread,
    c_uint,
    MemsetWidth::D32
);

// Asynchronous copies touching host memory are deferred only when that memory is page-locked
// (the driver knows it): pageable memory may be reused the moment the call returns.

macro_rules! copy_async {
    ($name:ident, $api:expr) => {
        hook!($name(dst: CUdeviceptr, src: CUdeviceptr, bytes: usize, stream: CUstream) |rt, real| {
            // SAFETY: the application's arguments with the mapped stream.
            let direct = |h| unsafe { real(dst, src, bytes, h) };
            if !rt.driver.is_driver_memory(dst) {
                // Into pageable memory the driver's call returns when the copy is done.
                return rt.synchronous(stream, $api, direct);
            }
            // From pageable memory it runs in place (`Launch::into_owned`).
            let op = Op::Command(&CudaCommand::Copy { dst, src, bytes });
            rt.scheduled(stream, $api, Count::Other, op).unwrap_or_else(|| direct(stream))
        });
    };
}
copy_async!(cuMemcpyAsync, Api::Plain);
copy_async!(cuMemcpyAsync_ptsz, Api::PerThread);

macro_rules! copy_htod_async {
    ($name:ident, $api:expr) => {
        hook!($name(dst: CUdeviceptr, src: *const c_void, bytes: usize, stream: CUstream) |rt, real| {
            // From pageable memory it runs in place (`Launch::into_owned`).
            let op = Op::Command(&CudaCommand::CopyHtoD { dst, src: HostPtr(src.cast_mut()), bytes });
            rt.scheduled(stream, $api, Count::Other, op)
                // SAFETY: the application's arguments, unchanged, to the function it called.
                .unwrap_or_else(|| unsafe { real(dst, src, bytes, stream) })
        });
    };
}
copy_htod_async!(cuMemcpyHtoDAsync_v2, Api::Plain);
copy_htod_async!(cuMemcpyHtoDAsync_v2_ptsz, Api::PerThread);

macro_rules! copy_dtoh_async {
    ($name:ident, $api:expr) => {
        hook!($name(dst: *mut c_void, src: CUdeviceptr, bytes: usize, stream: CUstream) |rt, real| {
            // SAFETY: the application's arguments with the mapped stream.
            let direct = |h| unsafe { real(dst, src, bytes, h) };
            if !rt.driver.is_driver_memory(dst as CUdeviceptr) {
                // Into pageable memory the driver's call returns when the copy is done.
                return rt.synchronous(stream, $api, direct);
            }
            let op = Op::Command(&CudaCommand::CopyDtoH { dst: HostPtr(dst), src, bytes });
            rt.scheduled(stream, $api, Count::Other, op).unwrap_or_else(|| direct(stream))
        });
    };
}
copy_dtoh_async!(cuMemcpyDtoHAsync_v2, Api::Plain);
copy_dtoh_async!(cuMemcpyDtoHAsync_v2_ptsz, Api::PerThread);

macro_rules! value_op {
    ($name:ident, $api:expr, $variant:ident) => {
        hook!($name(stream: CUstream, addr: CUdeviceptr, value: u32, flags: c_uint) |rt, real| {
            let op = Op::Command(&CudaCommand::$variant { addr, value, flags });
            rt.scheduled(stream, $api, Count::Other, op)
                // SAFETY: the application's arguments, unchanged, to the function it called.
                .unwrap_or_else(|| unsafe { real(stream, addr, value, flags) })
        });
    };
}
value_op!(cuStreamWaitValue32_v2, Api::Plain, WaitValue32);
value_op!(cuStreamWaitValue32_v2_ptsz, Api::PerThread, WaitValue32);
value_op!(cuStreamWriteValue32_v2, Api::Plain, WriteValue32);
value_op!(cuStreamWriteValue32_v2_ptsz, Api::PerThread, WriteValue32);
// The first versions (programs built before CUDA 12): same arguments, same command.
value_op!(cuStreamWaitValue32, Api::Plain, WaitValue32);
value_op!(cuStreamWaitValue32_ptsz, Api::PerThread, WaitValue32);
value_op!(cuStreamWriteValue32, Api::Plain, WriteValue32);
value_op!(cuStreamWriteValue32_ptsz, Api::PerThread, WriteValue32);

/// A synchronous operation of the legacy stream (`call`), or of the per-thread stream
/// (`on_stream` on Baton's stand-in, then a wait for it).
fn synchronous(
    rt: &Runtime,
    api: Api,
    call: impl FnOnce() -> CUresult,
    on_stream: impl FnOnce(CUstream) -> CUresult,
) -> CUresult {
    match api {
        Api::Plain => rt.synchronous(std::ptr::null_mut(), Api::Plain, |_| call()),
        Api::PerThread => {
            let Some(sync) = rt.driver.cuStreamSynchronize else {
                return CUresult::NOT_FOUND;
            };
            rt.synchronous(std::ptr::null_mut(), Api::PerThread, |h| {
                let r = on_stream(h);
                if !r.is_success() {
                    return r;
                }
                // SAFETY: `h` is Baton's live stand-in stream.
                unsafe { sync(h) }
            })
        }
    }
}

macro_rules! sync_copy {
    ($plain:ident, $ptds:ident, $async_fn:ident, ($($a:ident: $t:ty),*)) => {
        hook!($plain($($a: $t),*) |rt, real| {
            // SAFETY: the application's arguments to the synchronous function it called.
            synchronous(rt, Api::Plain, || unsafe { real($($a),*) }, |_| CUresult::NOT_SUPPORTED)
        });
        hook!($ptds($($a: $t),*) |rt, real| {
            let Some(on) = rt.driver.$async_fn else {
                // SAFETY: as above.
                return unsafe { real($($a),*) };
            };
            // SAFETY: the application's arguments, as the asynchronous form on Baton's stand-in.
            synchronous(rt, Api::PerThread, || CUresult::NOT_SUPPORTED, |h| unsafe { on($($a,)* h) })
        });
    };
}
sync_copy!(cuMemcpy, cuMemcpy_ptds, cuMemcpyAsync, (dst: CUdeviceptr, src: CUdeviceptr, bytes: usize));
sync_copy!(cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds, cuMemcpyHtoDAsync_v2, (dst: CUdeviceptr, src: *const c_void, bytes: usize));
sync_copy!(cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds, cuMemcpyDtoHAsync_v2, (dst: *mut c_void, src: CUdeviceptr, bytes: usize));
sync_copy!(cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds, cuMemcpyDtoDAsync_v2, (dst: CUdeviceptr, src: CUdeviceptr, bytes: usize));
sync_copy!(cuMemsetD8_v2, cuMemsetD8_v2_ptds, cuMemsetD8Async, (dst: CUdeviceptr, value: u8, count: usize));
sync_copy!(cuMemsetD16_v2, cuMemsetD16_v2_ptds, cuMemsetD16Async, (dst: CUdeviceptr, value: c_ushort, count: usize));
sync_copy!(cuMemsetD32_v2, cuMemsetD32_v2_ptds, cuMemsetD32Async, (dst: CUdeviceptr, value: c_uint, count: usize));

macro_rules! alloc_async {
    ($name:ident, $api:expr) => {
        hook!($name(ptr: *mut CUdeviceptr, bytes: usize, stream: CUstream) |rt, real| {
            // The pointer must be valid when the call returns: allocate now, on the stream the
            // application named. Earlier buffered work cannot use memory that did not exist.
            let h = rt.plain_handle(stream, $api);
            // SAFETY: the application's arguments with the mapped stream.
            unsafe { real(ptr, bytes, h) }
        });
    };
}
alloc_async!(cuMemAllocAsync, Api::Plain);
alloc_async!(cuMemAllocAsync_ptsz, Api::PerThread);

macro_rules! alloc_from_pool_async {
    ($name:ident, $api:expr) => {
        hook!($name(ptr: *mut CUdeviceptr, bytes: usize, pool: CUmemoryPool, stream: CUstream) |rt, real| {
            // As `cuMemAllocAsync`, from a given pool.
            let h = rt.plain_handle(stream, $api);
            // SAFETY: the application's arguments with the mapped stream.
            unsafe { real(ptr, bytes, pool, h) }
        });
    };
}
alloc_from_pool_async!(cuMemAllocFromPoolAsync, Api::Plain);
alloc_from_pool_async!(cuMemAllocFromPoolAsync_ptsz, Api::PerThread);

macro_rules! free_async {
    ($name:ident, $api:expr) => {
        hook!($name(ptr: CUdeviceptr, stream: CUstream) |rt, real| {
            let op = Op::Command(&CudaCommand::MemFree(ptr));
            rt.scheduled(stream, $api, Count::Other, op)
                // SAFETY: the application's arguments, unchanged, to the function it called.
                .unwrap_or_else(|| unsafe { real(ptr, stream) })
        });
    };
}
free_async!(cuMemFreeAsync, Api::Plain);
free_async!(cuMemFreeAsync_ptsz, Api::PerThread);
