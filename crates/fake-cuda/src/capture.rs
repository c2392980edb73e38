//! Stream capture, the model: a capture in progress and a stream's part in it.
//!
//! While a stream captures, its operations are appended to the capture's graph instead of
//! executed (see [`Capture::record`]); the entry points that begin, end and inspect captures,
//! and the calls a capture forbids, are in `capture_api.rs`.
//!
//! Captured graphs are linear (each node depends on the previous one). Other streams join a
//! capture by waiting on an event recorded in it, and append to the same graph (a valid order
//! of the fork/join graph CUDA would build); they leave it when it ends.

use std::sync::{Arc, Mutex};

use baton_cuda_sys::{
    CU_STREAM_CAPTURE_STATUS_ACTIVE, CU_STREAM_CAPTURE_STATUS_INVALIDATED, CUgraphNode, CUresult,
    CUstreamCaptureMode, CUstreamCaptureStatus,
};

use crate::handle::{Kind, to_ptr};
use crate::ops::{Graph, Op};
use crate::result::CuResult;

/// A capture in progress, shared by the stream that began it and the streams that joined it.
pub(crate) struct Capture {
    /// The capture's id (`cuStreamGetCaptureInfo`).
    pub id: u64,
    pub mode: CUstreamCaptureMode,
    /// The thread that began it.
    pub thread: u32,
    /// The graph it records into.
    pub graph: Arc<Graph>,
    pub invalidated: bool,
    /// Ended by `cuStreamEndCapture`: the streams that joined it have left it.
    pub ended: bool,
    /// The dependency set `cuStreamGetCaptureInfo` reports: the last node, if any. Boxed so
    /// the pointer handed out stays valid until the next captured operation.
    pub last: Box<[CUgraphNode; 1]>,
}

/// A capture as the streams taking part in it hold it.
pub(crate) type Shared = Arc<Mutex<Capture>>;

/// A stream's part in a capture.
pub(crate) struct Slot {
    pub capture: Shared,
    /// The stream began the capture (only it may end it).
    pub origin: bool,
}

// SAFETY: `last` holds an opaque node handle value that is never dereferenced; everything else
// in Capture is Send.
unsafe impl Send for Capture {}

impl Capture {
    /// A capture in `mode`, begun by thread `thread`, recording into `graph`.
    pub fn new(id: u64, mode: CUstreamCaptureMode, thread: u32, graph: Arc<Graph>) -> Capture {
        Capture {
            id,
            mode,
            thread,
            graph,
            invalidated: false,
            ended: false,
            last: Box::new([std::ptr::null_mut()]),
        }
    }

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

    /// The capture's status as `cuStreamIsCapturing` reports it.
    pub fn status(&self) -> CUstreamCaptureStatus {
        if self.invalidated {
            CU_STREAM_CAPTURE_STATUS_INVALIDATED
        } else {
            CU_STREAM_CAPTURE_STATUS_ACTIVE
        }
    }
}
