//! Stream operations Baton does not model as commands but must keep in order: multi-
//! dimensional, peer, array and batched copies, 2-D fills, prefetches and discards,
//! decompression, array mapping, external semaphores, graphics interop, 64-bit and batched
//! stream-memory operations. Asynchronous ones run in place once everything before them was
//! launched; synchronous ones also leave their queue knowing all of it is done. Every
//! stream-ordered function the driver exports is hooked here or elsewhere (a test checks the
//! list against a real driver's exports).

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_ushort, c_void};

use baton_cuda::sys::{
    CUcontext, CUdevice, CUdeviceptr, CUfunction, CUhostFn, CUjit_option, CUlibrary,
    CUlibraryOption, CUmemLocation, CUmodule, CUresult, CUstream,
};

use crate::registry::Api;

macro_rules! in_place {
    ($name:ident($($a:ident: $t:ty),*), $api:expr) => {
        hook!($name($($a: $t,)* stream: CUstream) |rt, real| {
            // SAFETY: the application's arguments with the mapped stream.
            rt.in_place(stream, $api, |h| unsafe { real($($a,)* h) })
        });
    };
}

macro_rules! stream_first_in_place {
    ($name:ident($($a:ident: $t:ty),*), $api:expr) => {
        hook!($name(stream: CUstream, $($a: $t),*) |rt, real| {
            // SAFETY: the application's arguments with the mapped stream.
            rt.in_place(stream, $api, |h| unsafe { real(h, $($a),*) })
        });
    };
}

macro_rules! synchronous {
    ($name:ident($($a:ident: $t:ty),*), $api:expr) => {
        hook!($name($($a: $t),*) |rt, real| {
            let drain = rt.driver.cuStreamSynchronize;
            rt.synchronous(std::ptr::null_mut(), $api, |h| {
                if $api == Api::PerThread {
                    // The thread's earlier work is on Baton's stand-in: let it finish first.
                    if let Some(sync) = drain {
                        // SAFETY: `h` is Baton's live stand-in stream.
                        let r = unsafe { sync(h) };
                        if !r.is_success() {
                            return r;
                        }
                    }
                }
                // SAFETY: the application's arguments to the function it called.
                unsafe { real($($a),*) }
            })
        });
    };
}

