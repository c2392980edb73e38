//! What the hooks do, independent of each function's exact signature.
//!
//! Every stream operation becomes a command of the stream's XQueue. A hook builds it as a
//! value, an [`Op`] with the application's arguments; here it becomes a
//! [`Launch`] on the stream as the driver knows it and is submitted to the queue, which either
//! launches it at once on the caller's thread (copying nothing) or has it copied into an owned
//! command that the queue launches later, in order (`baton_cuda`'s `launch.rs` makes both
//! driver calls). When no faithful copy can be made (host memory the application may reuse as
//! soon as the call returns, arguments whose layout the driver will not tell), the command is
//! launched in place once everything before it has been — delayed, never reordered; so are the
//! operations Baton does not model, which the hook performs itself in their turn
//! ([`Runtime::in_place`]). While a stream is being captured into a graph, its calls go
//! straight to the driver (capture records, it does not execute).
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

use baton_cuda::core::locks;
use baton_cuda::core::{CommandSeq, Dependency, Nanos, SubmitPath};
use baton_cuda::sys::{CU_STREAM_CAPTURE_STATUS_ACTIVE, CUresult, CUstream, CUstreamCaptureStatus};
use baton_cuda::{Launch, Op};

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

/// How a call on a stream opens ([`Runtime::open`]).
pub(super) enum Opening {
    /// Baton does not schedule the stream: the call goes to the driver as the application
    /// named it.
    Unscheduled,
    /// The stream records into a graph: the call goes to the driver on this handle, outside
    /// the queue.
    Recording(CUstream),
    /// It becomes a command of this entry's queue, on this handle.
    Queued(Arc<StreamEntry>, CUstream),
}

/// What enters a queue ([`Runtime::enter`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Entering {
    /// A command of the stream: its thread's priority followed, and counted for the stream.
    Command,
    /// A call that returns once done (a synchronous copy), run in its turn.
    Synchronous,
}

impl Runtime {
    /// The opening of a call on `stream` that Baton runs in its queue's order; see
    /// [`Opening`]. A call bypassed for a capture is counted as such.
    pub(super) fn open(&self, stream: CUstream, api: Api) -> Opening {
        let Some(e) = self.scheduled_entry(stream, api) else {
            return Opening::Unscheduled;
        };
        let handle = Self::handle_for(&e, stream);
        if self.capturing(&e, handle) {
            self.stats.bypassed.fetch_add(1, Ordering::Relaxed);
            return Opening::Recording(handle);
        }
        Opening::Queued(e, handle)
    }

    /// What every call entering `e`'s queue does first, its stream known not to be recording:
    /// the thread is noted as the queue's submitter (a context-wide synchronization it makes
    /// later is held if this queue is) and, for a command, its priority followed; the
    /// legacy-stream rules' dependencies join `deps`; the call is counted. Returns what the
    /// call must follow. Always inlined: it is part of every launch, and as a call of its own
    /// it cost each launch 45 instructions more (scripts/launch_cost.sh).
    #[inline(always)]
    pub(super) fn enter(
        &self,
        e: &StreamEntry,
        mut deps: Vec<Dependency>,
        entering: Entering,
    ) -> Vec<Dependency> {
        if entering == Entering::Command {
            self.follow_thread(e);
        }
        crate::queues::note_submitter(e);
        let implicit = self.implicit_deps(e);
        if deps.is_empty() {
            deps = implicit;
        } else {
            deps.extend(implicit);
        }
        self.hot.commands.fetch_add(1, Ordering::Relaxed);
        if entering == Entering::Command {
            e.counts.commands.fetch_add(1, Ordering::Relaxed);
            if !deps.is_empty() {
                e.counts.behind.fetch_add(1, Ordering::Relaxed);
            }
        }
        deps
    }

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

    /// A stream operation; see the module documentation. `None` when Baton does not schedule
    /// `stream`: the hook then calls the driver function the application called itself.
    pub(crate) fn scheduled(
        &self,
        stream: CUstream,
        api: Api,
        count: Count,
        op: Op<'_>,
    ) -> Option<CUresult> {
        let e = self.scheduled_entry(stream, api)?;
        Some(self.scheduled_on(&e, stream, count, Vec::new(), op).0)
    }

