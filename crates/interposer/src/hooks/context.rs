//! Context-wide synchronization, the creation of contexts (which claims their channel group
//! for Level 3) and their end.

use std::ffi::{c_int, c_uint};

use baton_cuda::sys::{CUcontext, CUctxCreateParams, CUdevice, CUexecAffinityParam, CUresult};

/// Runs a context-creating call and, on success, lets the new context claim the compute
/// channel group its creation allocated on this thread.
fn creating(pctx: *mut CUcontext, create: impl FnOnce() -> CUresult) -> CUresult {
    let ch = crate::channel::channels();
    let mark = ch.capture.mark();
    let r = create();
    if r == CUresult::SUCCESS && !pctx.is_null() {
        // SAFETY: the driver just wrote the new context there.
        ch.claim(unsafe { *pctx }, mark);
    }
    r
}

hook!(cuDevicePrimaryCtxRetain(pctx: *mut CUcontext, dev: CUdevice) |_rt, real| {
    // SAFETY: the application's arguments, unchanged.
    creating(pctx, || unsafe { real(pctx, dev) })
});

hook!(cuCtxCreate_v2(pctx: *mut CUcontext, flags: c_uint, dev: CUdevice) |_rt, real| {
    // SAFETY: as above.
    creating(pctx, || unsafe { real(pctx, flags, dev) })
});

hook!(cuCtxCreate_v3(
    pctx: *mut CUcontext,
    params: *mut CUexecAffinityParam,
    count: c_int,
    flags: c_uint,
    dev: CUdevice,
) |_rt, real| {
    // SAFETY: as above.
    creating(pctx, || unsafe { real(pctx, params, count, flags, dev) })
});

hook!(cuCtxCreate_v4(
    pctx: *mut CUcontext,
    params: *mut CUctxCreateParams,
    flags: c_uint,
    dev: CUdevice,
) |_rt, real| {
    // SAFETY: as above.
    creating(pctx, || unsafe { real(pctx, params, flags, dev) })
});

hook!(
    cuCtxSynchronize() | rt,
    real | {
        // SAFETY: no arguments.
        rt.ctx_synchronize(None, || unsafe { real() })
    }
);

hook!(cuCtxSynchronize_v2(ctx: CUcontext) |rt, real| {
    // SAFETY: the application's context (NULL: the current one).
    rt.ctx_synchronize(Some(ctx).filter(|c| !c.is_null()), || unsafe { real(ctx) })
});

hook!(cuCtxDestroy_v2(ctx: CUcontext) |rt, real| {
    rt.context_closing(Some(ctx), None);
    // SAFETY: the application's context; Baton no longer uses it.
    unsafe { real(ctx) }
});

hook!(cuDevicePrimaryCtxRelease_v2(device: CUdevice) |rt, real| {
    rt.context_closing(None, Some(device));
    // SAFETY: the application's device.
    unsafe { real(device) }
});

hook!(cuDevicePrimaryCtxReset_v2(device: CUdevice) |rt, real| {
    rt.context_closing(None, Some(device));
    // SAFETY: the application's device.
    unsafe { real(device) }
});