in_place!(cuMemcpy2DAsync_v2(copy: *const c_void), Api::Plain);
in_place!(cuMemcpy2DAsync_v2_ptsz(copy: *const c_void), Api::PerThread);
in_place!(cuMemcpy3DAsync_v2(copy: *const c_void), Api::Plain);
in_place!(cuMemcpy3DAsync_v2_ptsz(copy: *const c_void), Api::PerThread);
in_place!(cuMemcpyPeerAsync(dst: CUdeviceptr, dst_ctx: CUcontext, src: CUdeviceptr, src_ctx: CUcontext, bytes: usize), Api::Plain);
in_place!(cuMemcpyPeerAsync_ptsz(dst: CUdeviceptr, dst_ctx: CUcontext, src: CUdeviceptr, src_ctx: CUcontext, bytes: usize), Api::PerThread);
in_place!(cuMemsetD2D8Async(dst: CUdeviceptr, pitch: usize, v: u8, w: usize, h_: usize), Api::Plain);
in_place!(cuMemsetD2D8Async_ptsz(dst: CUdeviceptr, pitch: usize, v: u8, w: usize, h_: usize), Api::PerThread);
in_place!(cuMemsetD2D16Async(dst: CUdeviceptr, pitch: usize, v: c_ushort, w: usize, h_: usize), Api::Plain);
in_place!(cuMemsetD2D16Async_ptsz(dst: CUdeviceptr, pitch: usize, v: c_ushort, w: usize, h_: usize), Api::PerThread);
in_place!(cuMemsetD2D32Async(dst: CUdeviceptr, pitch: usize, v: c_uint, w: usize, h_: usize), Api::Plain);
in_place!(cuMemsetD2D32Async_ptsz(dst: CUdeviceptr, pitch: usize, v: c_uint, w: usize, h_: usize), Api::PerThread);
in_place!(cuMemPrefetchAsync(ptr: CUdeviceptr, bytes: usize, device: CUdevice), Api::Plain);
in_place!(cuMemPrefetchAsync_ptsz(ptr: CUdeviceptr, bytes: usize, device: CUdevice), Api::PerThread);
stream_first_in_place!(cuStreamWaitValue64_v2(addr: CUdeviceptr, value: u64, flags: c_uint), Api::Plain);
stream_first_in_place!(cuStreamWaitValue64_v2_ptsz(addr: CUdeviceptr, value: u64, flags: c_uint), Api::PerThread);
stream_first_in_place!(cuStreamWriteValue64_v2(addr: CUdeviceptr, value: u64, flags: c_uint), Api::Plain);
stream_first_in_place!(cuStreamWriteValue64_v2_ptsz(addr: CUdeviceptr, value: u64, flags: c_uint), Api::PerThread);
stream_first_in_place!(cuStreamBatchMemOp_v2(count: c_uint, params: *mut c_void, flags: c_uint), Api::Plain);
stream_first_in_place!(cuStreamBatchMemOp_v2_ptsz(count: c_uint, params: *mut c_void, flags: c_uint), Api::PerThread);
// The first versions of the stream-memory operations, which programs built before CUDA 12 call.
stream_first_in_place!(cuStreamWaitValue64(addr: CUdeviceptr, value: u64, flags: c_uint), Api::Plain);
stream_first_in_place!(cuStreamWaitValue64_ptsz(addr: CUdeviceptr, value: u64, flags: c_uint), Api::PerThread);
stream_first_in_place!(cuStreamWriteValue64(addr: CUdeviceptr, value: u64, flags: c_uint), Api::Plain);
stream_first_in_place!(cuStreamWriteValue64_ptsz(addr: CUdeviceptr, value: u64, flags: c_uint), Api::PerThread);
stream_first_in_place!(cuStreamBatchMemOp(count: c_uint, params: *mut c_void, flags: c_uint), Api::Plain);
stream_first_in_place!(cuStreamBatchMemOp_ptsz(count: c_uint, params: *mut c_void, flags: c_uint), Api::PerThread);
stream_first_in_place!(cuStreamAttachMemAsync(ptr: CUdeviceptr, bytes: usize, flags: c_uint), Api::Plain);
stream_first_in_place!(cuStreamAttachMemAsync_ptsz(ptr: CUdeviceptr, bytes: usize, flags: c_uint), Api::PerThread);

