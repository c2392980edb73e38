//! Stream operations Baton does not model as commands but must keep in order: multi-
//! dimensional and peer copies, 2-D fills, prefetches, 64-bit and batched stream-memory
//! operations. Asynchronous ones run in place once everything before them was launched;
//! synchronous ones also leave their queue knowing all of it is done.

use std::ffi::{c_char, c_uint, c_ushort, c_void};

use baton_cuda::sys::{
    CUcontext, CUdevice, CUdeviceptr, CUjit_option, CUlibrary, CUlibraryOption, CUmodule, CUresult,
    CUstream,
};

use crate::ops::Count;
use crate::registry::Api;

macro_rules! in_place {
    ($name:ident($($a:ident: $t:ty),*), $api:expr) => {
        hook!($name($($a: $t,)* stream: CUstream) |rt, real| {
            // SAFETY: the application's arguments with the mapped stream.
            rt.scheduled(stream, $api, Count::Other, |h| unsafe { real($($a,)* h) }, || None)
        });
    };
}

macro_rules! stream_first_in_place {
    ($name:ident($($a:ident: $t:ty),*), $api:expr) => {
        hook!($name(stream: CUstream, $($a: $t),*) |rt, real| {
            // SAFETY: the application's arguments with the mapped stream.
            rt.scheduled(stream, $api, Count::Other, |h| unsafe { real(h, $($a),*) }, || None)
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

// Calls that wait for all pending work of the device (measured: scripts/gpu/gate_calls.sh). At
// Level 2 a suspended queue's launched commands wait behind its gate: it must open first.
macro_rules! device_wide {
    ($name:ident($($a:ident: $t:ty),*)) => {
        hook!($name($($a: $t),*) |rt, real| {
            rt.release_gates();
            // SAFETY: the application's arguments, unchanged.
            unsafe { real($($a),*) }
        });
    };
}
device_wide!(cuMemFree_v2(dptr: CUdeviceptr));
device_wide!(cuMemFreeHost(p: *mut c_void));
device_wide!(cuMemHostUnregister(p: *mut c_void));
device_wide!(cuModuleLoad(module: *mut CUmodule, fname: *const c_char));
device_wide!(cuModuleLoadData(module: *mut CUmodule, image: *const c_void));
device_wide!(cuModuleLoadDataEx(module: *mut CUmodule, image: *const c_void, n: c_uint, options: *mut CUjit_option, values: *mut *mut c_void));
device_wide!(cuModuleLoadFatBinary(module: *mut CUmodule, fat: *const c_void));
device_wide!(cuLibraryLoadData(library: *mut CUlibrary, code: *const c_void, jit: *mut CUjit_option, jit_values: *mut *mut c_void, n_jit: c_uint, options: *mut CUlibraryOption, values: *mut *mut c_void, n: c_uint));
device_wide!(cuLibraryLoadFromFile(library: *mut CUlibrary, file: *const c_char, jit: *mut CUjit_option, jit_values: *mut *mut c_void, n_jit: c_uint, options: *mut CUlibraryOption, values: *mut *mut c_void, n: c_uint));
