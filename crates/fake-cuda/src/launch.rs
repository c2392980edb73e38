//! Kernel launches and host functions.
//!
//! Kernel arguments are copied at launch time, as the real driver does: either from
//! `kernelParams` (one pointer per parameter, sizes from the kernel's parameter layout) or from
//! an `extra` array holding `CU_LAUNCH_PARAM_BUFFER_POINTER` (a packed buffer in that layout)
//! and `CU_LAUNCH_PARAM_BUFFER_SIZE`. `cuLaunchKernelEx` also copies its attributes.

use std::ffi::{c_uint, c_void};

use baton_cuda_sys::{
    CU_LAUNCH_ATTRIBUTE_COOPERATIVE, CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT,
    CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT, CU_LAUNCH_PARAM_BUFFER_POINTER,
    CU_LAUNCH_PARAM_BUFFER_SIZE, CU_LAUNCH_PARAM_END, CUfunction, CUhostFn, CUlaunchConfig,
    CUresult, CUstream,
};

use crate::current;
use crate::entry::exports;
use crate::events_api;
use crate::handle::raw_of;
use crate::kernels::KernelDef;
use crate::module_api::find_function;
use crate::ops::{KernelLaunch, Op};
use crate::result::CuResult;
use crate::state::initialized;
use crate::stream::DefaultStream;

/// Device limits the launch is checked against (H100).
const MAX_THREADS_PER_BLOCK: u64 = 1024;
const MAX_BLOCK_DIM: [u32; 3] = [1024, 1024, 64];
const MAX_GRID_DIM: [u32; 3] = [i32::MAX as u32, 65535, 65535];
const MAX_SHARED_MEMORY: u32 = 232_448;

/// The geometry of a launch.
struct Dims {
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
}

impl Dims {
    fn check(&self) -> CuResult<()> {
        let threads: u64 = self.block.iter().map(|&d| u64::from(d)).product();
        let grid_ok = self
            .grid
            .iter()
            .zip(MAX_GRID_DIM)
            .all(|(&d, max)| d >= 1 && d <= max);
        let block_ok = self
            .block
            .iter()
            .zip(MAX_BLOCK_DIM)
            .all(|(&d, max)| d >= 1 && d <= max);
        if grid_ok
            && block_ok
            && threads <= MAX_THREADS_PER_BLOCK
            && self.shared <= MAX_SHARED_MEMORY
        {
            Ok(())
        } else {
            Err(CUresult::INVALID_VALUE)
        }
    }
}

/// Copies the arguments of a launch into a packed buffer.
///
/// # Safety
///
/// `params`, if not NULL, must hold one valid pointer per kernel parameter, each readable for
/// the parameter's size; `extra`, if not NULL, must be a `CU_LAUNCH_PARAM_END`-terminated array
/// of key/value pairs whose buffer is readable for its stated size.
unsafe fn marshal(
    def: &KernelDef,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CuResult<Vec<u8>> {
    let size = def.args_size();
    let mut buffer = vec![0u8; size];
    match (params.is_null(), extra.is_null()) {
        (false, false) => Err(CUresult::INVALID_VALUE),
        (true, true) if def.params.is_empty() => Ok(buffer),
        (true, true) => Err(CUresult::INVALID_VALUE),
        (false, true) => {
            for index in 0..def.params.len() {
                let (offset, len) = def.param_info(index).ok_or(CUresult::INVALID_VALUE)?;
                // SAFETY: `params` holds one pointer per parameter (contract above).
                let arg = unsafe { params.add(index).read() };
                if arg.is_null() {
                    return Err(CUresult::INVALID_VALUE);
                }
                // SAFETY: `arg` is readable for the parameter's size `len` (contract above), and
                // `buffer[offset..offset + len]` is in bounds because `size` ends the last one.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        arg.cast::<u8>(),
                        buffer[offset..].as_mut_ptr(),
                        len,
                    )
                };
            }
            Ok(buffer)
        }
        (true, false) => {
            let (mut packed, mut packed_size) = (std::ptr::null::<u8>(), None);
            for pair in 0.. {
                // SAFETY: `extra` is an END-terminated key/value array (contract above); reading
                // stops at END, and each key is followed by its value.
                let key = unsafe { extra.add(2 * pair).read() };
                if key == CU_LAUNCH_PARAM_END {
                    break;
                }
                // SAFETY: as above: a key other than END has a value after it.
                let value = unsafe { extra.add(2 * pair + 1).read() };
                if key == CU_LAUNCH_PARAM_BUFFER_POINTER {
                    packed = value.cast::<u8>().cast_const();
                } else if key == CU_LAUNCH_PARAM_BUFFER_SIZE && !value.is_null() {
                    // SAFETY: the value of BUFFER_SIZE points to a size_t (contract above).
                    packed_size = Some(unsafe { value.cast::<usize>().read() });
                } else {
                    return Err(CUresult::INVALID_VALUE);
                }
            }
            match packed_size {
                Some(stated) if !packed.is_null() && stated >= size => {
                    // SAFETY: the packed buffer is readable for `stated >= size` bytes.
                    unsafe { std::ptr::copy_nonoverlapping(packed, buffer.as_mut_ptr(), size) };
                    Ok(buffer)
                }
                _ => Err(CUresult::INVALID_VALUE),
            }
        }
    }
}

