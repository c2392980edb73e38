//! Kernel launches and host functions.

use std::ffi::{c_int, c_uint, c_void};

use baton_cuda::sys::{
    CUdevice, CUfunction, CUhostFn, CUkernel, CUlaunchConfig, CUresult, CUstream, CUstreamCallback,
};
use baton_cuda::{CudaCommand, HostPtr, KernelArgs};

use crate::ops::Count;
use crate::registry::Api;
use crate::runtime::Runtime;

/// A copy of a launch's arguments, or `None` if they cannot be copied faithfully (then the
/// launch runs in place). Only called when the launch has to wait, so the fast path copies
/// nothing.
///
/// # Safety
/// `params`/`extra` as the application passed them to a launch, still valid.
unsafe fn copy_args(
    rt: &Runtime,
    f: CUfunction,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Option<KernelArgs> {
    let layout = if params.is_null() {
        None
    } else {
        rt.params.layout(rt.driver, f)
    };
    // SAFETY: the caller's contract.
    unsafe { KernelArgs::copy(layout, params, extra) }
}

/// A `cuLaunchKernel`/`cuLaunchCooperativeKernel` call as a scheduled operation.
///
/// # Safety
/// The arguments as the application passed them to the driver.
#[allow(clippy::too_many_arguments)]
unsafe fn kernel(
    rt: &Runtime,
    api: Api,
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    stream: CUstream,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    cooperative: bool,
    direct: impl FnOnce(CUstream) -> CUresult,
) -> CUresult {
    let defer = || {
        // SAFETY: the caller's contract: the arguments are still valid during the call.
        let args = unsafe { copy_args(rt, f, params, extra) }?;
        Some(CudaCommand::Kernel {
            f,
            grid,
            block,
            shared,
            args,
            cooperative,
        })
    };
    scheduled_kernel(rt, f, stream, api, cooperative, direct, defer)
}

/// A kernel launch as a scheduled operation, after the Level-2 bookkeeping of its function.
/// Profiled, the real call is timed: a second copy of the path, so the first pays nothing.
fn scheduled_kernel(
    rt: &Runtime,
    f: CUfunction,
    stream: CUstream,
    api: Api,
    cooperative: bool,
    direct: impl FnOnce(CUstream) -> CUresult,
    defer: impl FnOnce() -> Option<CudaCommand>,
) -> CUresult {
    rt.before_kernel(f);
    let count = Count::Kernel { cooperative };
    if rt.hot.profile {
        let timed = |h| crate::profile::in_driver(|| direct(h));
        return rt.scheduled(stream, api, count, timed, defer);
    }
    rt.scheduled(stream, api, count, direct, defer)
}

macro_rules! launch_kernel {
    ($name:ident, $api:expr) => {
        hook!($name(
            f: CUfunction, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint,
            shared: c_uint, stream: CUstream, params: *mut *mut c_void, extra: *mut *mut c_void,
        ) |rt, real| {
            // SAFETY: the application's arguments; `direct` calls the real function with them
            // (and the stream handle Baton maps the application's to).
            unsafe {
                kernel(rt, $api, f, [gx, gy, gz], [bx, by, bz], shared, stream, params, extra, false,
                    |h| real(f, gx, gy, gz, bx, by, bz, shared, h, params, extra))
            }
        });
    };
}

launch_kernel!(cuLaunchKernel, Api::Plain);
launch_kernel!(cuLaunchKernel_ptsz, Api::PerThread);

macro_rules! launch_cooperative {
    ($name:ident, $api:expr) => {
        hook!($name(
            f: CUfunction, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint,
            shared: c_uint, stream: CUstream, params: *mut *mut c_void,
        ) |rt, real| {
            // SAFETY: as for cuLaunchKernel.
            unsafe {
                kernel(rt, $api, f, [gx, gy, gz], [bx, by, bz], shared, stream, params,
                    std::ptr::null_mut(), true,
                    |h| real(f, gx, gy, gz, bx, by, bz, shared, h, params))
            }
        });
    };
}

launch_cooperative!(cuLaunchCooperativeKernel, Api::Plain);
launch_cooperative!(cuLaunchCooperativeKernel_ptsz, Api::PerThread);

macro_rules! launch_ex {
    ($name:ident, $api:expr) => {
        hook!($name(
            config: *const CUlaunchConfig, f: CUfunction, params: *mut *mut c_void,
            extra: *mut *mut c_void,
        ) |rt, real| {
            if config.is_null() {
                // SAFETY: the driver reports the invalid argument itself.
                return unsafe { real(config, f, params, extra) };
            }
            // SAFETY: `config` is the application's valid configuration.
            let cfg: CUlaunchConfig = unsafe { *config };
            let defer = || {
                // SAFETY: the application's arguments, valid during the call.
                let args = unsafe { copy_args(rt, f, params, extra) }?;
                let attrs = if cfg.attrs.is_null() || cfg.numAttrs == 0 {
                    Vec::new()
                } else {
                    // SAFETY: `attrs` holds `numAttrs` attributes during the call.
                    unsafe { std::slice::from_raw_parts(cfg.attrs, cfg.numAttrs as usize) }.to_vec()
                };
                Some(CudaCommand::KernelEx { config: cfg, attrs, f, args })
            };
            let direct = |h: CUstream| {
                let mut c = cfg;
                c.hStream = h;
                // SAFETY: the application's configuration with the mapped stream.
                unsafe { real(&c, f, params, extra) }
            };
            let attrs: &[baton_cuda::sys::CUlaunchAttribute] = if cfg.attrs.is_null() {
                &[]
            } else {
                // SAFETY: `attrs` holds `numAttrs` attributes during the call.
                unsafe { std::slice::from_raw_parts(cfg.attrs, cfg.numAttrs as usize) }
            };
            let cooperative = baton_cuda::cooperative_attrs(attrs);
            let events = baton_cuda::attribute_events(attrs);
            if !events.is_empty() {
                // The launch records events: it is their last record (see `recording`).
                rt.before_kernel(f);
                let count = Count::Kernel { cooperative };
                return rt.recording(&events, cfg.hStream, $api, count, direct, defer);
            }
            scheduled_kernel(rt, f, cfg.hStream, $api, cooperative, direct, defer)
        });
    };
}

launch_ex!(cuLaunchKernelEx, Api::Plain);
launch_ex!(cuLaunchKernelEx_ptsz, Api::PerThread);

macro_rules! host_func {
    ($name:ident, $api:expr) => {
        hook!($name(stream: CUstream, f: CUhostFn, data: *mut c_void) |rt, real| {
            let defer = move || Some(CudaCommand::HostFunc { f, data: HostPtr(data) });
            // SAFETY: the application's arguments with the mapped stream.
            rt.scheduled(stream, $api, Count::Other, |h| unsafe { real(h, f, data) }, defer)
        });
    };
}

host_func!(cuLaunchHostFunc, Api::Plain);
host_func!(cuLaunchHostFunc_ptsz, Api::PerThread);

macro_rules! stream_callback {
    ($name:ident, $api:expr) => {
        hook!($name(stream: CUstream, f: CUstreamCallback, data: *mut c_void, flags: c_uint) |rt, real| {
            let defer = move || Some(CudaCommand::StreamCallback { f, data: HostPtr(data), flags });
            // SAFETY: the application's arguments with the mapped stream.
            rt.scheduled(stream, $api, Count::Other, |h| unsafe { real(h, f, data, flags) }, defer)
        });
    };
}

stream_callback!(cuStreamAddCallback, Api::Plain);
stream_callback!(cuStreamAddCallback_ptsz, Api::PerThread);

// Function attributes apply to launches made after them: see `before_attribute_change`.
hook!(cuFuncSetAttribute(f: CUfunction, attrib: c_uint, value: c_int) |rt, real| {
    let current = rt.driver.cuFuncGetAttribute.and_then(|get| {
        let mut v = 0;
        // SAFETY: the application's function; `v` is a valid out-pointer.
        unsafe { get(&mut v, attrib, f) }.is_success().then_some(v)
    });
    rt.before_attribute_change(current, value);
    // SAFETY: the application's arguments, unchanged.
    unsafe { real(f, attrib, value) }
});

hook!(cuKernelSetAttribute(attrib: c_uint, value: c_int, kernel: CUkernel, dev: CUdevice) |rt, real| {
    let current = rt.driver.cuKernelGetAttribute.and_then(|get| {
        let mut v = 0;
        // SAFETY: the application's kernel and device; `v` is a valid out-pointer.
        unsafe { get(&mut v, attrib, kernel, dev) }.is_success().then_some(v)
    });
    rt.before_attribute_change(current, value);
    // SAFETY: the application's arguments, unchanged.
    unsafe { real(attrib, value, kernel, dev) }
});
