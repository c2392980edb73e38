//! Context-wide synchronization and the end of contexts.

use baton_cuda::sys::{CUcontext, CUdevice, CUresult};

hook!(
    cuCtxSynchronize() | rt,
    real | {
        // SAFETY: no arguments.
        rt.ctx_synchronize(|| unsafe { real() })
    }
);

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
