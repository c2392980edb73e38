//! What the hooks do, independent of each function's exact signature.
//!
//! Every stream operation becomes a command of the stream's XQueue: `direct` launches it with
//! the application's own arguments on the caller's thread when nothing holds it back;
//! otherwise `defer` builds an owned copy that the queue launches later, in order. When no
//! faithful copy can be made (host memory the application may reuse as soon as the call
//! returns, arguments whose layout the driver will not tell), `defer` says so and the command
//! is launched in place once everything before it has been — delayed, never reordered. While a
//! stream is being captured into a graph, its calls go straight to the driver (capture
//! records, it does not execute).
//!
//! CUDA orders some commands across streams; the driver enforces that order only if the
//! commands reach it in that order, so each command carries launch *dependencies* on the
//! commands of other queues it must follow:
//! - work on the legacy default stream follows earlier work on every blocking stream of the
//!   context, and work on a blocking stream follows earlier legacy-stream work;
//! - a wait on an event follows the event's last record; a new record of an event follows the
//!   earlier waits on it (CUDA binds a wait to the record current when the wait was issued).
//!
//! A dependent command waits in its queue's buffer; the application's thread does not block
//! (as `cuStreamWaitEvent` never does natively), and a suspended queue still launches what
//! another queue waits for.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use baton_cuda::CudaCommand;
use baton_cuda::core::locks;
use baton_cuda::core::{CommandSeq, Dependency};
use baton_cuda::sys::{CU_STREAM_CAPTURE_STATUS_ACTIVE, CUresult, CUstream, CUstreamCaptureStatus};

use crate::ffi::status;
use crate::registry::{Api, StreamEntry, StreamKind};
use crate::runtime::Runtime;

mod capture;
mod events;
mod lifecycle;
mod sync;

/// How a call will be counted in the report.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Count {
    /// A kernel; cooperative ones must keep the whole device (no SM partition).
    Kernel {
        cooperative: bool,
    },
    Graph,
    /// A command that takes no device time (an event record): not counted in the stream's
    /// command time ([`XQueue::mark_marker`](baton_cuda::core::XQueue::mark_marker)).
    Marker,
    Other,
}

impl Runtime {
    /// The handle to pass to the driver for `e` when the application named `stream`: the
    /// application's own, except for per-thread default streams (Baton's stand-in stream).
    pub(super) fn handle_for(e: &StreamEntry, stream: CUstream) -> CUstream {
        if e.kind == StreamKind::PerThread {
            e.handle
        } else {
            stream
        }
    }

    /// Whether `e` is being captured (asked of the driver only while some capture runs).
    pub(super) fn capturing(&self, e: &StreamEntry, handle: CUstream) -> bool {
        if !self.gate.active() {
            return false;
        }
        if e.capturing.load(Ordering::Acquire) {
            return true;
        }
        let Some(is) = self.driver.cuStreamIsCapturing else {
            return false;
        };
        let mut st = CUstreamCaptureStatus::default();
        // SAFETY: `handle` is the application's stream (or Baton's); `st` is a valid out-pointer.
        let r = unsafe { is(handle, &mut st) };
        r.is_success() && st == CU_STREAM_CAPTURE_STATUS_ACTIVE
    }

