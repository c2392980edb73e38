//! Streams and contexts coming and going: registered at creation, drained before destruction.

use std::sync::Arc;

use baton_cuda::sys::{CUresult, CUstream};

use crate::registry::StreamEntry;
use crate::runtime::Runtime;

impl Runtime {
    /// A stream was created (`r` is the driver's answer): its queue is registered now rather
    /// than at its first command, so the scheduler knows every stream and its priority before
    /// any of them launches — a low-priority stream that launches first is then already held
    /// to its window.
    pub(crate) fn stream_created(&self, r: CUresult, stream: Option<CUstream>) {
        if !self.cfg.enabled || !r.is_success() {
            return;
        }
        if let Some(s) = stream.filter(|s| !s.is_null()) {
            let _ = self.regular(s);
        }
    }

    /// `cuStreamDestroy`: the queue stops taking commands, drains in the background, and the
    /// stream is destroyed after it; the call returns at once, as the driver's does.
    pub(crate) fn stream_destroy(
        &'static self,
        stream: CUstream,
        real: impl FnOnce(CUstream) -> CUresult + Send + 'static,
    ) -> CUresult {
        let Some(e) = self.reg.remove_stream(stream) else {
            return real(stream);
        };
        self.unregister(&e);
        e.xq.close();
        self.stats.retire(&e);
        let handle = stream as usize;
        let driver = self.driver;
        let spawned = std::thread::Builder::new()
            .name("baton-retire".into())
            .spawn(move || {
                driver.relax_capture_mode();
                let _ = e.xq.wait_all();
                self.stats.retire(&e);
                drop(e);
                real(handle as CUstream)
            });
        match spawned {
            Ok(_) => CUresult::SUCCESS,
            Err(_) => CUresult::OUT_OF_MEMORY,
        }
    }

    /// A context is going away: launch and finish everything Baton holds for it first.
    pub(crate) fn context_closing(
        &self,
        ctx: Option<baton_cuda::sys::CUcontext>,
        device: Option<i32>,
    ) {
        let entries: Vec<Arc<StreamEntry>> = self
            .reg
            .all()
            .into_iter()
            .filter(|e| {
                ctx.is_none_or(|c| e.ctx.ctx == c) && device.is_none_or(|d| e.ctx.device == d)
            })
            .collect();
        for e in &entries {
            let _ = e.xq.resume(baton_cuda::core::ResumeFlags::default());
            let _ = e.xq.flush();
            let _ = e.xq.wait_all();
            self.stats.retire(e);
            self.unregister(e);
            e.xq.close();
        }
        let ctxs: Vec<_> = entries.iter().map(|e| e.ctx.ctx).collect();
        for c in ctxs {
            self.reg.remove_context(c);
        }
        // The context's code goes with it.
        self.forget_functions();
    }
}
