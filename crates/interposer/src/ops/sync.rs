//! Calls that wait for, or must come after, what the queues hold back: synchronous operations,
//! stream, context and device-wide synchronization, and what CUDA applies at call time rather
//! than in stream order (freeing memory, function attributes, unloading code, a kernel's first
//! launch at Level 2).

use std::ffi::c_uint;
use std::sync::atomic::Ordering;

use baton_cuda::core::{IdleQuery, locks};
use baton_cuda::sys::{CUfunction, CUresult, CUstream};

use super::{Entering, Opening};
use crate::ffi::status;
use crate::registry::{Api, StreamEntry, StreamKind};
use crate::report::{ATTRIBUTE_FLUSH_SAMPLES, ATTRIBUTE_SLOTS, AttributeFlush, Release};
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
        let (e, handle) = match self.open(stream, api) {
            Opening::Unscheduled => return call(stream),
            Opening::Recording(handle) => return call(handle),
            Opening::Queued(e, handle) => (e, handle),
        };
        self.stats.in_order.fetch_add(1, Ordering::Relaxed);
        let deps = self.enter(&e, Vec::new(), Entering::Synchronous);
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
            self.release(e, Release::ContextSync);
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
        self.after_submitted(Release::Free, real)
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

    /// Function `f`'s attribute `attrib` as the driver tells it (`None` if it will not): `f` a
    /// function, or a library kernel passed as one, read on `device` (the current context's
    /// when `None`).
    pub(crate) fn function_attribute(
        &self,
        f: CUfunction,
        attrib: c_uint,
        device: Option<baton_cuda::sys::CUdevice>,
    ) -> Option<i32> {
        // SAFETY: `f` is a launch handle the application gave: to the call being hooked, or to
        // a launch still held (its function stays loaded while the launch is held).
        unsafe { baton_cuda::read_attribute(self.driver, f, attrib, device) }
    }

    /// Before a call that changes function attribute `attrib` (`cuFuncSetAttribute`,
    /// `cuKernelSetAttribute`) from `current` (from the driver; `None`: unknown) to `new`: CUDA
    /// applies it to the launches made after the call, while Baton may still hold launches the
    /// application made before it. Those a change could make fail or run differently
    /// ([`attribute_change`]) are launched first, even from a suspended queue. A change that
    /// cannot affect them leaves them held: a preference, a limit raised, or the dynamic shared
    /// memory limit lowered below what a held launch asks for where the driver tells that
    /// launch's limit through the handle it was made with, so that the queue can raise it again
    /// around the launch (`baton_cuda`'s `shared_limit.rs`). Libraries lower limits after
    /// their launches several times a second (ResNet-50 training: about four times a step),
    /// and launching whatever was held at each lowering let a held job through a service's
    /// request.
    pub(crate) fn before_attribute_change(
        &self,
        attrib: c_uint,
        current: Option<i32>,
        new: i32,
        kernel: bool,
    ) {
        if !self.cfg.enabled || current == Some(new) {
            return;
        }
        let change = attribute_change(attrib, current, new);
        let affected: &dyn Fn(&StreamEntry) -> bool = match change {
            AttributeChange::None => &|_: &StreamEntry| false,
            AttributeChange::LimitBelow(limit) => &move |e: &StreamEntry| {
                e.xq.any_buffered(|c| {
                    c.kernel_shared().is_some_and(|(f, bytes)| {
                        let unknown = bytes > limit
                            && self
                                .function_attribute(f, attrib, Some(e.ctx.device))
                                .is_none();
                        if unknown {
                            self.stats
                                .attribute_limits_unknown
                                .fetch_add(1, Ordering::Relaxed);
                        }
                        unknown
                    })
                })
            },
            AttributeChange::Any => &|_: &StreamEntry| true,
        };
        let (mut held, mut released) = (false, false);
        for e in self.reg.all() {
            if !e.xq.has_pending() {
                continue;
            }
            held = true;
            if affected(&e) && self.release(&e, Release::Attribute) {
                released = true;
            }
        }
        if released {
            let mut samples = locks::lock(&self.stats.attribute_flush_samples);
            if samples.len() < ATTRIBUTE_FLUSH_SAMPLES {
                samples.push(AttributeFlush {
                    attribute: attrib,
                    from: current,
                    to: new,
                    kernel,
                });
            }
            drop(samples);
            self.stats.attribute_flushes.fetch_add(1, Ordering::Relaxed);
            let slot =
                usize::try_from(attrib).map_or(ATTRIBUTE_SLOTS - 1, |a| a.min(ATTRIBUTE_SLOTS - 1));
            self.stats.attribute_flushes_by[slot].fetch_add(1, Ordering::Relaxed);
            if current.is_none() {
                self.stats
                    .attribute_flushes_unknown
                    .fetch_add(1, Ordering::Relaxed);
            }
            tracing::debug!(
                attrib,
                ?current,
                new,
                "a function attribute changed while commands it affects were held back: launched them first"
            );
        } else if held {
            self.stats
                .attribute_changes_held_over
                .fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Calls `real` once every command submitted so far, on any queue, has reached the driver:
    /// for calls that change what earlier launches refer to by handle, and calls that act on
    /// all of a context's streams at once (see the hooks).
    pub(crate) fn after_submitted(
        &self,
        cause: Release,
        real: impl FnOnce() -> CUresult,
    ) -> CUresult {
        if self.cfg.enabled {
            for e in self.reg.all() {
                self.release(&e, cause);
            }
        }
        real()
    }

    /// Launches every command `e` was given, from its suspension if need be, and waits until
    /// they reached the driver; a suspension gone through is counted for the report by the
    /// kind of call that needed it. Whether there was anything to wait for.
    pub(crate) fn release(&self, e: &StreamEntry, cause: Release) -> bool {
        let Some(d) = e.xq.dependency_on_all() else {
            return false;
        };
        let before = e.xq.released_while_suspended();
        d.wait_satisfied();
        if e.xq.released_while_suspended() > before {
            self.stats.releases[cause as usize].fetch_add(1, Ordering::Relaxed);
        }
        true
    }
}

/// What changing a function attribute can do to launches of the function made before the
/// change but not yet handed to the driver (see [`Runtime::before_attribute_change`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AttributeChange {
    /// Nothing: the value does not change, or it is a preference (the shared-memory carveout,
    /// the cluster scheduling policy: the driver gives a launch what it needs whatever they
    /// say, and results do not depend on them), or it only allows more.
    None,
    /// The dynamic shared memory limit goes down (or from an unknown value) to this many
    /// bytes: a held launch asking for more would fail unless its limit is raised again
    /// around it, which needs the driver to tell the limit through the launch's handle.
    LimitBelow(u32),
    /// Anything else: any held launch may be affected.
    Any,
}