    /// What the legacy-stream rules make `e`'s next command depend on. While the other side's
    /// queues hold nothing back (their context's count is zero: one load), everything they
    /// were given already reached the driver, which orders it itself.
    pub(super) fn implicit_deps(&self, e: &StreamEntry) -> Vec<Dependency> {
        match e.kind {
            StreamKind::Legacy if !e.ctx.blocking_held_back.is_zero() => {
                locks::read(&e.ctx.blocking)
                    .iter()
                    .filter_map(|s| s.xq.dependency_on_all())
                    .collect()
            }
            StreamKind::PerThread | StreamKind::Regular { blocking: true }
                if !e.ctx.legacy_held_back.is_zero() =>
            {
                e.ctx
                    .legacy
                    .get()
                    .and_then(|l| l.xq.dependency_on_all())
                    .into_iter()
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    /// A stream operation; see the module documentation. `defer` returns `None` when the
    /// operation cannot be copied faithfully.
    pub(crate) fn scheduled(
        &self,
        stream: CUstream,
        api: Api,
        count: Count,
        direct: impl FnOnce(CUstream) -> CUresult,
        defer: impl FnOnce() -> Option<CudaCommand>,
    ) -> CUresult {
        let Some(e) = self.scheduled_entry(stream, api) else {
            return direct(stream);
        };
        self.scheduled_on(&e, stream, count, Vec::new(), direct, defer)
            .0
    }

    /// [`Runtime::scheduled`] on a known entry, after `deps`; also returns the command's
    /// position if it became one.
    pub(crate) fn scheduled_on(
        &self,
        e: &Arc<StreamEntry>,
        stream: CUstream,
        count: Count,
        mut deps: Vec<Dependency>,
        direct: impl FnOnce(CUstream) -> CUresult,
        defer: impl FnOnce() -> Option<CudaCommand>,
    ) -> (CUresult, Option<CommandSeq>) {
        match count {
            Count::Kernel { .. } => {
                self.hot.kernels.fetch_add(1, Ordering::Relaxed);
            }
            Count::Graph => {
                self.stats.graphs.fetch_add(1, Ordering::Relaxed);
            }
            Count::Marker | Count::Other => {}
        }
        let handle = Self::handle_for(e, stream);
        if self.capturing(e, handle) {
            // Recorded into the graph, not executed. What the call waits for (an event recorded
            // before the capture, on a stream that may still hold it back) must reach the
            // driver first, as it had natively.
            for d in &deps {
                d.wait_satisfied();
            }
            self.stats.bypassed.fetch_add(1, Ordering::Relaxed);
            return (direct(handle), None);
        }
        self.follow_thread(e);
        crate::queues::note_submitter(e);
        let implicit = self.implicit_deps(e);
        if deps.is_empty() {
            deps = implicit;
        } else {
            deps.extend(implicit);
        }
        self.hot.commands.fetch_add(1, Ordering::Relaxed);
        e.counts[0].fetch_add(1, Ordering::Relaxed);
        if !deps.is_empty() {
            e.counts[2].fetch_add(1, Ordering::Relaxed);
        }
        // A submitter can only be held once its command had to wait (then `defer` ran first):
        // the fast path reads no hold counters.
        let mut before = None;
        let r = e.xq.submit_after(
            deps,
            |q| {
                let kernel = matches!(count, Count::Kernel { cooperative: false });
                // SAFETY: `handle` is the application's stream of this queue, launched onto
                // from the application's thread, which has its context current.
                unsafe { q.launch_direct(handle, kernel, direct) }
            },
            || {
                before = Some(e.xq.submitter_held());
                let c = defer();
                let counter = if c.is_some() {
                    e.counts[1].fetch_add(1, Ordering::Relaxed);
                    &self.stats.deferred
                } else {
                    &self.stats.in_order
                };
                counter.fetch_add(1, Ordering::Relaxed);
                c
            },
        );
        if let Some(before) = before
            && let after = e.xq.submitter_held()
            && after.0 != before.0
        {
            let held = &self.stats.held;
            held[0].fetch_add(after.0 - before.0, Ordering::Relaxed);
            held[1].fetch_add(after.1.0.saturating_sub(before.1.0), Ordering::Relaxed);
            if crate::python::holds_gil() {
                held[2].fetch_add(1, Ordering::Relaxed);
                e.counts[3].fetch_add(1, Ordering::Relaxed);
            }
        }
        match r {
            Ok(seq) => {
                if matches!(count, Count::Marker) {
                    e.xq.mark_marker(seq);
                }
                (CUresult::SUCCESS, Some(seq))
            }
            Err(x) => (status(&x), None),
        }
    }

    /// The handle an unscheduled call (an allocation) should use for `stream`.
    pub(crate) fn plain_handle(&self, stream: CUstream, api: Api) -> CUstream {
        match self.scheduled_entry(stream, api) {
            Some(e) => Self::handle_for(&e, stream),
            None => stream,
        }
    }
}
