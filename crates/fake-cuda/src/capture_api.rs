//! Stream capture entry points: beginning, ending and inspecting captures, and the calls a
//! capture forbids.
//!
//! Calls CUDA forbids during a capture (synchronizing or querying a capturing stream, querying
//! an event recorded in a capture, legacy-stream work that would depend on a capturing stream,
//! a context synchronization, waiting for an event recorded outside the capture) fail and
//! invalidate the capture; stream-ordered allocations inside a capture are not modelled and do
//! the same.
//!
//! "Potentially unsafe" calls ([`potentially_unsafe`]: event and stream queries and
//! synchronizations, allocating and freeing) follow the modes measured on an H100
//! (`scripts/gpu/transparency/capture_probe.cu`): the thread that began a global or thread-local
//! capture may not make them, nor may any other thread in the default global mode while a
//! global capture runs; a thread switched to relaxed or thread-local mode with
//! `cuThreadExchangeStreamCaptureMode` ignores other threads' captures. A refused call fails
//! with `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` and invalidates the capture.

use std::sync::{Arc, Mutex};

use baton_cuda_sys::{
    CU_STREAM_CAPTURE_MODE_RELAXED, CU_STREAM_CAPTURE_STATUS_NONE, CUgraph, CUgraphEdgeData,
    CUgraphNode, CUresult, CUstream, CUstreamCaptureMode, CUstreamCaptureStatus, cuuint64_t,
};

use crate::capture::{Capture, Slot};
use crate::current;
use crate::entry::exports;
use crate::handle::{Kind, to_ptr};
use crate::ops::Graph;
use crate::process::current_tid;
use crate::result::{CuResult, put, put_opt};
use crate::state::initialized;
use crate::stream::{DefaultStream, StreamKind};
use crate::sync::lock;

/// Refuses a "potentially unsafe" call (see the module documentation) if a capture forbids it
/// to the calling thread, and invalidates that capture.
pub(crate) fn potentially_unsafe() -> CuResult<()> {
    let g = initialized()?;
    let me = current_tid();
    let mine = current::capture_mode()?;
    let mut refused = false;
    lock(&g.captures).retain(|c| {
        let mut c = lock(c);
        if c.ended {
            return false;
        }
        let forbids = if c.thread == me {
            c.mode != CU_STREAM_CAPTURE_MODE_RELAXED
        } else {
            c.mode == GLOBAL && mine == GLOBAL
        };
        if forbids {
            c.invalidated = true;
            refused = true;
        }
        true
    });
    if refused {
        Err(CUresult::STREAM_CAPTURE_UNSUPPORTED)
    } else {
        Ok(())
    }
}

fn begin(raw: CUstream, mode: CUstreamCaptureMode, default: DefaultStream) -> CuResult<()> {
    let g = initialized()?;
    let stream = current::stream(raw, default)?;
    if stream.kind == StreamKind::Legacy {
        return Err(CUresult::STREAM_CAPTURE_UNSUPPORTED);
    }
    if mode.0 > CU_STREAM_CAPTURE_MODE_RELAXED.0 {
        return Err(CUresult::INVALID_VALUE);
    }
    stream.with_slot(|slot| {
        if slot.is_some() {
            return Err(CUresult::ILLEGAL_STATE);
        }
        let graph = Graph::new(g.handle(Kind::Graph));
        g.graphs.insert(graph.handle.raw, Arc::clone(&graph));
        let capture = Arc::new(Mutex::new(Capture::new(
            g.next_number(),
            mode,
            current_tid(),
            graph,
        )));
        lock(&g.captures).push(Arc::clone(&capture));
        *slot = Some(Slot {
            capture,
            origin: true,
        });
        Ok(())
    })
}

