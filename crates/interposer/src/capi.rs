//! Baton's C ABI (`include/baton.h`), implemented on the process's queues.
//!
//! `libbaton.so` exports the same symbols, answering "not loaded"; this library is preloaded,
//! so a program under `baton run` reaches these (see `baton-capi`). Every function runs under
//! `catch_unwind`, returns a `BATON_*` code, and leaves a one-line detail for
//! `baton_last_error` on the calling thread.
//!
//! # Priorities
//!
//! A queue (stream) is scheduled at, in this order: the calling thread's priority while that
//! thread issues work on it (`baton_set_thread_priority`); the stream's own priority
//! (`baton_set_stream_priority`); the process's priority less the stream's CUDA priority.
//! A thread's priority is a thread-local read on each scheduled call ([`Runtime::follow_thread`]):
//! a stream changes priority when a thread with another one issues work on it, or when the
//! thread that set it issues work on it after clearing its priority. Changes go to the
//! scheduler as queue hints — posted to the local scheduler's thread, or one non-blocking send
//! to the daemon — so no application thread runs a policy or waits.

use std::cell::{Cell, RefCell};
use std::ffi::{CString, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use baton_agent::{AgentScheduler, SchedulerMode};
use baton_capi::{
    BATON_ABI_VERSION, BATON_ERR_APP_MANAGED, BATON_ERR_BUFFER_TOO_SMALL, BATON_ERR_DISABLED,
    BATON_ERR_INTERNAL, BATON_ERR_INVALID_ARGUMENT, BATON_ERR_NO_DRIVER, BATON_ERR_NOT_APP_MANAGED,
    BATON_ERR_OUT_OF_RANGE, BATON_ERR_UNKNOWN_STREAM, BATON_OK, BATON_SCHEDULER_APP,
    BATON_SCHEDULER_GLOBAL, BATON_SCHEDULER_LOCAL, BATON_STREAM_LEGACY, BATON_STREAM_PER_THREAD,
    BATON_STREAM_REGULAR, BatonHint, BatonQueue, BatonStatus, Refusal, Request,
};
use baton_cuda::core::{Priority, QueueState, ResumeFlags, SuspendFlags};
use baton_cuda::sys::CUstream;

use crate::registry::{Api, StreamEntry, StreamKind, StreamPriority};
use crate::runtime::Runtime;

/// No thread priority.
const NO_THREAD_PRIORITY: i32 = i32::MIN;

thread_local! {
    /// The calling thread's priority, or [`NO_THREAD_PRIORITY`].
    static THREAD_PRIORITY: Cell<i32> = const { Cell::new(NO_THREAD_PRIORITY) };
    /// The detail of the thread's last call, for `baton_last_error`.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

impl Runtime {
    /// Before `e` takes a command: its priority follows the calling thread's (see the module
    /// documentation). One thread-local read and one atomic load when nothing changes.
    #[inline]
    pub(crate) fn follow_thread(&self, e: &StreamEntry) {
        let t = THREAD_PRIORITY.with(Cell::get);
        if t != NO_THREAD_PRIORITY {
            if e.priority.current() != t {
                self.schedule_at(e, t, true);
            }
        } else if e.priority.scoped.load(Ordering::Relaxed) {
            self.schedule_at(e, self.stream_priority(&e.priority), false);
        }
    }

    /// A stream's priority when no thread's applies: its own, or the process's less its CUDA
    /// priority (CUDA's count down from 0, most urgent lowest; Baton's count up).
    pub(crate) fn stream_priority(&self, p: &StreamPriority) -> i32 {
        match p.own.load(Ordering::Relaxed) {
            StreamPriority::NONE => self.default_priority(p.cuda).get(),
            own => own,
        }
    }

    /// The priority of a stream of CUDA priority `cuda` with none of its own.
    pub(crate) fn default_priority(&self, cuda: i32) -> Priority {
        Priority::clamped(i64::from(self.link.process_priority()) - i64::from(cuda))
    }

    /// Schedules `e`'s queue at `p` (already in range) from now on.
    fn schedule_at(&self, e: &StreamEntry, p: i32, scoped: bool) {
        let _g = self.link.priority_change();
        e.priority.scoped.store(scoped, Ordering::Relaxed);
        if e.priority.current.swap(p, Ordering::Relaxed) == p {
            return;
        }
        let Some(s) = &self.link.sched else { return };
        let Ok(prio) = Priority::new(i64::from(p)) else {
            return;
        };
        let sent = s.hint_queue(
            e.xq.id(),
            move |h, _| h.priority = prio,
            baton_agent::WireHint::Priority(prio.into()),
        );
        if let Err(err) = sent {
            tracing::warn!(error = %err, "priority change not sent");
        }
    }

    /// Re-schedules every queue without a thread's priority at its stream's priority (after
    /// the process's priority changed).
    fn follow_process(&self) {
        for e in self.reg.all() {
            if !e.priority.scoped.load(Ordering::Relaxed) {
                self.schedule_at(&e, self.stream_priority(&e.priority), false);
            }
        }
    }
}

/// The runtime, if Baton schedules this process.
fn scheduling() -> Result<&'static Runtime, Refusal> {
    let rt = crate::runtime::get().ok_or_else(|| Refusal::plain(BATON_ERR_NO_DRIVER))?;
    if !rt.hot.enabled {
        return Err(Refusal::plain(BATON_ERR_DISABLED));
    }
    Ok(rt)
}

/// The runtime and its scheduler, if a scheduler (not the application) decides for this
/// process.
fn scheduled() -> Result<(&'static Runtime, &'static AgentScheduler), Refusal> {
    let rt = scheduling()?;
    let s = rt
        .link
        .sched
        .as_ref()
        .ok_or_else(|| Refusal::plain(BATON_ERR_APP_MANAGED))?;
    Ok((rt, s))
}

/// The entry of `stream` as the application names it.
fn entry_of(rt: &Runtime, stream: *mut c_void) -> Result<Arc<StreamEntry>, Refusal> {
    rt.entry(stream as CUstream, Api::Plain).ok_or_else(|| {
        Refusal::new(
            BATON_ERR_UNKNOWN_STREAM,
            format!(
                "stream {:#x} is not a live CUDA stream (or no context is current on this thread for a default stream)",
                stream as usize
            ),
        )
    })
}

/// Runs an ABI call: its code, its detail kept for `baton_last_error`, and no panic out.
fn call(body: impl FnOnce() -> Result<(), Refusal>) -> i32 {
    let r = catch_unwind(AssertUnwindSafe(body))
        .unwrap_or_else(|_| Err(Refusal::plain(BATON_ERR_INTERNAL)));
    let (code, detail) = match r {
        Ok(()) => (BATON_OK, String::new()),
        Err(r) => (r.code, r.detail),
    };
    let detail = CString::new(detail.replace('\0', " ")).unwrap_or_default();
    let _ = LAST_ERROR.try_with(|l| *l.borrow_mut() = detail);
    code
}

/// `p` if non-null.
fn non_null<T>(p: *mut T, what: &str) -> Result<*mut T, Refusal> {
    if p.is_null() {
        Err(Refusal::new(
            BATON_ERR_INVALID_ARGUMENT,
            format!("{what} is a null pointer"),
        ))
    } else {
        Ok(p)
    }
}

/// Applies a validated hint request to queue `e` (local scheduling) or sends it (global).
fn hint_entry(s: &AgentScheduler, e: &StreamEntry, req: Request) -> Result<(), Refusal> {
    let prio = Priority::clamped(i64::from(e.priority.current()));
    s.hint_queue(
        e.xq.id(),
        move |h, now| req.apply(h, now),
        req.to_wire(prio),
    )
    .map_err(|err| Refusal::new(BATON_ERR_OUT_OF_RANGE, err.to_string()))
}

#[unsafe(no_mangle)]
extern "C" fn baton_abi_version() -> u32 {
    BATON_ABI_VERSION
}

#[unsafe(no_mangle)]
extern "C" fn baton_error_message(code: i32) -> *const c_char {
    baton_capi::error_message(code).as_ptr()
}

#[unsafe(no_mangle)]
extern "C" fn baton_last_error() -> *const c_char {
    // The string lives in the thread's slot until its next call replaces it.
    LAST_ERROR
        .try_with(|l| l.borrow().as_ptr())
        .unwrap_or(c"".as_ptr())
}

#[unsafe(no_mangle)]
extern "C" fn baton_set_thread_priority(priority: i32) -> i32 {
    call(|| {
        let p = baton_capi::priority(priority)?;
        scheduled()?;
        THREAD_PRIORITY.with(|t| t.set(p.get()));
        Ok(())
    })
}

#[unsafe(no_mangle)]
extern "C" fn baton_clear_thread_priority() -> i32 {
    call(|| {
        scheduled()?;
        THREAD_PRIORITY.with(|t| t.set(NO_THREAD_PRIORITY));
        Ok(())
    })
}

/// Sets `stream`'s own priority (`StreamPriority::NONE`: none); a queue a thread's priority
/// holds keeps it until that thread's work leaves.
fn set_own_priority(stream: *mut c_void, own: i32) -> Result<(), Refusal> {
    let (rt, _) = scheduled()?;
    let e = entry_of(rt, stream)?;
    e.priority.own.store(own, Ordering::Relaxed);
    if !e.priority.scoped.load(Ordering::Relaxed) {
        rt.schedule_at(&e, rt.stream_priority(&e.priority), false);
    }
    Ok(())
}

#[unsafe(no_mangle)]
extern "C" fn baton_set_stream_priority(stream: *mut c_void, priority: i32) -> i32 {
    call(|| set_own_priority(stream, baton_capi::priority(priority)?.get()))
}

#[unsafe(no_mangle)]
extern "C" fn baton_clear_stream_priority(stream: *mut c_void) -> i32 {
    call(|| set_own_priority(stream, StreamPriority::NONE))
}

#[unsafe(no_mangle)]
extern "C" fn baton_get_stream_priority(stream: *mut c_void, priority: *mut i32) -> i32 {
    call(|| {
        let out = non_null(priority, "priority")?;
        let rt = scheduling()?;
        let e = entry_of(rt, stream)?;
        // SAFETY: the caller passes a pointer to an `int32_t` it owns; checked non-null.
        unsafe { out.write(e.priority.current()) };
        Ok(())
    })
}

#[unsafe(no_mangle)]
extern "C" fn baton_get_stream_own_priority(stream: *mut c_void, priority: *mut i32) -> i32 {
    call(|| {
        let out = non_null(priority, "priority")?;
        let rt = scheduling()?;
        let e = entry_of(rt, stream)?;
        // `StreamPriority::NONE` is `BATON_NO_PRIORITY`.
        // SAFETY: the caller passes a pointer to an `int32_t` it owns; checked non-null.
        unsafe { out.write(e.priority.own.load(Ordering::Relaxed)) };
        Ok(())
    })
}

#[unsafe(no_mangle)]
extern "C" fn baton_set_process_priority(priority: i32) -> i32 {
    call(|| {
        let p = baton_capi::priority(priority)?;
        let (rt, s) = scheduled()?;
        rt.link.set_process_priority(p.get());
        s.hint_process(baton_agent::WireHint::Priority(p.into()))
            .map_err(|err| Refusal::new(BATON_ERR_OUT_OF_RANGE, err.to_string()))?;
        rt.follow_process();
        Ok(())
    })
}

#[unsafe(no_mangle)]
extern "C" fn baton_hint_stream(stream: *mut c_void, hint: *const BatonHint) -> i32 {
    call(|| {
        let h = non_null(hint.cast_mut(), "hint")?;
        // SAFETY: the caller passes a pointer to a `BatonHint` it owns; checked non-null.
        let req = Request::from_c(unsafe { &*h })?;
        let (rt, s) = scheduled()?;
        let e = entry_of(rt, stream)?;
        hint_entry(s, &e, req)
    })
}

#[unsafe(no_mangle)]
extern "C" fn baton_hint_process(hint: *const BatonHint) -> i32 {
    call(|| {
        let h = non_null(hint.cast_mut(), "hint")?;
        // SAFETY: as in `baton_hint_stream`.
        let req = Request::from_c(unsafe { &*h })?;
        let (rt, s) = scheduled()?;
        if rt.cfg.scheduler == SchedulerMode::Global {
            let prio = Priority::clamped(i64::from(rt.link.process_priority()));
            return s
                .hint_process(req.to_wire(prio))
                .map_err(|err| Refusal::new(BATON_ERR_OUT_OF_RANGE, err.to_string()));
        }
        // A scheduler in this process holds only this process's queues: each gets the hint,
        // and queues made later get it too (announced work excepted: it is for now).
        if !req.is_announcement() && !matches!(req, Request::Clear(_)) {
            rt.link.keep_process_request(req);
        }
        for e in rt.reg.all() {
            hint_entry(s, &e, req)?;
        }
        Ok(())
    })
}

/// Suspends or resumes `stream`'s queue for an application that schedules its own queues.
fn app_control(stream: *mut c_void, suspend: bool) -> Result<(), Refusal> {
    let rt = scheduling()?;
    if rt.cfg.scheduler != SchedulerMode::App {
        return Err(Refusal::plain(BATON_ERR_NOT_APP_MANAGED));
    }
    let e = entry_of(rt, stream)?;
    let r = if suspend {
        e.xq.suspend(SuspendFlags::default())
    } else {
        e.xq.resume(ResumeFlags::default())
    };
    r.map_err(|err| Refusal::new(BATON_ERR_INTERNAL, err.to_string()))
}

#[unsafe(no_mangle)]
extern "C" fn baton_suspend_stream(stream: *mut c_void) -> i32 {
    call(|| app_control(stream, true))
}

#[unsafe(no_mangle)]
extern "C" fn baton_resume_stream(stream: *mut c_void) -> i32 {
    call(|| app_control(stream, false))
}

#[unsafe(no_mangle)]
extern "C" fn baton_status(status: *mut BatonStatus) -> i32 {
    call(|| {
        let out = non_null(status, "status")?;
        let rt = scheduling()?;
        let mut st = BatonStatus {
            scheduler: match rt.cfg.scheduler {
                SchedulerMode::App => BATON_SCHEDULER_APP,
                SchedulerMode::Local => BATON_SCHEDULER_LOCAL,
                SchedulerMode::Global => BATON_SCHEDULER_GLOBAL,
            },
            process_priority: rt.link.process_priority(),
            level: rt.cfg.level as u32,
            ..BatonStatus::default()
        };
        if rt.cfg.scheduler == SchedulerMode::Local {
            st.set_policy(&rt.cfg.policy);
        }
        st.connected = u32::from(rt.link.sched.as_ref().and_then(|s| s.connected()) == Some(true));
        for e in rt.reg.all() {
            st.queues += 1;
            st.suspended_queues += u32::from(e.xq.status().suspended);
        }
        // SAFETY: the caller passes a pointer to a `BatonStatus` it owns; checked non-null.
        unsafe { out.write(st) };
        Ok(())
    })
}

#[unsafe(no_mangle)]
extern "C" fn baton_queues(queues: *mut BatonQueue, capacity: usize, count: *mut usize) -> i32 {
    call(|| {
        let count = non_null(count, "count")?;
        if capacity > 0 {
            non_null(queues, "queues")?;
        }
        let rt = scheduling()?;
        let all = rt.reg.all();
        // SAFETY: the caller passes a pointer to a `size_t` it owns; checked non-null.
        unsafe { count.write(all.len()) };
        for (i, e) in all.iter().take(capacity).enumerate() {
            let s = e.xq.status();
            let q = BatonQueue {
                stream: e.handle as u64,
                context: e.ctx.ctx as u64,
                device: e.ctx.device,
                kind: match e.kind {
                    StreamKind::Legacy => BATON_STREAM_LEGACY,
                    StreamKind::PerThread => BATON_STREAM_PER_THREAD,
                    StreamKind::Regular { .. } => BATON_STREAM_REGULAR,
                },
                priority: e.priority.current(),
                level: s.level as u32,
                suspended: u32::from(s.suspended),
                ready: u32::from(s.state == QueueState::Ready),
                submitted: s.submitted,
                completed: s.completed,
                pending: s.pending,
                in_flight: s.inflight,
            };
            // SAFETY: the caller's array holds `capacity` entries; `i < capacity`.
            unsafe { queues.add(i).write(q) };
        }
        if all.len() > capacity {
            return Err(Refusal::new(
                BATON_ERR_BUFFER_TOO_SMALL,
                format!(
                    "{} queues, room for {capacity}: call again with a larger buffer",
                    all.len()
                ),
            ));
        }
        Ok(())
    })
}