// CUDA 12.2–13 additions and rarer stream-ordered operations: prefetching and discarding
// (`cuMemPrefetchAsync` resolves to `_v2` from CUDA 13), batched copies (12.8 with a failure
// index, 13 without), decompression, array mapping and copies, 3-D peer copies, external
// semaphores, graphics interop, the deprecated `cuLaunchGridAsync`.
macro_rules! in_place_both {
    ($plain:ident, $ptsz:ident ($($a:ident: $t:ty),*)) => {
        in_place!($plain($($a: $t),*), Api::Plain);
        in_place!($ptsz($($a: $t),*), Api::PerThread);
    };
}
in_place_both!(cuMemPrefetchAsync_v2, cuMemPrefetchAsync_v2_ptsz(ptr: CUdeviceptr, bytes: usize, location: CUmemLocation, flags: c_uint));
in_place_both!(cuMemPrefetchBatchAsync, cuMemPrefetchBatchAsync_ptsz(ptrs: *mut CUdeviceptr, sizes: *mut usize, count: usize, locations: *mut c_void, location_of: *mut usize, locations_n: usize, flags: c_ulonglong));
in_place_both!(cuMemDiscardBatchAsync, cuMemDiscardBatchAsync_ptsz(ptrs: *mut CUdeviceptr, sizes: *mut usize, count: usize, flags: c_ulonglong));
in_place_both!(cuMemDiscardAndPrefetchBatchAsync, cuMemDiscardAndPrefetchBatchAsync_ptsz(ptrs: *mut CUdeviceptr, sizes: *mut usize, count: usize, locations: *mut c_void, location_of: *mut usize, locations_n: usize, flags: c_ulonglong));
in_place_both!(cuMemcpyBatchAsync, cuMemcpyBatchAsync_ptsz(dsts: *mut CUdeviceptr, srcs: *mut CUdeviceptr, sizes: *mut usize, count: usize, attrs: *mut c_void, attr_of: *mut usize, attrs_n: usize, failed: *mut usize));
in_place_both!(cuMemcpyBatchAsync_v2, cuMemcpyBatchAsync_v2_ptsz(dsts: *mut CUdeviceptr, srcs: *mut CUdeviceptr, sizes: *mut usize, count: usize, attrs: *mut c_void, attr_of: *mut usize, attrs_n: usize));
in_place_both!(cuMemcpy3DBatchAsync, cuMemcpy3DBatchAsync_ptsz(count: usize, ops: *mut c_void, failed: *mut usize, flags: c_ulonglong));
in_place_both!(cuMemcpy3DBatchAsync_v2, cuMemcpy3DBatchAsync_v2_ptsz(count: usize, ops: *mut c_void, flags: c_ulonglong));
in_place_both!(cuMemBatchDecompressAsync, cuMemBatchDecompressAsync_ptsz(params: *mut c_void, count: usize, flags: c_uint, failed: *mut usize));
in_place_both!(cuMemMapArrayAsync, cuMemMapArrayAsync_ptsz(infos: *mut c_void, count: c_uint));
in_place_both!(cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync_ptsz(copy: *const c_void));
in_place_both!(cuMemcpyAtoHAsync_v2, cuMemcpyAtoHAsync_v2_ptsz(dst: *mut c_void, array: *mut c_void, offset: usize, bytes: usize));
in_place_both!(cuMemcpyHtoAAsync_v2, cuMemcpyHtoAAsync_v2_ptsz(array: *mut c_void, offset: usize, src: *const c_void, bytes: usize));
in_place_both!(cuSignalExternalSemaphoresAsync, cuSignalExternalSemaphoresAsync_ptsz(sems: *const *mut c_void, params: *const c_void, count: c_uint));
in_place_both!(cuWaitExternalSemaphoresAsync, cuWaitExternalSemaphoresAsync_ptsz(sems: *const *mut c_void, params: *const c_void, count: c_uint));
in_place_both!(cuGraphicsMapResources, cuGraphicsMapResources_ptsz(count: c_uint, resources: *mut *mut c_void));
in_place_both!(cuGraphicsUnmapResources, cuGraphicsUnmapResources_ptsz(count: c_uint, resources: *mut *mut c_void));
in_place!(cuLaunchGridAsync(f: CUfunction, width: c_int, height: c_int), Api::Plain);
// CUDA 13.1 additions (hooked for drivers that have them).
in_place!(cuMemcpyWithAttributesAsync(dst: CUdeviceptr, src: CUdeviceptr, bytes: usize, attr: *mut c_void), Api::Plain);
in_place!(cuMemcpy3DWithAttributesAsync(op: *mut c_void, flags: c_ulonglong), Api::Plain);
stream_first_in_place!(cuLaunchHostFunc_v2(f: CUhostFn, data: *mut c_void, mode: c_uint), Api::Plain);

