//! Events: records and waits are scheduled, with the cross-stream order CUDA defines kept;
//! queries and waits on the host see buffered records as not yet done.

use std::ffi::{c_float, c_uint};

use baton_cuda::sys::{CUcontext, CUevent, CUgreenCtx, CUresult, CUstream};

use crate::registry::Api;
use crate::report::Release;

macro_rules! record {
    ($name:ident, $api:expr) => {
        hook!($name(event: CUevent, stream: CUstream) |rt, real| {
            rt.event_record(event, stream, $api, None)
                // SAFETY: the application's arguments, unchanged, to the function it called.
                .unwrap_or_else(|| unsafe { real(event, stream) })
        });
    };
}
record!(cuEventRecord, Api::Plain);
record!(cuEventRecord_ptsz, Api::PerThread);

macro_rules! record_flags {
    ($name:ident, $api:expr) => {
        hook!($name(event: CUevent, stream: CUstream, flags: c_uint) |rt, real| {
            rt.event_record(event, stream, $api, Some(flags))
                // SAFETY: the application's arguments, unchanged, to the function it called.
                .unwrap_or_else(|| unsafe { real(event, stream, flags) })
        });
    };
}
record_flags!(cuEventRecordWithFlags, Api::Plain);
record_flags!(cuEventRecordWithFlags_ptsz, Api::PerThread);

macro_rules! wait_event {
    ($name:ident, $api:expr) => {
        hook!($name(stream: CUstream, event: CUevent, flags: c_uint) |rt, real| {
            rt.stream_wait_event(stream, $api, event, flags)
                // SAFETY: the application's arguments, unchanged, to the function it called.
                .unwrap_or_else(|| unsafe { real(stream, event, flags) })
        });
    };
}
wait_event!(cuStreamWaitEvent, Api::Plain);
wait_event!(cuStreamWaitEvent_ptsz, Api::PerThread);

hook!(cuEventQuery(event: CUevent) |rt, real| {
    // SAFETY: the application's argument.
    rt.event_query(event, || unsafe { real(event) })
});

hook!(cuEventSynchronize(event: CUevent) |rt, real| {
    // SAFETY: the application's argument.
    rt.event_synchronize(event, || unsafe { real(event) })
});

macro_rules! destroy {
    ($name:ident) => {
        hook!($name(event: CUevent) |rt, real| {
            let handle = event as usize;
            // SAFETY: the application's event, destroyed once no buffered command names it.
            rt.event_destroy(event, move || unsafe { real(handle as CUevent) })
        });
    };
}
destroy!(cuEventDestroy);
destroy!(cuEventDestroy_v2);

hook!(cuEventElapsedTime(ms: *mut c_float, start: CUevent, end: CUevent) |rt, real| {
    // SAFETY: the application's arguments.
    rt.event_elapsed(start, end, || unsafe { real(ms, start, end) })
});

hook!(cuEventElapsedTime_v2(ms: *mut c_float, start: CUevent, end: CUevent) |rt, real| {
    // SAFETY: the application's arguments.
    rt.event_elapsed(start, end, || unsafe { real(ms, start, end) })
});

// Context-wide records and waits act on every stream of the context at once: everything
// submitted reaches the driver first, so a record covers it all and a wait holds back exactly
// what the application submits after it.
hook!(cuCtxRecordEvent(ctx: CUcontext, event: CUevent) |rt, real| {
    // SAFETY: the application's arguments.
    rt.context_event_record(event, || unsafe { real(ctx, event) })
});

hook!(cuGreenCtxRecordEvent(ctx: CUgreenCtx, event: CUevent) |rt, real| {
    // SAFETY: the application's arguments.
    rt.context_event_record(event, || unsafe { real(ctx, event) })
});

hook!(cuCtxWaitEvent(ctx: CUcontext, event: CUevent) |rt, real| {
    // SAFETY: the application's arguments.
    rt.after_submitted(Release::Context, || unsafe { real(ctx, event) })
});

hook!(cuGreenCtxWaitEvent(ctx: CUgreenCtx, event: CUevent) |rt, real| {
    // SAFETY: the application's arguments.
    rt.after_submitted(Release::Context, || unsafe { real(ctx, event) })
});
