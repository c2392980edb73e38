//! Stream capture: while a stream captures, its operations are appended to a graph instead of
//! executed; `cuStreamEndCapture` hands the graph over.
//!
//! The model is one stream per capture: captured graphs are linear (each node depends on the
//! previous one). Calls CUDA forbids during a capture (synchronizing or querying the capturing
//! stream, legacy-stream work that would depend on it, a context synchronization, waiting for
//! an event recorded outside the capture) fail and invalidate the capture; event records and
//! stream-ordered allocations inside a capture are not modelled and do the same.

use std::sync::Arc;

use baton_cuda_sys::{
    CU_STREAM_CAPTURE_MODE_RELAXED, CU_STREAM_CAPTURE_STATUS_ACTIVE,
    CU_STREAM_CAPTURE_STATUS_INVALIDATED, CU_STREAM_CAPTURE_STATUS_NONE, CUgraph, CUgraphEdgeData,
    CUgraphNode, CUresult, CUstream, CUstreamCaptureMode, CUstreamCaptureStatus, cuuint64_t,
};

use crate::entry::{CuResult, exports, put, put_opt};
use crate::graph::Graph;
use crate::ops::Op;
use crate::state::{Kind, current_tid, initialized, to_ptr};
use crate::stream::{self, DefaultStream, StreamKind};

/// The capture in progress on one stream.
pub(crate) struct Capture {
    id: u64,
    mode: CUstreamCaptureMode,
    thread: u32,
    graph: Arc<Graph>,
    pub invalidated: bool,
    /// The dependency set `cuStreamGetCaptureInfo` reports: the last node, if any. Boxed so
    /// the pointer handed out stays valid until the next captured operation.
    last: Box<[CUgraphNode; 1]>,
}

// SAFETY: `last` holds an opaque node handle value that is never dereferenced; everything else
// in Capture is Send.
unsafe impl Send for Capture {}

impl Capture {
    /// Appends `op` to the graph.
    pub fn record(&mut self, op: Op) -> CuResult<()> {
        if self.invalidated {
            return Err(CUresult::STREAM_CAPTURE_INVALIDATED);
        }
        let index = self.graph.push(op);
        self.last[0] = to_ptr(
            u64::from(Kind::Node as u8) << 56 | self.graph.handle.short << 24 | index as u64,
        );
        Ok(())
    }

    /// Whether the capture forbids potentially unsafe calls such as `cuCtxSynchronize`.
    pub fn is_strict(&self) -> bool {
        self.mode != CU_STREAM_CAPTURE_MODE_RELAXED
    }

    fn status(&self) -> CUstreamCaptureStatus {
        if self.invalidated {
            CU_STREAM_CAPTURE_STATUS_INVALIDATED
        } else {
            CU_STREAM_CAPTURE_STATUS_ACTIVE
        }
    }
}

fn begin(raw: CUstream, mode: CUstreamCaptureMode, default: DefaultStream) -> CuResult<()> {
    let g = initialized()?;
    let stream = stream::resolve(raw, default)?;
    if stream.kind == StreamKind::Legacy {
        return Err(CUresult::STREAM_CAPTURE_UNSUPPORTED);
    }
    if mode.0 > CU_STREAM_CAPTURE_MODE_RELAXED.0 {
        return Err(CUresult::INVALID_VALUE);
    }
    stream.with_capture(|slot| {
        if slot.is_some() {
            return Err(CUresult::ILLEGAL_STATE);
        }
        let graph = Graph::new(g);
        g.graphs.insert(graph.handle.raw, Arc::clone(&graph));
        let last = Box::new([std::ptr::null_mut()]);
        *slot = Some(Capture {
            id: g.next_number(),
            mode,
            thread: current_tid(),
            graph,
            invalidated: false,
            last,
        });
        Ok(())
    })
}

unsafe fn end(raw: CUstream, out: *mut CUgraph, default: DefaultStream) -> CuResult<()> {
    let g = initialized()?;
    let stream = stream::resolve(raw, default)?;
    if out.is_null() {
        return Err(CUresult::INVALID_VALUE);
    }
    let capture = stream.with_capture(|slot| match slot {
        None => Err(CUresult::ILLEGAL_STATE),
        Some(capture)
            if capture.mode != CU_STREAM_CAPTURE_MODE_RELAXED
                && capture.thread != current_tid() =>
        {
            Err(CUresult::STREAM_CAPTURE_WRONG_THREAD)
        }
        Some(_) => slot.take().ok_or(CUresult::ILLEGAL_STATE),
    })?;
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
    let stream = stream::resolve(raw, default)?;
    let status = stream.with_capture(|slot| {
        slot.as_ref()
            .map_or(CU_STREAM_CAPTURE_STATUS_NONE, Capture::status)
    });
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
    let stream = stream::resolve(raw, default)?;
    if out.status.is_null() {
        return Err(CUresult::INVALID_VALUE);
    }
    stream.with_capture(|slot| {
        let Some(capture) = slot else {
            // SAFETY: `out.status` is not NULL and the caller guarantees it is writable.
            return unsafe { put(out.status, CU_STREAM_CAPTURE_STATUS_NONE) };
        };
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
    })
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
