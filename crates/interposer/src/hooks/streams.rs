//! Stream synchronization, queries, destruction, capture and graph launches.

use std::ffi::{c_int, c_uint, c_void};

use baton_cuda::sys::{
    CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, CUDA_GRAPH_INSTANTIATE_PARAMS, CUcontext, CUevent, CUgraph,
    CUgraphEdgeData, CUgraphExec, CUgraphNode, CUgreenCtx, CUlibrary, CUmodule, CUresult, CUstream,
    CUstreamCaptureMode, CUstreamCaptureStatus, cuuint64_t,
};
use baton_cuda::{CudaCommand, Op};

use crate::ops::Count;
use crate::registry::Api;
use crate::report::Release;

macro_rules! per_api {
    ($mac:ident: $plain:ident, $ptsz:ident) => {
        $mac!($plain, Api::Plain);
        $mac!($ptsz, Api::PerThread);
    };
}

macro_rules! synchronize {
    ($name:ident, $api:expr) => {
        hook!($name(stream: CUstream) |rt, real| {
            // SAFETY: the application's stream, mapped.
            rt.stream_synchronize(stream, $api, |h| unsafe { real(h) })
        });
    };
}
per_api!(synchronize: cuStreamSynchronize, cuStreamSynchronize_ptsz);

macro_rules! query {
    ($name:ident, $api:expr) => {
        hook!($name(stream: CUstream) |rt, real| {
            // SAFETY: the application's stream, mapped.
            rt.stream_query(stream, $api, |h| unsafe { real(h) })
        });
    };
}
per_api!(query: cuStreamQuery, cuStreamQuery_ptsz);

hook!(cuStreamCreate(stream: *mut CUstream, flags: c_uint) |rt, real| {
    // SAFETY: the application's out-pointer and flags.
    let r = unsafe { real(stream, flags) };
    // SAFETY: on success the driver wrote the new handle.
    rt.stream_created(r, unsafe { stream.as_ref() }.copied());
    r
});

hook!(cuStreamCreateWithPriority(stream: *mut CUstream, flags: c_uint, priority: c_int) |rt, real| {
    // SAFETY: the application's out-pointer, flags and priority.
    let r = unsafe { real(stream, flags, priority) };
    // SAFETY: on success the driver wrote the new handle.
    rt.stream_created(r, unsafe { stream.as_ref() }.copied());
    r
});

hook!(cuGreenCtxStreamCreate(stream: *mut CUstream, green: CUgreenCtx, flags: c_uint, priority: c_int) |rt, real| {
    // SAFETY: the application's out-pointer, green context, flags and priority.
    let r = unsafe { real(stream, green, flags, priority) };
    // SAFETY: on success the driver wrote the new handle.
    rt.stream_created(r, unsafe { stream.as_ref() }.copied());
    r
});

macro_rules! destroy {
    ($name:ident) => {
        hook!($name(stream: CUstream) |rt, real| {
            // SAFETY: the application's stream, destroyed once Baton no longer uses it.
            rt.stream_destroy(stream, move |h| unsafe { real(h) })
        });
    };
}
destroy!(cuStreamDestroy);
destroy!(cuStreamDestroy_v2);

macro_rules! begin_capture_v1 {
    ($name:ident, $api:expr) => {
        hook!($name(stream: CUstream) |rt, real| {
            // SAFETY: the application's stream, mapped.
            rt.begin_capture(stream, $api, |h| unsafe { real(h) })
        });
    };
}
per_api!(begin_capture_v1: cuStreamBeginCapture, cuStreamBeginCapture_ptsz);

macro_rules! begin_capture {
    ($name:ident, $api:expr) => {
        hook!($name(stream: CUstream, mode: CUstreamCaptureMode) |rt, real| {
            // SAFETY: the application's arguments, stream mapped.
            rt.begin_capture(stream, $api, |h| unsafe { real(h, mode) })
        });
    };
}
per_api!(begin_capture: cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz);

macro_rules! begin_capture_to_graph {
    ($name:ident, $api:expr) => {
        hook!($name(
            stream: CUstream,
            graph: CUgraph,
            deps: *const CUgraphNode,
            data: *const CUgraphEdgeData,
            count: usize,
            mode: CUstreamCaptureMode,
        ) |rt, real| {
            // SAFETY: the application's arguments, stream mapped.
            rt.begin_capture(stream, $api, |h| unsafe { real(h, graph, deps, data, count, mode) })
        });
    };
}
per_api!(begin_capture_to_graph: cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz);

macro_rules! end_capture {
    ($name:ident, $api:expr) => {
        hook!($name(stream: CUstream, graph: *mut CUgraph) |rt, real| {
            // SAFETY: the application's arguments, stream mapped.
            rt.end_capture(stream, $api, |h| unsafe { real(h, graph) })
        });
    };
}
per_api!(end_capture: cuStreamEndCapture, cuStreamEndCapture_ptsz);