/// [`AttributeChange`] of setting `attrib` from `current` (`None`: unknown) to `new`.
pub(crate) fn attribute_change(attrib: c_uint, current: Option<i32>, new: i32) -> AttributeChange {
    use baton_cuda::sys::{
        CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE as POLICY,
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as DYNAMIC_SHARED,
        CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED as NON_PORTABLE,
        CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT as CARVEOUT,
    };
    if current == Some(new) {
        return AttributeChange::None;
    }
    match attrib {
        CARVEOUT | POLICY => AttributeChange::None,
        DYNAMIC_SHARED if current.is_some_and(|c| new >= c) => AttributeChange::None,
        // A negative limit is refused by the driver; nothing held is affected by a refusal.
        DYNAMIC_SHARED => {
            u32::try_from(new).map_or(AttributeChange::None, AttributeChange::LimitBelow)
        }
        NON_PORTABLE if new != 0 => AttributeChange::None,
        _ => AttributeChange::Any,
    }
}

#[cfg(test)]
mod tests {
    use super::{AttributeChange, attribute_change};
    use baton_cuda::sys::{
        CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE as POLICY,
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as DYNAMIC_SHARED,
        CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED as NON_PORTABLE,
        CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT as CARVEOUT,
    };

    #[test]
    fn only_changes_that_can_break_or_alter_a_held_launch_release_it() {
        use AttributeChange::{Any, LimitBelow, None};
        let change = attribute_change;
        // Unchanged, whatever the attribute.
        assert_eq!(change(11, Some(2), 2), None);
        // Preferences never.
        assert_eq!(change(CARVEOUT, Some(0), 100), None);
        assert_eq!(change(CARVEOUT, Option::None, 50), None);
        assert_eq!(change(POLICY, Some(0), 1), None);
        // The dynamic shared memory limit: raised, nothing; lowered or from unknown, the
        // launches asking for more than the new limit (released unless their limit can be
        // raised again around them).
        assert_eq!(change(DYNAMIC_SHARED, Some(49_152), 98_304), None);
        assert_eq!(
            change(DYNAMIC_SHARED, Some(98_304), 49_152),
            LimitBelow(49_152)
        );
        assert_eq!(
            change(DYNAMIC_SHARED, Option::None, 65_536),
            LimitBelow(65_536)
        );
        assert_eq!(change(DYNAMIC_SHARED, Some(65_536), -1), None);
        // Non-portable cluster sizes: allowing them, nothing; forbidding them, anything held.
        assert_eq!(change(NON_PORTABLE, Some(0), 1), None);
        assert_eq!(change(NON_PORTABLE, Some(1), 0), Any);
        // Anything else that changes (a required cluster width, say), or is not known.
        assert_eq!(change(11, Some(1), 2), Any);
        assert_eq!(change(11, Option::None, 2), Any);
    }
}
