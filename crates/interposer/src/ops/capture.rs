//! Stream capture: a stream that records into a graph gets its calls straight to the driver,
//! and starts recording only once what it and the legacy stream hold reached the driver.

use std::sync::atomic::Ordering;

use baton_cuda::sys::{CUresult, CUstream};

use crate::ffi::status;
use crate::registry::{Api, StreamEntry, StreamKind};
use crate::runtime::Runtime;

impl Runtime {
    /// Before `e` starts recording into a graph (it begins a capture, or joins one): everything
    /// submitted to it so far, and to its context's legacy stream, reaches the driver first,
    /// even while suspended. Natively that work was issued before the capture and runs
    /// outside it; launched during the capture, Baton's own launches would be recorded into the
    /// graph (on this stream) or invalidate the capture (on the legacy stream, which CUDA
    /// forbids touching while a blocking stream captures).
    pub(super) fn before_recording(&self, e: &StreamEntry) {
        let legacy = e.ctx.legacy.get().filter(|l| !std::ptr::eq(l.as_ref(), e));
        for q in std::iter::once(e).chain(legacy.map(|l| l.as_ref())) {
            self.release(q, crate::report::Release::Capture);
        }
    }

    /// `cuStreamBeginCapture`: what the stream holds runs first; then its calls go to the capture.
    pub(crate) fn begin_capture(
        &self,
        stream: CUstream,
        api: Api,
        real: impl FnOnce(CUstream) -> CUresult,
    ) -> CUresult {
        let Some(e) = self.scheduled_entry(stream, api) else {
            return real(stream);
        };
        self.before_recording(&e);
        self.gate.begin();
        let r = self.start_recording(&e, || real(Self::handle_for(&e, stream)));
        if r.is_success() {
            e.capturing.store(true, Ordering::Release);
        } else {
            self.gate.end();
        }
        r
    }

    /// Makes `e`'s stream start recording into a graph through `real` (a capture's beginning,
    /// or a wait that joins one) while its queue's launch worker — and, for a blocking stream,
    /// the legacy stream's — is kept from the driver: a worker that had just found the stream
    /// not capturing could otherwise query it, or record a sync point into it, as it starts.
    pub(super) fn start_recording(
        &self,
        e: &StreamEntry,
        real: impl FnOnce() -> CUresult,
    ) -> CUresult {
        let blocking = matches!(
            e.kind,
            StreamKind::PerThread | StreamKind::Regular { blocking: true }
        );
        let legacy = e.ctx.legacy.get().filter(|_| blocking);
        // The legacy stream's turn first, then the stream's: both keep their workers from the
        // driver until the capture has begun.
        let legacy_turn = match legacy.map(|l| l.xq.in_turn(Vec::new())).transpose() {
            Ok(t) => t,
            Err(x) => return status(&x),
        };
        let turn = match e.xq.in_turn(Vec::new()) {
            Ok(t) => t,
            Err(x) => return status(&x),
        };
        let r = real();
        // Not commands of the queues: the turns end with nothing launched.
        drop(turn);
        drop(legacy_turn);
        r
    }

    /// `cuStreamEndCapture`.
    pub(crate) fn end_capture(
        &self,
        stream: CUstream,
        api: Api,
        real: impl FnOnce(CUstream) -> CUresult,
    ) -> CUresult {
        let Some(e) = self.scheduled_entry(stream, api) else {
            return real(stream);
        };
        let r = real(Self::handle_for(&e, stream));
        if e.capturing.swap(false, Ordering::AcqRel) {
            self.gate.end();
        }
        r
    }

    /// The handle for a call that only asks about `stream`'s capture or changes its capture
    /// dependencies: Baton's stand-in when `stream` names the calling thread's per-thread
    /// default stream (the stand-in is what captures), the application's handle otherwise — a
    /// stream merely asked about gets no queue.
    pub(crate) fn per_thread_handle(&self, stream: CUstream, api: Api) -> CUstream {
        let per_thread = stream == baton_cuda::sys::CU_STREAM_PER_THREAD
            || (stream.is_null() && api == Api::PerThread);
        if per_thread {
            self.plain_handle(stream, api)
        } else {
            stream
        }
    }
}