// What a stream's capture looks like, asked or changed by the application: for the calling
// thread's per-thread default stream, Baton's stand-in is what captures.
macro_rules! capture_state {
    ($name:ident($($a:ident: $t:ty),*), $api:expr) => {
        hook!($name(stream: CUstream, $($a: $t),*) |rt, real| {
            let h = rt.per_thread_handle(stream, $api);
            // SAFETY: the application's arguments with the mapped stream.
            unsafe { real(h, $($a),*) }
        });
    };
}
capture_state!(cuStreamIsCapturing(status: *mut CUstreamCaptureStatus), Api::Plain);
capture_state!(cuStreamIsCapturing_ptsz(status: *mut CUstreamCaptureStatus), Api::PerThread);
capture_state!(cuStreamGetCaptureInfo(status: *mut CUstreamCaptureStatus, id: *mut cuuint64_t), Api::Plain);
capture_state!(cuStreamGetCaptureInfo_ptsz(status: *mut CUstreamCaptureStatus, id: *mut cuuint64_t), Api::PerThread);
capture_state!(cuStreamGetCaptureInfo_v2(status: *mut CUstreamCaptureStatus, id: *mut cuuint64_t, graph: *mut CUgraph, deps: *mut *const CUgraphNode, n: *mut usize), Api::Plain);
capture_state!(cuStreamGetCaptureInfo_v2_ptsz(status: *mut CUstreamCaptureStatus, id: *mut cuuint64_t, graph: *mut CUgraph, deps: *mut *const CUgraphNode, n: *mut usize), Api::PerThread);
capture_state!(cuStreamGetCaptureInfo_v3(status: *mut CUstreamCaptureStatus, id: *mut cuuint64_t, graph: *mut CUgraph, deps: *mut *const CUgraphNode, edges: *mut *const CUgraphEdgeData, n: *mut usize), Api::Plain);
capture_state!(cuStreamGetCaptureInfo_v3_ptsz(status: *mut CUstreamCaptureStatus, id: *mut cuuint64_t, graph: *mut CUgraph, deps: *mut *const CUgraphNode, edges: *mut *const CUgraphEdgeData, n: *mut usize), Api::PerThread);
capture_state!(cuStreamUpdateCaptureDependencies(deps: *mut CUgraphNode, n: usize, flags: c_uint), Api::Plain);
capture_state!(cuStreamUpdateCaptureDependencies_ptsz(deps: *mut CUgraphNode, n: usize, flags: c_uint), Api::PerThread);
capture_state!(cuStreamUpdateCaptureDependencies_v2(deps: *mut CUgraphNode, edges: *const CUgraphEdgeData, n: usize, flags: c_uint), Api::Plain);
capture_state!(cuStreamUpdateCaptureDependencies_v2_ptsz(deps: *mut CUgraphNode, edges: *const CUgraphEdgeData, n: usize, flags: c_uint), Api::PerThread);

// A stream's attributes (an L2 access window, a synchronization policy…): for the calling
// thread's per-thread default stream, they belong on Baton's stand-in, which runs its work.
capture_state!(cuStreamGetAttribute(attr: c_uint, value: *mut c_void), Api::Plain);
capture_state!(cuStreamGetAttribute_ptsz(attr: c_uint, value: *mut c_void), Api::PerThread);
capture_state!(cuStreamSetAttribute(attr: c_uint, value: *const c_void), Api::Plain);
capture_state!(cuStreamSetAttribute_ptsz(attr: c_uint, value: *const c_void), Api::PerThread);

macro_rules! copy_attributes {
    ($name:ident, $api:expr) => {
        hook!($name(dst: CUstream, src: CUstream) |rt, real| {
            let (d, s) = (rt.per_thread_handle(dst, $api), rt.per_thread_handle(src, $api));
            // SAFETY: the application's streams, mapped.
            unsafe { real(d, s) }
        });
    };
}
per_api!(copy_attributes: cuStreamCopyAttributes, cuStreamCopyAttributes_ptsz);

macro_rules! instantiate_with_params {
    ($name:ident, $api:expr) => {
        hook!($name(exec: *mut CUgraphExec, graph: CUgraph, params: *mut CUDA_GRAPH_INSTANTIATE_PARAMS) |rt, real| {
            // SAFETY: `params` is NULL or the application's parameters, valid during the call.
            let upload = unsafe { params.as_ref() }
                .filter(|p| p.flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD != 0)
                .map(|p| p.hUploadStream);
            let Some(stream) = upload else {
                // SAFETY: the application's arguments, unchanged.
                return unsafe { real(exec, graph, params) };
            };
            // With an upload, the instantiation is an operation of that stream: in place, in
            // order, on the stream as Baton maps it (the application's structure is restored).
            rt.in_place(stream, $api, |h| {
                // SAFETY: `params` is the application's writable structure (checked above).
                unsafe {
                    (*params).hUploadStream = h;
                    let r = real(exec, graph, params);
                    (*params).hUploadStream = stream;
                    r
                }
            })
        });
    };
}
per_api!(instantiate_with_params: cuGraphInstantiateWithParams, cuGraphInstantiateWithParams_ptsz);