/// What one launch entry point received, beyond the function and stream.
struct Launch {
    dims: Dims,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    cooperative: bool,
    attrs: Vec<(u32, [u32; 4])>,
}

unsafe fn launch(
    f: CUfunction,
    raw: CUstream,
    mode: DefaultStream,
    launch: Launch,
) -> CuResult<()> {
    let function = find_function(raw_of(f))?;
    launch.dims.check()?;
    // The limit in force when the launch call is made counts (see `module.rs`).
    if launch.dims.shared > crate::module_api::limit_in_force(&function) {
        return Err(CUresult::INVALID_VALUE);
    }
    // SAFETY: forwarded from the caller (the launch entry point's contract).
    let args = unsafe { marshal(function.def, launch.params, launch.extra)? };
    let stream = current::stream(raw, mode)?;
    if initialized()?.machine.lazy_loading
        && !function
            .loaded
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        && let Some(ctx) = stream.ctx.upgrade()
    {
        // Loading the function waits for everything pending in its context.
        for dep in ctx.all_pending() {
            dep.wait();
        }
    }
    let op = Op::Kernel(Box::new(KernelLaunch {
        def: function.def,
        args,
        grid: launch.dims.grid,
        block: launch.dims.block,
        shared: launch.dims.shared,
        cooperative: launch.cooperative,
        attrs: launch.attrs,
    }));
    stream.submit(op, Vec::new()).map(drop)
}

#[allow(clippy::too_many_arguments)]
unsafe fn launch_kernel(
    f: CUfunction,
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared: c_uint,
    raw: CUstream,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    cooperative: bool,
    mode: DefaultStream,
) -> CuResult<()> {
    let dims = Dims {
        grid,
        block,
        shared,
    };
    // SAFETY: forwarded from the caller.
    unsafe {
        launch(
            f,
            raw,
            mode,
            Launch {
                dims,
                params,
                extra,
                cooperative,
                attrs: Vec::new(),
            },
        )
    }
}

unsafe fn launch_ex(
    config: *const CUlaunchConfig,
    f: CUfunction,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    mode: DefaultStream,
) -> CuResult<()> {
    if config.is_null() {
        return Err(CUresult::INVALID_VALUE);
    }
    // SAFETY: a non-NULL `config` points to a CUlaunchConfig, as the API requires.
    let config = unsafe { config.read() };
    if config.numAttrs > 0 && config.attrs.is_null() {
        return Err(CUresult::INVALID_VALUE);
    }
    let mut attrs = Vec::new();
    let mut cooperative = false;
    let mut events = Vec::new();
    for index in 0..config.numAttrs as usize {
        // SAFETY: `attrs` holds `numAttrs` attributes, as the API requires.
        let attr = unsafe { config.attrs.add(index).read() };
        // SAFETY: every member of the value union is plain data; reading the raw bytes is valid.
        let raw = unsafe { attr.value.pad };
        let word = |i: usize| {
            u32::from_ne_bytes(
                [raw[4 * i], raw[4 * i + 1], raw[4 * i + 2], raw[4 * i + 3]]
                    .map(|b| b.to_ne_bytes()[0]),
            )
        };
        attrs.push((attr.id.0, [word(0), word(1), word(2), word(3)]));
        if attr.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE {
            cooperative = word(0) != 0;
        }
        if attr.id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT
            || attr.id == CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT
        {
            // SAFETY: for these keys the value's first member is the event handle.
            events.push(unsafe { attr.value.launchCompletionEvent.event });
        }
    }
    let dims = Dims {
        grid: [config.gridDimX, config.gridDimY, config.gridDimZ],
        block: [config.blockDimX, config.blockDimY, config.blockDimZ],
        shared: config.sharedMemBytes,
    };
    // SAFETY: forwarded from the caller.
    unsafe {
        launch(
            f,
            config.hStream,
            mode,
            Launch {
                dims,
                params,
                extra,
                cooperative,
                attrs,
            },
        )?;
    }
    // An event a launch triggers (when its blocks have started, or when it signals a
    // programmatic completion) is modelled as a record right after it: never earlier than on a
    // GPU.
    if !events.is_empty() {
        let stream = current::stream(config.hStream, mode)?;
        for event in events {
            events_api::find(event)?.record_on(&stream)?;
        }
    }
    Ok(())
}

