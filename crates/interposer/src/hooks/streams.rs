//! Stream synchronization, queries, destruction, capture and graph launches.

use std::ffi::{c_int, c_uint, c_void};

use baton_cuda::CudaCommand;
use baton_cuda::sys::{
    CUcontext, CUevent, CUgraph, CUgraphEdgeData, CUgraphExec, CUgraphNode, CUlibrary, CUmodule,
    CUresult, CUstream, CUstreamCaptureMode,
};

use crate::ops::Count;
use crate::registry::Api;

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

macro_rules! graph_launch {
    ($name:ident, $api:expr) => {
        hook!($name(exec: CUgraphExec, stream: CUstream) |rt, real| {
            let defer = move || Some(CudaCommand::GraphLaunch(exec));
            // SAFETY: the application's arguments, stream mapped.
            rt.scheduled(stream, $api, Count::Graph, |h| unsafe { real(exec, h) }, defer)
        });
    };
}
per_api!(graph_launch: cuGraphLaunch, cuGraphLaunch_ptsz);

macro_rules! graph_upload {
    ($name:ident, $api:expr) => {
        hook!($name(exec: CUgraphExec, stream: CUstream) |rt, real| {
            let defer = move || Some(CudaCommand::GraphUpload(exec));
            // SAFETY: the application's arguments, stream mapped.
            rt.scheduled(stream, $api, Count::Other, |h| unsafe { real(exec, h) }, defer)
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
        hook!($name($($a: $t),*) |rt, real| {
            // SAFETY: the application's arguments, unchanged.
            rt.after_submitted(|| unsafe { real($($a),*) })
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
after_submitted!(cuModuleUnload(module: CUmodule));
after_submitted!(cuLibraryUnload(library: CUlibrary));