macro_rules! graph_launch {
    ($name:ident, $api:expr) => {
        hook!($name(exec: CUgraphExec, stream: CUstream) |rt, real| {
            let op = Op::Command(&CudaCommand::GraphLaunch(exec));
            rt.scheduled(stream, $api, Count::Graph, op)
                // SAFETY: the application's arguments, unchanged, to the function it called.
                .unwrap_or_else(|| unsafe { real(exec, stream) })
        });
    };
}
per_api!(graph_launch: cuGraphLaunch, cuGraphLaunch_ptsz);

macro_rules! graph_upload {
    ($name:ident, $api:expr) => {
        hook!($name(exec: CUgraphExec, stream: CUstream) |rt, real| {
            let op = Op::Command(&CudaCommand::GraphUpload(exec));
            rt.scheduled(stream, $api, Count::Other, op)
                // SAFETY: the application's arguments, unchanged, to the function it called.
                .unwrap_or_else(|| unsafe { real(exec, stream) })
        });
    };
}
per_api!(graph_upload: cuGraphUpload, cuGraphUpload_ptsz);

// Calls that change what earlier launches refer to by handle — an executable graph's
// parameters, the graph itself, a module's code. CUDA applies them only to launches made after
// the call, so every command submitted before must reach the driver first (while nothing waits
// in a buffer, which is the usual case, this costs a look at each queue).
macro_rules! after_submitted {
    ($name:ident($($a:ident: $t:ty),*)) => {
        after_submitted!($name($($a: $t),*), Release::Graph);
    };
    ($name:ident($($a:ident: $t:ty),*), $cause:expr) => {
        hook!($name($($a: $t),*) |rt, real| {
            // SAFETY: the application's arguments, unchanged.
            rt.after_submitted($cause, || unsafe { real($($a),*) })
        });
    };
}
after_submitted!(cuGraphExecKernelNodeSetParams(exec: CUgraphExec, node: CUgraphNode, params: *const c_void));
after_submitted!(cuGraphExecKernelNodeSetParams_v2(exec: CUgraphExec, node: CUgraphNode, params: *const c_void));
after_submitted!(cuGraphExecMemcpyNodeSetParams(exec: CUgraphExec, node: CUgraphNode, params: *const c_void, ctx: CUcontext));
after_submitted!(cuGraphExecMemsetNodeSetParams(exec: CUgraphExec, node: CUgraphNode, params: *const c_void, ctx: CUcontext));
after_submitted!(cuGraphExecHostNodeSetParams(exec: CUgraphExec, node: CUgraphNode, params: *const c_void));
after_submitted!(cuGraphExecChildGraphNodeSetParams(exec: CUgraphExec, node: CUgraphNode, child: CUgraph));
after_submitted!(cuGraphExecEventRecordNodeSetEvent(exec: CUgraphExec, node: CUgraphNode, event: CUevent));
after_submitted!(cuGraphExecEventWaitNodeSetEvent(exec: CUgraphExec, node: CUgraphNode, event: CUevent));
after_submitted!(cuGraphExecNodeSetParams(exec: CUgraphExec, node: CUgraphNode, params: *mut c_void));
after_submitted!(cuGraphNodeSetEnabled(exec: CUgraphExec, node: CUgraphNode, enabled: c_uint));
after_submitted!(cuGraphExecUpdate(exec: CUgraphExec, graph: CUgraph, error_node: *mut CUgraphNode, result: *mut c_void));
after_submitted!(cuGraphExecUpdate_v2(exec: CUgraphExec, graph: CUgraph, info: *mut c_void));
after_submitted!(cuGraphExecDestroy(exec: CUgraphExec));
// Unloading code: what was launched from it reaches the driver first, and Baton forgets what it
// knows by function handle (parameter layouts, first launches), since the driver hands freed
// handles to functions loaded later, with other parameters.
macro_rules! unloading {
    ($name:ident($($a:ident: $t:ty),*)) => {
        hook!($name($($a: $t),*) |rt, real| {
            // SAFETY: the application's arguments, unchanged.
            let r = rt.after_submitted(Release::Unload, || unsafe { real($($a),*) });
            rt.forget_functions();
            r
        });
    };
}
unloading!(cuModuleUnload(module: CUmodule));
unloading!(cuLibraryUnload(library: CUlibrary));
// A launch across devices, each part naming its own stream (deprecated): everything before it
// reaches the driver first.
after_submitted!(cuLaunchCooperativeKernelMultiDevice(params: *mut c_void, devices: c_uint, flags: c_uint), Release::Context);