unsafe fn end(raw: CUstream, out: *mut CUgraph, default: DefaultStream) -> CuResult<()> {
    let g = initialized()?;
    let stream = current::stream(raw, default)?;
    if out.is_null() {
        return Err(CUresult::INVALID_VALUE);
    }
    let shared = stream.with_slot(|slot| match slot {
        None => Err(CUresult::ILLEGAL_STATE),
        Some(s) if !s.origin => Err(CUresult::STREAM_CAPTURE_UNMATCHED),
        Some(s) => {
            let c = lock(&s.capture);
            if c.mode != CU_STREAM_CAPTURE_MODE_RELAXED && c.thread != current_tid() {
                return Err(CUresult::STREAM_CAPTURE_WRONG_THREAD);
            }
            drop(c);
            slot.take()
                .map(|s| s.capture)
                .ok_or(CUresult::ILLEGAL_STATE)
        }
    })?;
    // The capture's lock is never held while the registry's is taken (the registry locks
    // captures while it is held).
    lock(&shared).ended = true;
    lock(&g.captures).retain(|c| !Arc::ptr_eq(c, &shared));
    let capture = lock(&shared);
    if capture.invalidated {
        g.graphs.remove(capture.graph.handle.raw);
        // SAFETY: `out` is not NULL and the caller guarantees it is writable.
        unsafe { put(out, std::ptr::null_mut())? };
        return Err(CUresult::STREAM_CAPTURE_INVALIDATED);
    }
    // SAFETY: `out` is not NULL and the caller guarantees it is writable.
    unsafe { put(out, to_ptr(capture.graph.handle.raw)) }
}

unsafe fn is_capturing(
    raw: CUstream,
    out: *mut CUstreamCaptureStatus,
    default: DefaultStream,
) -> CuResult<()> {
    let stream = current::stream(raw, default)?;
    let status = stream
        .capture()
        .map_or(CU_STREAM_CAPTURE_STATUS_NONE, |c| lock(&c).status());
    // SAFETY: the caller guarantees `out` is NULL or writable.
    unsafe { put(out, status) }
}

/// The out-parameters of the `cuStreamGetCaptureInfo` family (NULL where a version lacks one).
struct InfoOut {
    status: *mut CUstreamCaptureStatus,
    id: *mut cuuint64_t,
    graph: *mut CUgraph,
    deps: *mut *const CUgraphNode,
    edges: *mut *const CUgraphEdgeData,
    count: *mut usize,
}

unsafe fn capture_info(raw: CUstream, out: InfoOut, default: DefaultStream) -> CuResult<()> {
    let stream = current::stream(raw, default)?;
    if out.status.is_null() {
        return Err(CUresult::INVALID_VALUE);
    }
    {
        let Some(capture) = stream.capture() else {
            // SAFETY: `out.status` is not NULL and the caller guarantees it is writable.
            return unsafe { put(out.status, CU_STREAM_CAPTURE_STATUS_NONE) };
        };
        let capture = lock(&capture);
        let count = usize::from(!capture.last[0].is_null());
        // SAFETY: the caller guarantees each out-pointer is NULL (not wanted) or writable.
        unsafe {
            put(out.status, capture.status())?;
            put_opt(out.id, capture.id);
            put_opt(out.graph, to_ptr(capture.graph.handle.raw));
            put_opt(
                out.deps,
                if count == 0 {
                    std::ptr::null()
                } else {
                    capture.last.as_ptr()
                },
            );
            put_opt(out.edges, std::ptr::null());
            put_opt(out.count, count);
        }
        Ok(())
    }
}

fn info(
    status: *mut CUstreamCaptureStatus,
    id: *mut cuuint64_t,
    graph: *mut CUgraph,
    deps: *mut *const CUgraphNode,
    edges: *mut *const CUgraphEdgeData,
    count: *mut usize,
) -> InfoOut {
    InfoOut {
        status,
        id,
        graph,
        deps,
        edges,
        count,
    }
}

use DefaultStream::{Legacy, PerThread};
use baton_cuda_sys::CU_STREAM_CAPTURE_MODE_GLOBAL as GLOBAL;
use std::ptr::null_mut as null;