// Synchronous forms act on the legacy stream (plain) or the calling thread's per-thread stream
// (`_ptds`). For the latter Baton's stand-in stream holds the thread's earlier work, so the
// stand-in is synchronized first; the driver then runs the copy on its own per-thread stream,
// which has nothing pending.
synchronous!(cuMemcpy2D_v2(copy: *const c_void), Api::Plain);
synchronous!(cuMemcpy2D_v2_ptds(copy: *const c_void), Api::PerThread);
synchronous!(cuMemcpy2DUnaligned_v2(copy: *const c_void), Api::Plain);
synchronous!(cuMemcpy2DUnaligned_v2_ptds(copy: *const c_void), Api::PerThread);
synchronous!(cuMemcpy3D_v2(copy: *const c_void), Api::Plain);
synchronous!(cuMemcpy3D_v2_ptds(copy: *const c_void), Api::PerThread);
synchronous!(cuMemcpyPeer(dst: CUdeviceptr, dst_ctx: CUcontext, src: CUdeviceptr, src_ctx: CUcontext, bytes: usize), Api::Plain);
synchronous!(cuMemcpyPeer_ptds(dst: CUdeviceptr, dst_ctx: CUcontext, src: CUdeviceptr, src_ctx: CUcontext, bytes: usize), Api::PerThread);
synchronous!(cuMemcpy3DPeer(copy: *const c_void), Api::Plain);
synchronous!(cuMemcpy3DPeer_ptds(copy: *const c_void), Api::PerThread);
synchronous!(cuMemcpyAtoH_v2(dst: *mut c_void, array: *mut c_void, offset: usize, bytes: usize), Api::Plain);
synchronous!(cuMemcpyAtoH_v2_ptds(dst: *mut c_void, array: *mut c_void, offset: usize, bytes: usize), Api::PerThread);
synchronous!(cuMemcpyHtoA_v2(array: *mut c_void, offset: usize, src: *const c_void, bytes: usize), Api::Plain);
synchronous!(cuMemcpyHtoA_v2_ptds(array: *mut c_void, offset: usize, src: *const c_void, bytes: usize), Api::PerThread);
synchronous!(cuMemcpyDtoA_v2(array: *mut c_void, offset: usize, src: CUdeviceptr, bytes: usize), Api::Plain);
synchronous!(cuMemcpyDtoA_v2_ptds(array: *mut c_void, offset: usize, src: CUdeviceptr, bytes: usize), Api::PerThread);
synchronous!(cuMemcpyAtoD_v2(dst: CUdeviceptr, array: *mut c_void, offset: usize, bytes: usize), Api::Plain);
synchronous!(cuMemcpyAtoD_v2_ptds(dst: CUdeviceptr, array: *mut c_void, offset: usize, bytes: usize), Api::PerThread);
synchronous!(cuMemcpyAtoA_v2(dst: *mut c_void, dst_offset: usize, src: *mut c_void, src_offset: usize, bytes: usize), Api::Plain);
synchronous!(cuMemcpyAtoA_v2_ptds(dst: *mut c_void, dst_offset: usize, src: *mut c_void, src_offset: usize, bytes: usize), Api::PerThread);
synchronous!(cuMemsetD2D8_v2(dst: CUdeviceptr, pitch: usize, v: u8, w: usize, h_: usize), Api::Plain);
synchronous!(cuMemsetD2D8_v2_ptds(dst: CUdeviceptr, pitch: usize, v: u8, w: usize, h_: usize), Api::PerThread);
synchronous!(cuMemsetD2D16_v2(dst: CUdeviceptr, pitch: usize, v: c_ushort, w: usize, h_: usize), Api::Plain);
synchronous!(cuMemsetD2D16_v2_ptds(dst: CUdeviceptr, pitch: usize, v: c_ushort, w: usize, h_: usize), Api::PerThread);
synchronous!(cuMemsetD2D32_v2(dst: CUdeviceptr, pitch: usize, v: c_uint, w: usize, h_: usize), Api::Plain);
synchronous!(cuMemsetD2D32_v2_ptds(dst: CUdeviceptr, pitch: usize, v: c_uint, w: usize, h_: usize), Api::PerThread);

// Calls that wait for all pending work of the device (measured:
// scripts/gpu/levels/gate_calls.sh). At Level 2 a suspended queue's launched commands wait behind
// its gate: it must open first.
macro_rules! device_wide {
    ($name:ident($($a:ident: $t:ty),*)) => {
        hook!($name($($a: $t),*) |rt, real| {
            rt.release_gates();
            // SAFETY: the application's arguments, unchanged.
            unsafe { real($($a),*) }
        });
    };
}
// Freeing also ends the memory's use by every command submitted before: see `before_free`.
macro_rules! freeing {
    ($name:ident($($a:ident: $t:ty),*)) => {
        hook!($name($($a: $t),*) |rt, real| {
            // SAFETY: the application's arguments, unchanged.
            rt.before_free(|| unsafe { real($($a),*) })
        });
    };
}
freeing!(cuMemFree_v2(dptr: CUdeviceptr));
freeing!(cuMemFreeHost(p: *mut c_void));
freeing!(cuMemHostUnregister(p: *mut c_void));
device_wide!(cuModuleLoad(module: *mut CUmodule, fname: *const c_char));
device_wide!(cuModuleLoadData(module: *mut CUmodule, image: *const c_void));
device_wide!(cuModuleLoadDataEx(module: *mut CUmodule, image: *const c_void, n: c_uint, options: *mut CUjit_option, values: *mut *mut c_void));
device_wide!(cuModuleLoadFatBinary(module: *mut CUmodule, fat: *const c_void));
device_wide!(cuLibraryLoadData(library: *mut CUlibrary, code: *const c_void, jit: *mut CUjit_option, jit_values: *mut *mut c_void, n_jit: c_uint, options: *mut CUlibraryOption, values: *mut *mut c_void, n: c_uint));
device_wide!(cuLibraryLoadFromFile(library: *mut CUlibrary, file: *const c_char, jit: *mut CUjit_option, jit_values: *mut *mut c_void, n_jit: c_uint, options: *mut CUlibraryOption, values: *mut *mut c_void, n: c_uint));
