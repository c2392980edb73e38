//! Calls that wait for, or must come after, what the queues hold back: synchronous operations,
//! stream, context and device-wide synchronization, and what CUDA applies at call time rather
//! than in stream order (freeing memory, function attributes, unloading code, a kernel's first
//! launch at Level 2).

use std::sync::atomic::Ordering;

use baton_cuda::core::IdleQuery;
use baton_cuda::sys::{CUfunction, CUresult, CUstream};

use crate::ffi::status;
use crate::registry::{Api, StreamKind};
use crate::runtime::Runtime;

impl Runtime {
    /// An operation that returns only once it has completed (a synchronous copy): runs in
    /// place after everything before it, adds nothing to the stream, and leaves its queue
    /// knowing everything up to it is done.
    pub(crate) fn synchronous(
        &self,
        stream: CUstream,
        api: Api,
        call: impl FnOnce(CUstream) -> CUresult,
    ) -> CUresult {
        let Some(e) = self.scheduled_entry(stream, api) else {
            return call(stream);
        };
        let handle = Self::handle_for(&e, stream);
        if self.capturing(&e, handle) {
            self.stats.bypassed.fetch_add(1, Ordering::Relaxed);
            return call(handle);
        }
        self.hot.commands.fetch_add(1, Ordering::Relaxed);
        self.stats.in_order.fetch_add(1, Ordering::Relaxed);
        crate::queues::note_submitter(&e);
        let deps = self.implicit_deps(&e);
        let turn = match e.xq.in_turn(deps) {
            Ok(t) => t,
            Err(x) => return status(&x),
        };
        let r = call(handle);
        if r.is_success() {
            turn.completed();
        }
        r
    }

    /// `cuStreamSynchronize`: every earlier command launched, then the driver's own wait; on
    /// success the queue knows its launched work is done.
    pub(crate) fn stream_synchronize(
        &self,
        stream: CUstream,
        api: Api,
        real: impl FnOnce(CUstream) -> CUresult,
    ) -> CUresult {
        let Some(e) = self.scheduled_entry(stream, api) else {
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
        let s = match e.xq.begin_synchronize() {
            Ok(s) => s,
            Err(x) => return status(&x),
        };
        let r = real(handle);
        match e.xq.synchronized(s, r.is_success()) {
            // An error of a command Baton launched later for the application: reported here,
            // at a synchronization that covers it, unless the driver's own call failed.
            Err(x) if r.is_success() => status(&x),
            _ => r,
        }
    }

    /// `cuStreamQuery`: not ready while commands are still buffered.
    pub(crate) fn stream_query(
        &self,
        stream: CUstream,
        api: Api,
        real: impl FnOnce(CUstream) -> CUresult,
    ) -> CUresult {
        let Some(e) = self.scheduled_entry(stream, api) else {
            return real(stream);
        };
        let handle = Self::handle_for(&e, stream);
        let asking = match e.xq.idle_query() {
            IdleQuery::Known(true) => return CUresult::SUCCESS,
            IdleQuery::Known(false) => return CUresult::NOT_READY,
            IdleQuery::Ask(asking) => asking,
        };
        let r = real(handle);
        e.xq.answered(asking, r == CUresult::SUCCESS);
        r
    }

    /// `cuCtxSynchronize` (of the current context) and `cuCtxSynchronize_v2` (of `ctx`, or
    /// the current one): every queue of the context launched, then the driver's wait.
    ///
    /// Who calls decides what a suspended queue means here. A thread whose own queue (the one
    /// it last submitted to) is suspended is the held work itself, as a training loop calling
    /// `torch.cuda.synchronize()` is: it waits until the scheduler lets its context's
    /// suspended queues run, as its stream synchronizations would, instead of launching what
    /// is held (which would let a process that synchronizes its whole device every few
    /// kernels escape every hold). Any other caller may be what those queues wait for (a
    /// service thread, a thread of no queue, or one holding Python's interpreter lock), so
    /// their work is launched at once: priority inheritance, as for a dependency. So is the
    /// work of a program that suspends its own queues (`BATON_SCHEDULER=app`): its
    /// synchronizing thread is the only one that could resume them.
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
        // Not while holding Python's interpreter lock: the service's threads would wait for
        // the held one (PyTorch releases it around its synchronizations). Nor when the
        // application suspends its own queues (`BATON_SCHEDULER=app`): only its own thread
        // could resume them.
        if self.cfg.scheduler != baton_agent::SchedulerMode::App
            && crate::queues::callers_queue(&entries).is_some_and(|e| e.xq.status().suspended)
            && !crate::python::holds_gil()
        {
            Self::wait_for_holds(&entries);
        }
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
            // The driver's wait covered everything launched: done, without asking again.
            if let IdleQuery::Ask(asking) = e.xq.idle_query() {
                e.xq.answered(asking, true);
            }
            // A command Baton launched later for the application failed: the application
            // learns it here, at a synchronization that covers it, as the launch's own call
            // could no longer tell it.
            if let Some(x) = e.xq.take_error() {
                failed.get_or_insert(x);
            }
        }
        failed.map_or(r, |x| status(&baton_cuda::core::XQueueError::Hw(x)))
    }

    /// Waits while some queue of `entries` is suspended with work the context's
    /// synchronization would wait for: commands still buffered, or, above Level 1, launched
    /// ones the suspension stops on the device. The scheduler's decisions end the wait: the
    /// policy's own, the daemon's lease when the daemon is gone, its stall limit when the
    /// queue holding these back hangs.
    fn wait_for_holds(entries: &[std::sync::Arc<crate::registry::StreamEntry>]) {
        let held = |e: &crate::registry::StreamEntry| {
            let s = e.xq.status();
            s.suspended
                && (s.pending > 0 || (s.level != baton_cuda::core::Level::L1 && s.inflight > 0))
        };
        while entries.iter().any(|e| held(e)) {
            std::thread::sleep(std::time::Duration::from_micros(500));
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
    /// `scripts/gpu/levels/gate_calls.sh`): at Level 2, every queue lets the commands it already
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
        self.functions.forget_all();
    }

    /// At Level 2, before launching `f`: its first launch may load it, which waits for the
    /// device (see [`Runtime::release_gates`]).
    pub(crate) fn before_kernel(&self, f: CUfunction) {
        if !self.gates_in_use() {
            return;
        }
        if self.functions.launched_before(f) {
            return;
        }
        self.release_gates();
        self.functions.launched(f);
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
}