exports! {
    /// Begins capturing a stream in global mode (version 1).
    fn cuStreamBeginCapture(hStream: CUstream): PFN_cuStreamBeginCapture => begin(hStream, GLOBAL, Legacy);
    /// Per-thread-default-stream form of `cuStreamBeginCapture`.
    fn cuStreamBeginCapture_ptsz(hStream: CUstream): PFN_cuStreamBeginCapture => begin(hStream, GLOBAL, PerThread);
    /// Begins capturing a stream.
    fn cuStreamBeginCapture_v2(hStream: CUstream, mode: CUstreamCaptureMode): PFN_cuStreamBeginCapture_v2
        => begin(hStream, mode, Legacy);
    /// Per-thread-default-stream form of `cuStreamBeginCapture_v2`.
    fn cuStreamBeginCapture_v2_ptsz(hStream: CUstream, mode: CUstreamCaptureMode): PFN_cuStreamBeginCapture_v2
        => begin(hStream, mode, PerThread);
    /// Ends a capture and returns its graph.
    fn cuStreamEndCapture(hStream: CUstream, phGraph: *mut CUgraph): PFN_cuStreamEndCapture => end(hStream, phGraph, Legacy);
    /// Per-thread-default-stream form of `cuStreamEndCapture`.
    fn cuStreamEndCapture_ptsz(hStream: CUstream, phGraph: *mut CUgraph): PFN_cuStreamEndCapture
        => end(hStream, phGraph, PerThread);
    /// Reports whether a stream is capturing.
    fn cuStreamIsCapturing(hStream: CUstream, status: *mut CUstreamCaptureStatus): PFN_cuStreamIsCapturing
        => is_capturing(hStream, status, Legacy);
    /// Per-thread-default-stream form of `cuStreamIsCapturing`.
    fn cuStreamIsCapturing_ptsz(hStream: CUstream, status: *mut CUstreamCaptureStatus): PFN_cuStreamIsCapturing
        => is_capturing(hStream, status, PerThread);
    /// Capture status and id (version 1).
    fn cuStreamGetCaptureInfo(hStream: CUstream, status: *mut CUstreamCaptureStatus, id: *mut cuuint64_t): PFN_cuStreamGetCaptureInfo
        => capture_info(hStream, info(status, id, null(), null(), null(), null()), Legacy);
    /// Per-thread-default-stream form of `cuStreamGetCaptureInfo`.
    fn cuStreamGetCaptureInfo_ptsz(hStream: CUstream, status: *mut CUstreamCaptureStatus, id: *mut cuuint64_t): PFN_cuStreamGetCaptureInfo
        => capture_info(hStream, info(status, id, null(), null(), null(), null()), PerThread);
    /// Capture status, id, graph and current dependencies (version 2).
    fn cuStreamGetCaptureInfo_v2(
        hStream: CUstream, status: *mut CUstreamCaptureStatus, id: *mut cuuint64_t, graph: *mut CUgraph,
        deps: *mut *const CUgraphNode, count: *mut usize,
    ): PFN_cuStreamGetCaptureInfo_v2 => capture_info(hStream, info(status, id, graph, deps, null(), count), Legacy);
    /// Per-thread-default-stream form of `cuStreamGetCaptureInfo_v2`.
    fn cuStreamGetCaptureInfo_v2_ptsz(
        hStream: CUstream, status: *mut CUstreamCaptureStatus, id: *mut cuuint64_t, graph: *mut CUgraph,
        deps: *mut *const CUgraphNode, count: *mut usize,
    ): PFN_cuStreamGetCaptureInfo_v2 => capture_info(hStream, info(status, id, graph, deps, null(), count), PerThread);
    /// Capture status, id, graph, current dependencies and edge data (version 3; edges NULL).
    fn cuStreamGetCaptureInfo_v3(
        hStream: CUstream, status: *mut CUstreamCaptureStatus, id: *mut cuuint64_t, graph: *mut CUgraph,
        deps: *mut *const CUgraphNode, edges: *mut *const CUgraphEdgeData, count: *mut usize,
    ): PFN_cuStreamGetCaptureInfo_v3 => capture_info(hStream, info(status, id, graph, deps, edges, count), Legacy);
    /// Per-thread-default-stream form of `cuStreamGetCaptureInfo_v3`.
    fn cuStreamGetCaptureInfo_v3_ptsz(
        hStream: CUstream, status: *mut CUstreamCaptureStatus, id: *mut cuuint64_t, graph: *mut CUgraph,
        deps: *mut *const CUgraphNode, edges: *mut *const CUgraphEdgeData, count: *mut usize,
    ): PFN_cuStreamGetCaptureInfo_v3 => capture_info(hStream, info(status, id, graph, deps, edges, count), PerThread);
}
