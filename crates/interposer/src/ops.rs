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
use baton_cuda::core::{CommandSeq, CommandState, Dependency};
use baton_cuda::sys::{
    CU_STREAM_CAPTURE_STATUS_ACTIVE, CUevent, CUfunction, CUresult, CUstream, CUstreamCaptureStatus,
};

use crate::ffi::{hw, status, to_status};
use crate::registry::{Api, StreamEntry, StreamKind};
use crate::runtime::EventTrack;
use crate::runtime::Runtime;

/// How a call will be counted in the report.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Count {
    /// A kernel; cooperative ones must keep the whole device (no SM partition).
    Kernel {
        cooperative: bool,
    },
    Graph,
    Other,
}

impl Runtime {
    /// The handle to pass to the driver for `e` when the application named `stream`: the
    /// application's own, except for per-thread default streams (Baton's stand-in stream).
    fn handle_for(e: &StreamEntry, stream: CUstream) -> CUstream {
        if e.kind == StreamKind::PerThread {
            e.handle
        } else {
            stream
        }
    }

    /// Whether `e` is being captured (asked of the driver only while some capture runs).
    fn capturing(&self, e: &StreamEntry, handle: CUstream) -> bool {
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
    fn implicit_deps(&self, e: &StreamEntry) -> Vec<Dependency> {
        match e.kind {
            StreamKind::Legacy if !e.ctx.blocking_held_back.is_zero() => e
                .ctx
                .blocking
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .filter_map(|s| s.xq.dependency_on_all())
                .collect(),
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
        if !self.hot.enabled {
            return direct(stream);
        }
        let Some(e) = self.entry(stream, api) else {
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
            Count::Other => {}
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
            Ok(seq) => (CUresult::SUCCESS, Some(seq)),
            Err(x) => (status(&x), None),
        }
    }

    /// An operation that returns only once it has completed (a synchronous copy): runs in
    /// place after everything before it, adds nothing to the stream, and leaves its queue
    /// knowing everything up to it is done.
    pub(crate) fn synchronous(
        &self,
        stream: CUstream,
        api: Api,
        call: impl FnOnce(CUstream) -> CUresult,
    ) -> CUresult {
        if !self.cfg.enabled {
            return call(stream);
        }
        let Some(e) = self.entry(stream, api) else {
            return call(stream);
        };
        let handle = Self::handle_for(&e, stream);
        if self.capturing(&e, handle) {
            self.stats.bypassed.fetch_add(1, Ordering::Relaxed);
            return call(handle);
        }
        self.hot.commands.fetch_add(1, Ordering::Relaxed);
        self.stats.in_order.fetch_add(1, Ordering::Relaxed);
        let deps = self.implicit_deps(&e);
        to_status(e.xq.run_synchronous(deps, |_| hw("synchronous", call(handle))))
    }

    /// `cuStreamSynchronize`: every earlier command launched, then the driver's own wait; on
    /// success the queue knows its launched work is done.
    pub(crate) fn stream_synchronize(
        &self,
        stream: CUstream,
        api: Api,
        real: impl FnOnce(CUstream) -> CUresult,
    ) -> CUresult {
        if !self.cfg.enabled {
            return real(stream);
        }
        let Some(e) = self.entry(stream, api) else {
            return real(stream);
        };
        let handle = Self::handle_for(&e, stream);
        if e.kind == StreamKind::Legacy {
            // The legacy stream's work waits for the blocking streams' earlier work: it must
            // all have reached the driver.
            for d in self.implicit_deps(&e) {
                d.wait_satisfied();
            }
        }
        to_status(e.xq.synchronize_with(|_| hw("cuStreamSynchronize", real(handle))))
    }

    /// `cuStreamQuery`: not ready while commands are still buffered.
    pub(crate) fn stream_query(
        &self,
        stream: CUstream,
        api: Api,
        real: impl FnOnce(CUstream) -> CUresult,
    ) -> CUresult {
        if !self.cfg.enabled {
            return real(stream);
        }
        let Some(e) = self.entry(stream, api) else {
            return real(stream);
        };
        let handle = Self::handle_for(&e, stream);
        let r = e.xq.query_with(|_| match real(handle) {
            CUresult::SUCCESS => Ok(true),
            CUresult::NOT_READY => Ok(false),
            other => hw("cuStreamQuery", other).map(|()| false),
        });
        match r {
            Ok(true) => CUresult::SUCCESS,
            Ok(false) => CUresult::NOT_READY,
            Err(x) => status(&x),
        }
    }

    /// Before a call that frees memory or unregisters host memory, which waits for all pending
    /// work of the device: natively that includes every command submitted so far, which may
    /// still use the memory, so everything Baton holds back reaches the driver first (even
    /// from a suspended queue), and at Level 2 every gate lets it through. Without this, a
    /// command held back by a suspension would run after the memory was freed, and maybe
    /// reused (PyTorch's `empty_cache` frees cached blocks right after a synchronization).
    pub(crate) fn before_free(&self, real: impl FnOnce() -> CUresult) -> CUresult {
        self.release_gates();
        self.after_submitted(real)
    }

    /// Before a call that waits for all pending work of the device (freeing or registering
    /// memory, loading a module, a kernel's first launch under lazy loading: measured by
    /// `scripts/gpu/gate_calls.sh`): at Level 2, every queue lets the commands it already
    /// launched through its gate, even if suspended (or about to be), or the call would wait
    /// for a gate that only its own return could open. Buffered commands stay buffered.
    pub(crate) fn release_gates(&self) {
        if !self.gates_in_use() {
            return;
        }
        // Every queue, not only those gated now: one the scheduler suspends a moment later
        // must still let these commands through.
        for e in self.reg.all() {
            // The gate itself first, without the queue's lock: a launch blocked in the driver
            // may hold that lock, and its queue's worker could then never open the gate.
            e.xq.hw().force_gate_open();
            if let Some(d) = e.xq.dependency_on_launched() {
                d.demand();
            }
        }
    }

    /// Whether queues may have Level-2 gates.
    fn gates_in_use(&self) -> bool {
        self.hot.l2_gates
    }

    /// Forgets everything known by function handle: code was unloaded, and its handles may
    /// name other functions from now on.
    pub(crate) fn forget_functions(&self) {
        self.params.forget_all();
        self.launched_functions
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// At Level 2, before launching `f`: its first launch may load it, which waits for the
    /// device (see [`Runtime::release_gates`]).
    pub(crate) fn before_kernel(&self, f: CUfunction) {
        if !self.gates_in_use() {
            return;
        }
        let key = f as usize;
        if self
            .launched_functions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&key)
        {
            return;
        }
        self.release_gates();
        self.launched_functions
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key);
    }

    /// `cuCtxSynchronize` (of the current context) and `cuCtxSynchronize_v2` (of `ctx`, or
    /// the current one): every queue of the context launched (even a suspended one: the caller
    /// waits for all of it), then the driver's wait.
    pub(crate) fn ctx_synchronize(
        &self,
        ctx: Option<baton_cuda::sys::CUcontext>,
        real: impl FnOnce() -> CUresult,
    ) -> CUresult {
        if !self.cfg.enabled {
            return real();
        }
        let Some(ctx) = ctx.or_else(|| self.current_context()) else {
            return real();
        };
        let entries = self.reg.of_context(ctx);
        for e in &entries {
            // Everything launched, suspended or not: this thread may be the one a suspended
            // queue waits for (and at Level 2 what is launched must be let through its gate).
            if let Some(d) = e.xq.dependency_on_all() {
                d.wait_satisfied();
            }
        }
        let r = real();
        if !r.is_success() {
            return r;
        }
        let mut failed = None;
        for e in &entries {
            let _ = e.xq.query_with(|_| Ok(true));
            // A command Baton launched later for the application failed: the application
            // learns it here, at a synchronization that covers it, as the launch's own call
            // could no longer tell it.
            if let Some(x) = e.xq.take_error() {
                failed.get_or_insert(x);
            }
        }
        failed.map_or(r, |x| status(&baton_cuda::core::XQueueError::Hw(x)))
    }

    /// Before a call that changes a function attribute (`cuFuncSetAttribute`,
    /// `cuKernelSetAttribute`): CUDA applies it to the launches made after the call, while
    /// Baton may still hold launches the application made before it — one asking for more
    /// dynamic shared memory than the new limit would fail, or run differently. When the value
    /// really changes (`current`, from the driver, differs or is unknown) and some queue holds
    /// commands back, those are launched first, even from a suspended queue.
    pub(crate) fn before_attribute_change(&self, current: Option<i32>, new: i32) {
        if !self.cfg.enabled || current == Some(new) {
            return;
        }
        let mut released = false;
        for e in self.reg.all() {
            if e.xq.has_pending()
                && let Some(d) = e.xq.dependency_on_all()
            {
                d.wait_satisfied();
                released = true;
            }
        }
        if released {
            self.stats.attribute_flushes.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(
                "a function attribute changed while commands were held back: launched them first"
            );
        }
    }

    /// `cuEventRecord[WithFlags]`.
    pub(crate) fn event_record(
        &self,
        event: CUevent,
        stream: CUstream,
        api: Api,
        flags: Option<u32>,
        direct: impl FnOnce(CUstream) -> CUresult,
    ) -> CUresult {
        self.recording(&[event], stream, api, Count::Other, direct, || {
            Some(CudaCommand::EventRecord { event, flags })
        })
    }

    /// A stream operation that records `events` at its place in the stream: an event record,
    /// or a kernel launch whose attributes name events. Waits on the events issued before it
    /// reach the driver first (CUDA binds a wait to the record current when it was issued), and
    /// the operation becomes each event's last record, which later waits and queries follow.
    pub(crate) fn recording(
        &self,
        events: &[CUevent],
        stream: CUstream,
        api: Api,
        count: Count,
        direct: impl FnOnce(CUstream) -> CUresult,
        defer: impl FnOnce() -> Option<CudaCommand>,
    ) -> CUresult {
        if !self.cfg.enabled {
            return direct(stream);
        }
        let Some(e) = self.entry(stream, api) else {
            return direct(stream);
        };
        if self.capturing(&e, Self::handle_for(&e, stream)) {
            let r = direct(Self::handle_for(&e, stream));
            let mut ev = self.events.lock().unwrap_or_else(|p| p.into_inner());
            for event in events {
                let t = ev.entry(*event as usize).or_default();
                t.record = None;
                t.captured = true;
            }
            return r;
        }
        let mut waits: Vec<(Arc<StreamEntry>, CommandSeq)> = Vec::new();
        {
            let mut ev = self.events.lock().unwrap_or_else(|p| p.into_inner());
            for event in events {
                if let Some(t) = ev.get_mut(&(*event as usize)) {
                    waits.append(&mut t.waits);
                }
            }
        }
        let deps: Vec<Dependency> = waits
            .iter()
            .filter(|(q, _)| !Arc::ptr_eq(q, &e))
            .filter_map(|(q, seq)| q.xq.dependency_on(*seq))
            .collect();
        let (r, seq) = self.scheduled_on(&e, stream, count, deps, direct, defer);
        if let Some(seq) = seq {
            let mut ev = self.events.lock().unwrap_or_else(|p| p.into_inner());
            for event in events {
                let t = ev.entry(*event as usize).or_default();
                t.record = Some((e.clone(), seq));
                t.captured = false;
            }
        }
        r
    }

    /// `cuStreamWaitEvent`.
    pub(crate) fn stream_wait_event(
        &self,
        stream: CUstream,
        api: Api,
        event: CUevent,
        flags: u32,
        direct: impl FnOnce(CUstream) -> CUresult,
    ) -> CUresult {
        if !self.cfg.enabled {
            return direct(stream);
        }
        let Some(e) = self.entry(stream, api) else {
            return direct(stream);
        };
        let handle = Self::handle_for(&e, stream);
        let key = event as usize;
        let (record, captured) = {
            let ev = self.events.lock().unwrap_or_else(|p| p.into_inner());
            ev.get(&key)
                .map(|t| (t.record.clone(), t.captured))
                .unwrap_or((None, false))
        };
        if captured && self.gate.active() {
            // Waiting on captured work joins this stream to the capture: from now on its calls
            // go to the capture.
            self.before_recording(&e);
            self.stats.bypassed.fetch_add(1, Ordering::Relaxed);
            return self.start_recording(&e, || direct(handle));
        }
        let deps: Vec<Dependency> = record
            .iter()
            .filter(|(q, _)| !Arc::ptr_eq(q, &e))
            .filter_map(|(q, seq)| q.xq.dependency_on(*seq))
            .collect();
        let (r, seq) = self.scheduled_on(&e, stream, Count::Other, deps, direct, || {
            Some(CudaCommand::WaitEvent { event, flags })
        });
        if let Some(seq) = seq {
            if e.xq.query(seq) == Ok(CommandState::Pending) {
                let mut ev = self.events.lock().unwrap_or_else(|p| p.into_inner());
                let t = ev.entry(key).or_default();
                t.waits
                    .retain(|(q, s)| q.xq.query(*s) == Ok(CommandState::Pending));
                t.waits.push((e.clone(), seq));
            }
        }
        r
    }

    /// The queue and position of `event`'s last record, if Baton knows it.
    fn last_record(&self, event: CUevent) -> Option<(Arc<StreamEntry>, CommandSeq)> {
        let ev = self.events.lock().unwrap_or_else(|p| p.into_inner());
        ev.get(&(event as usize)).and_then(|t| t.record.clone())
    }

    /// `cuEventQuery`: not ready while its record is still buffered.
    pub(crate) fn event_query(&self, event: CUevent, real: impl FnOnce() -> CUresult) -> CUresult {
        if let Some((q, seq)) = self.last_record(event) {
            if q.xq.query(seq) == Ok(CommandState::Pending) {
                return CUresult::NOT_READY;
            }
        }
        real()
    }

    /// `cuEventSynchronize`: its record launched, then the driver's wait.
    pub(crate) fn event_synchronize(
        &self,
        event: CUevent,
        real: impl FnOnce() -> CUresult,
    ) -> CUresult {
        if let Some((q, seq)) = self.last_record(event) {
            let _ = q.xq.wait_launched(seq);
        }
        real()
    }

    /// `cuEventElapsedTime`: not ready while either record is buffered.
    pub(crate) fn event_elapsed(
        &self,
        a: CUevent,
        b: CUevent,
        real: impl FnOnce() -> CUresult,
    ) -> CUresult {
        for ev in [a, b] {
            if let Some((q, seq)) = self.last_record(ev) {
                if q.xq.query(seq) == Ok(CommandState::Pending) {
                    return CUresult::NOT_READY;
                }
            }
        }
        real()
    }

    /// `cuEventDestroy`: the driver must not lose an event a buffered command still names, so
    /// while one is buffered the destruction waits in the background (the call returns at once,
    /// as the driver's does).
    pub(crate) fn event_destroy(
        &self,
        event: CUevent,
        real: impl FnOnce() -> CUresult + Send + 'static,
    ) -> CUresult {
        let t: Option<EventTrack> = self
            .events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(event as usize));
        let pending: Vec<(Arc<StreamEntry>, CommandSeq)> = t
            .map(|t| t.waits.into_iter().chain(t.record).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .filter(|(q, s)| q.xq.query(*s) == Ok(CommandState::Pending))
            .collect();
        if pending.is_empty() {
            return real();
        }
        let driver = self.driver;
        let spawned = std::thread::Builder::new()
            .name("baton-retire".into())
            .spawn(move || {
                driver.relax_capture_mode();
                for (q, seq) in pending {
                    let _ = q.xq.wait_launched(seq);
                }
                real()
            });
        match spawned {
            Ok(_) => CUresult::SUCCESS,
            Err(_) => CUresult::OUT_OF_MEMORY,
        }
    }

    /// Before `e` starts recording into a graph (it begins a capture, or joins one): everything
    /// submitted to it so far, and to its context's legacy stream, reaches the driver first,
    /// even while suspended. Natively that work was issued before the capture and runs
    /// outside it; launched during the capture, Baton's own launches would be recorded into the
    /// graph (on this stream) or invalidate the capture (on the legacy stream, which CUDA
    /// forbids touching while a blocking stream captures).
    fn before_recording(&self, e: &StreamEntry) {
        let legacy = e.ctx.legacy.get().filter(|l| !std::ptr::eq(l.as_ref(), e));
        for q in std::iter::once(e).chain(legacy.map(|l| l.as_ref())) {
            if let Some(d) = q.xq.dependency_on_all() {
                d.wait_satisfied();
            }
        }
    }

    /// `cuStreamBeginCapture`: what the stream holds runs first; then its calls go to the capture.
    pub(crate) fn begin_capture(
        &self,
        stream: CUstream,
        api: Api,
        real: impl FnOnce(CUstream) -> CUresult,
    ) -> CUresult {
        if !self.cfg.enabled {
            return real(stream);
        }
        let Some(e) = self.entry(stream, api) else {
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
    fn start_recording(&self, e: &StreamEntry, real: impl FnOnce() -> CUresult) -> CUresult {
        let blocking = matches!(
            e.kind,
            StreamKind::PerThread | StreamKind::Regular { blocking: true }
        );
        let legacy = e.ctx.legacy.get().filter(|_| blocking);
        let run = || e.xq.run_in_order(|_| real()).unwrap_or_else(|x| status(&x));
        match legacy {
            Some(l) => l.xq.run_in_order(|_| run()).unwrap_or_else(|x| status(&x)),
            None => run(),
        }
    }

    /// `cuStreamEndCapture`.
    pub(crate) fn end_capture(
        &self,
        stream: CUstream,
        api: Api,
        real: impl FnOnce(CUstream) -> CUresult,
    ) -> CUresult {
        if !self.cfg.enabled {
            return real(stream);
        }
        let Some(e) = self.entry(stream, api) else {
            return real(stream);
        };
        let r = real(Self::handle_for(&e, stream));
        if e.capturing.swap(false, Ordering::AcqRel) {
            self.gate.end();
        }
        r
    }

    /// The handle an unscheduled call (an allocation) should use for `stream`.
    pub(crate) fn plain_handle(&self, stream: CUstream, api: Api) -> CUstream {
        if !self.cfg.enabled {
            return stream;
        }
        match self.entry(stream, api) {
            Some(e) => Self::handle_for(&e, stream),
            None => stream,
        }
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

    /// `cuCtxRecordEvent`/`cuGreenCtxRecordEvent`: an event after everything submitted to the
    /// context, so everything submitted reaches the driver first; the event's last record is
    /// then in the driver, not in a queue.
    pub(crate) fn context_event_record(
        &self,
        event: CUevent,
        real: impl FnOnce() -> CUresult,
    ) -> CUresult {
        let r = self.after_submitted(real);
        if r.is_success() {
            let mut ev = self.events.lock().unwrap_or_else(|p| p.into_inner());
            let t = ev.entry(event as usize).or_default();
            t.record = None;
            t.waits.clear();
            t.captured = false;
        }
        r
    }

    /// Calls `real` once every command submitted so far, on any queue, has reached the driver:
    /// for calls that change what earlier launches refer to by handle, and calls that act on
    /// all of a context's streams at once (see the hooks).
    pub(crate) fn after_submitted(&self, real: impl FnOnce() -> CUresult) -> CUresult {
        if self.cfg.enabled {
            for e in self.reg.all() {
                if let Some(d) = e.xq.dependency_on_all() {
                    d.wait_satisfied();
                }
            }
        }
        real()
    }

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
        &self,
        stream: CUstream,
        real: impl FnOnce(CUstream) -> CUresult + Send + 'static,
    ) -> CUresult {
        let Some(e) = self.reg.remove_stream(stream) else {
            return real(stream);
        };
        self.unregister(&e);
        e.xq.close();
        let handle = stream as usize;
        let driver = self.driver;
        let spawned = std::thread::Builder::new()
            .name("baton-retire".into())
            .spawn(move || {
                driver.relax_capture_mode();
                let _ = e.xq.wait_all();
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