fn host_func(
    raw: CUstream,
    func: CUhostFn,
    data: *mut c_void,
    mode: DefaultStream,
) -> CuResult<()> {
    let func = func.ok_or(CUresult::INVALID_VALUE)?;
    let stream = current::stream(raw, mode)?;
    stream
        .submit(
            Op::HostFunc {
                func,
                data: data.expose_provenance(),
            },
            Vec::new(),
        )
        .map(drop)
}

use DefaultStream::{Legacy, PerThread};

exports! {
    /// Launches a kernel.
    fn cuLaunchKernel(
        f: CUfunction, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shared: c_uint,
        hStream: CUstream, kernelParams: *mut *mut c_void, extra: *mut *mut c_void,
    ): PFN_cuLaunchKernel => launch_kernel(f, [gx, gy, gz], [bx, by, bz], shared, hStream, kernelParams, extra, false, Legacy);
    /// Per-thread-default-stream form of `cuLaunchKernel`.
    fn cuLaunchKernel_ptsz(
        f: CUfunction, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shared: c_uint,
        hStream: CUstream, kernelParams: *mut *mut c_void, extra: *mut *mut c_void,
    ): PFN_cuLaunchKernel => launch_kernel(f, [gx, gy, gz], [bx, by, bz], shared, hStream, kernelParams, extra, false, PerThread);
    /// Launches a kernel with a configuration and attributes.
    fn cuLaunchKernelEx(config: *const CUlaunchConfig, f: CUfunction, kernelParams: *mut *mut c_void, extra: *mut *mut c_void): PFN_cuLaunchKernelEx
        => launch_ex(config, f, kernelParams, extra, Legacy);
    /// Per-thread-default-stream form of `cuLaunchKernelEx`.
    fn cuLaunchKernelEx_ptsz(config: *const CUlaunchConfig, f: CUfunction, kernelParams: *mut *mut c_void, extra: *mut *mut c_void): PFN_cuLaunchKernelEx
        => launch_ex(config, f, kernelParams, extra, PerThread);
    /// Launches a cooperative kernel.
    fn cuLaunchCooperativeKernel(
        f: CUfunction, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shared: c_uint,
        hStream: CUstream, kernelParams: *mut *mut c_void,
    ): PFN_cuLaunchCooperativeKernel
        => launch_kernel(f, [gx, gy, gz], [bx, by, bz], shared, hStream, kernelParams, std::ptr::null_mut(), true, Legacy);
    /// Per-thread-default-stream form of `cuLaunchCooperativeKernel`.
    fn cuLaunchCooperativeKernel_ptsz(
        f: CUfunction, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shared: c_uint,
        hStream: CUstream, kernelParams: *mut *mut c_void,
    ): PFN_cuLaunchCooperativeKernel
        => launch_kernel(f, [gx, gy, gz], [bx, by, bz], shared, hStream, kernelParams, std::ptr::null_mut(), true, PerThread);
    /// Enqueues a host function.
    fn cuLaunchHostFunc(hStream: CUstream, fn_: CUhostFn, userData: *mut c_void): PFN_cuLaunchHostFunc
        => host_func(hStream, fn_, userData, Legacy);
    /// Per-thread-default-stream form of `cuLaunchHostFunc`.
    fn cuLaunchHostFunc_ptsz(hStream: CUstream, fn_: CUhostFn, userData: *mut c_void): PFN_cuLaunchHostFunc
        => host_func(hStream, fn_, userData, PerThread);
}
