//! Kernel launches and host functions: each hook builds the launch as a value ([`Op`]) from
//! the application's arguments and hands it to [`Runtime::scheduled`] (`ops/mod.rs`), which
//! submits it to the stream's queue; `baton_cuda`'s `launch.rs` makes the driver call. Where
//! Baton does not schedule the stream, the hook calls the driver function the application
//! called.

use std::ffi::{c_int, c_uint, c_void};

use baton_cuda::sys::{
    CUdevice, CUfunction, CUhostFn, CUkernel, CUlaunchConfig, CUresult, CUstream, CUstreamCallback,
};
use baton_cuda::{CudaCommand, HostPtr, KernelCall, KernelExCall, Op};

use crate::ops::Count;
use crate::registry::Api;
use crate::runtime::Runtime;

/// A kernel launch as a scheduled operation, after the Level-2 bookkeeping of its function.
fn scheduled_kernel(
    rt: &Runtime,
    stream: CUstream,
    api: Api,
    (f, cooperative): (CUfunction, bool),
    op: Op<'_>,
) -> Option<CUresult> {
    rt.before_kernel(f);
    rt.scheduled(stream, api, Count::Kernel { cooperative }, op)
}

/// A launch Baton does not schedule, made by the hook itself: timed when profiling, as the
/// scheduled ones are.
fn unscheduled(rt: &Runtime, call: impl FnOnce() -> CUresult) -> CUresult {
    if rt.hot.profile {
        return crate::profile::in_driver(call);
    }
    call()
}

macro_rules! launch_kernel {
    ($name:ident, $api:expr) => {
        hook!($name(
            f: CUfunction, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint,
            shared: c_uint, stream: CUstream, params: *mut *mut c_void, extra: *mut *mut c_void,
        ) |rt, real| {
            let k = KernelCall {
                f, grid: [gx, gy, gz], block: [bx, by, bz], shared, params, extra,
                cooperative: false, layouts: rt.functions.layouts(),
            };
            scheduled_kernel(rt, stream, $api, (f, false), Op::Kernel(&k)).unwrap_or_else(|| {
                // SAFETY: the application's arguments, unchanged, to the function it called.
                unscheduled(rt, || unsafe { real(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra) })
            })
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
            let k = KernelCall {
                f, grid: [gx, gy, gz], block: [bx, by, bz], shared, params,
                extra: std::ptr::null_mut(), cooperative: true, layouts: rt.functions.layouts(),
            };
            scheduled_kernel(rt, stream, $api, (f, true), Op::Kernel(&k)).unwrap_or_else(|| {
                // SAFETY: the application's arguments, unchanged, to the function it called.
                unscheduled(rt, || unsafe { real(f, gx, gy, gz, bx, by, bz, shared, stream, params) })
            })
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
            // SAFETY: null, or the application's valid configuration during its call.
            let Some(cfg) = (unsafe { config.as_ref() }) else {
                // SAFETY: the driver reports the invalid argument itself.
                return unsafe { real(config, f, params, extra) };
            };
            let attrs: &[baton_cuda::sys::CUlaunchAttribute] = if cfg.attrs.is_null() {
                &[]
            } else {
                // SAFETY: `attrs` holds `numAttrs` attributes during the call.
                unsafe { std::slice::from_raw_parts(cfg.attrs, cfg.numAttrs as usize) }
            };
            let cooperative = baton_cuda::cooperative_attrs(attrs);
            let events = baton_cuda::attribute_events(attrs);
            let k = KernelExCall { config: cfg, f, params, extra, cooperative, layouts: rt.functions.layouts() };
            let op = Op::KernelEx(&k);
            if !events.is_empty() {
                // The launch records events: it is their last record (see `recording`).
                rt.before_kernel(f);
                return rt.recording(&events, cfg.hStream, $api, Count::Kernel { cooperative }, op)
                    // SAFETY: the application's arguments, unchanged, to the function it called.
                    .unwrap_or_else(|| unsafe { real(config, f, params, extra) });
            }
            scheduled_kernel(rt, cfg.hStream, $api, (f, cooperative), op)
                // SAFETY: as above.
                .unwrap_or_else(|| unscheduled(rt, || unsafe { real(config, f, params, extra) }))
        });
    };
}

launch_ex!(cuLaunchKernelEx, Api::Plain);
launch_ex!(cuLaunchKernelEx_ptsz, Api::PerThread);

macro_rules! host_func {
    ($name:ident, $api:expr) => {
        hook!($name(stream: CUstream, f: CUhostFn, data: *mut c_void) |rt, real| {
            let op = Op::Command(&CudaCommand::HostFunc { f, data: HostPtr(data) });
            rt.scheduled(stream, $api, Count::Other, op)
                // SAFETY: the application's arguments, unchanged, to the function it called.
                .unwrap_or_else(|| unsafe { real(stream, f, data) })
        });
    };
}

host_func!(cuLaunchHostFunc, Api::Plain);
host_func!(cuLaunchHostFunc_ptsz, Api::PerThread);

macro_rules! stream_callback {
    ($name:ident, $api:expr) => {
        hook!($name(stream: CUstream, f: CUstreamCallback, data: *mut c_void, flags: c_uint) |rt, real| {
            let op = Op::Command(&CudaCommand::StreamCallback { f, data: HostPtr(data), flags });
            rt.scheduled(stream, $api, Count::Other, op)
                // SAFETY: the application's arguments, unchanged, to the function it called.
                .unwrap_or_else(|| unsafe { real(stream, f, data, flags) })
        });
    };
}

stream_callback!(cuStreamAddCallback, Api::Plain);
stream_callback!(cuStreamAddCallback_ptsz, Api::PerThread);

// Function attributes apply to launches made after them: see `before_attribute_change`. The
// driver's call is made under the lock a held launch's raise of its limit takes too.
hook!(cuFuncSetAttribute(f: CUfunction, attrib: c_uint, value: c_int) |rt, real| {
    let current = rt.function_attribute(f, attrib, None);
    rt.before_attribute_change(attrib, current, value, false);
    let _lock = baton_cuda::attribute_lock();
    // SAFETY: the application's arguments, unchanged.
    unsafe { real(f, attrib, value) }
});

hook!(cuKernelSetAttribute(attrib: c_uint, value: c_int, kernel: CUkernel, dev: CUdevice) |rt, real| {
    let current = rt.driver.cuKernelGetAttribute.and_then(|get| {
        let mut v = 0;
        // SAFETY: the application's kernel and device; `v` is a valid out-pointer.
        unsafe { get(&mut v, attrib, kernel, dev) }.is_success().then_some(v)
    });
    rt.before_attribute_change(attrib, current, value, true);
    let _lock = baton_cuda::attribute_lock();
    // SAFETY: the application's arguments, unchanged.
    unsafe { real(attrib, value, kernel, dev) }
});