    /// [`Runtime::scheduled`] on a known entry, after `deps`; also returns the command's
    /// position if it became one.
    pub(crate) fn scheduled_on(
        &self,
        e: &Arc<StreamEntry>,
        stream: CUstream,
        count: Count,
        deps: Vec<Dependency>,
        op: Op<'_>,
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
        // SAFETY: `handle` is the application's stream of this queue (or Baton's stand-in for
        // it), launched onto from the application's thread, which has its context current, with
        // the application's arguments, valid during its call, which the launch lives in.
        let launch = unsafe { Launch::new(handle, op, self.hot.profile) };
        if self.capturing(e, handle) {
            // Recorded into the graph, not executed. What the call waits for (an event recorded
            // before the capture, on a stream that may still hold it back) must reach the
            // driver first, as it had natively.
            for d in &deps {
                d.wait_satisfied();
            }
            self.stats.bypassed.fetch_add(1, Ordering::Relaxed);
            return (launch.outside_queue(self.driver), None);
        }
        let deps = self.enter(e, deps, Entering::Command);
        let s = match e.xq.submit_after(deps, launch) {
            Ok(s) => s,
            Err(x) => return (status(&x), None),
        };
        if s.path != SubmitPath::Direct {
            self.count_waiting(e, s.path, s.held);
        }
        if matches!(count, Count::Marker) {
            e.xq.mark_marker(s.seq);
        }
        (CUresult::SUCCESS, Some(s.seq))
    }

    /// Counts a command that had to wait: copied into its queue's buffer, or launched in place
    /// in its turn; and the time its submitter was held, if it was.
    #[inline(never)]
    fn count_waiting(&self, e: &StreamEntry, path: SubmitPath, held: Option<Nanos>) {
        if path == SubmitPath::Buffered {
            e.counts.deferred.fetch_add(1, Ordering::Relaxed);
            self.stats.deferred.fetch_add(1, Ordering::Relaxed);
        } else {
            self.stats.in_order.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(held) = held {
            let h = &self.stats.held;
            h.calls.fetch_add(1, Ordering::Relaxed);
            h.ns.fetch_add(held.0, Ordering::Relaxed);
            if crate::python::holds_gil() {
                h.with_gil.fetch_add(1, Ordering::Relaxed);
                e.counts.held_with_gil.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// A stream operation Baton does not model as a command (a multi-dimensional or batched
    /// copy, a prefetch, a 64-bit stream-memory operation): `call` performs it on the stream
    /// it is given, in its turn, once everything before it was launched.
    pub(crate) fn in_place(
        &self,
        stream: CUstream,
        api: Api,
        call: impl FnOnce(CUstream) -> CUresult,
    ) -> CUresult {
        let (e, handle) = match self.open(stream, api) {
            Opening::Unscheduled => return call(stream),
            Opening::Recording(handle) => return call(handle),
            Opening::Queued(e, handle) => (e, handle),
        };
        let deps = self.enter(&e, Vec::new(), Entering::Command);
        let turn = match e.xq.in_turn(deps) {
            Ok(t) => t,
            Err(x) => return status(&x),
        };
        if turn.held().is_some() {
            self.count_waiting(&e, SubmitPath::InPlace, turn.held());
        }
        // SAFETY: `handle` is the queue's stream as the application named it (or Baton's
        // stand-in for it).
        if let Err(x) = unsafe { turn.hw().before_in_place(handle) } {
            return status(&x.into());
        }
        let r = call(handle);
        if r.is_success() {
            turn.launched();
        }
        r
    }

    /// The handle an unscheduled call (an allocation) should use for `stream`.
    pub(crate) fn plain_handle(&self, stream: CUstream, api: Api) -> CUstream {
        match self.scheduled_entry(stream, api) {
            Some(e) => Self::handle_for(&e, stream),
            None => stream,
        }
    }
}
