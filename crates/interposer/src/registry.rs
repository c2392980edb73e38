//! Which XQueue stands for which stream.
//!
//! - Every regular stream has an entry keyed by its handle, created on first use (streams
//!   made before Baton saw them included).
//! - The legacy default stream of each context has one entry; its commands are launched on
//!   `CU_STREAM_LEGACY`, which means the same stream from any thread.
//! - The per-thread default stream of each (context, thread) becomes a real blocking stream
//!   Baton creates: like the per-thread default stream it synchronizes with the legacy stream
//!   and nothing else, but a launch worker can reach it from another thread.
//!
//! Plain data with no knowledge of the driver or the scheduler: `queues.rs` makes the entries.
//! A generation number bumped when a stream is destroyed invalidates the threads' lookup caches.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use baton_cuda::core::locks;
use baton_cuda::core::{HeldBackCount, XQueue};
use baton_cuda::rm::ContextSlice;
use baton_cuda::sys::{CUcontext, CUstream};
use baton_cuda::{CudaHwQueue, EventPool, SmPartition};

/// What kind of stream an entry stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamKind {
    /// The legacy default stream of a context.
    Legacy,
    /// A thread's per-thread default stream (backed by a stream Baton created).
    PerThread,
    /// A stream the application created; `blocking` unless created non-blocking.
    Regular { blocking: bool },
}

/// One stream and its XQueue.
pub(crate) struct StreamEntry {
    /// The handle commands are launched on.
    pub(crate) handle: CUstream,
    pub(crate) kind: StreamKind,
    pub(crate) ctx: Arc<CtxState>,
    pub(crate) xq: Arc<XQueue<CudaHwQueue>>,
    /// Whether this stream is being captured into a graph (then calls bypass the queue).
    pub(crate) capturing: AtomicBool,
    /// Its scheduling priority (`capi.rs` changes it).
    pub(crate) priority: StreamPriority,
    /// What the report counts of its commands.
    pub(crate) counts: StreamCounts,
    /// The command time its scheduler was last told (ns; 0: none yet).
    pub(crate) told_command_ns: AtomicU64,
    /// Guard ticks since its queue last finished measuring again, and its command samples
    /// when it began to (`Runtime::remeasure`).
    pub(crate) remeasure: (AtomicU32, AtomicU64),
    /// The guard thread's last look at its readiness (`Runtime::report_readiness`).
    pub(crate) readiness: std::sync::Mutex<ReadinessLook>,
}

/// What the report counts of a stream's commands.
#[derive(Debug, Default)]
pub(crate) struct StreamCounts {
    /// Commands submitted.
    pub(crate) commands: AtomicU64,
    /// Commands deferred: copied and launched later.
    pub(crate) deferred: AtomicU64,
    /// Commands submitted behind another stream's commands.
    pub(crate) behind: AtomicU64,
    /// How often the submitting thread was held back while it held Python's interpreter lock.
    pub(crate) held_with_gil: AtomicU64,
}

/// What the guard thread saw of a stream's queue at its last look, and what it told.
#[derive(Default)]
pub(crate) struct ReadinessLook {
    /// When (on the runtime's clock; `None` before the first look).
    pub(crate) at: Option<baton_cuda::core::Nanos>,
    /// How the program had used the queue then (the time it had work while suspended left out).
    pub(crate) usage: baton_cuda::core::Usage,
    /// The readiness its scheduler was last told, if any (withdrawn: none).
    pub(crate) told: Option<baton_agent::Readiness>,
}

impl StreamEntry {
    /// The readiness its scheduler was last told (`Runtime::report_readiness`), if any.
    pub(crate) fn told_readiness(&self) -> Option<baton_agent::Readiness> {
        locks::lock(&self.readiness).told
    }
}

/// A stream's scheduling priority: the one it has by default (the process's less its CUDA
/// priority), its own when code gave it one, and the one its queue is scheduled at now, which
/// a thread's priority may have set while that thread issued work on it.
pub(crate) struct StreamPriority {
    /// The stream's CUDA priority (0 or less; lower is more urgent).
    pub(crate) cuda: i32,
    /// Its own priority, or [`StreamPriority::NONE`].
    pub(crate) own: AtomicI32,
    /// What its queue is scheduled at now.
    pub(crate) current: AtomicI32,
    /// Whether `current` comes from a thread's priority.
    pub(crate) scoped: AtomicBool,
}

impl StreamPriority {
    /// No priority of its own (the C ABI's `BATON_NO_PRIORITY`).
    pub(crate) const NONE: i32 = baton_capi::BATON_NO_PRIORITY;

    /// A stream of CUDA priority `cuda`, scheduled at `current`.
    pub(crate) fn new(cuda: i32, current: i32) -> StreamPriority {
        StreamPriority {
            cuda,
            own: AtomicI32::new(Self::NONE),
            current: AtomicI32::new(current),
            scoped: AtomicBool::new(false),
        }
    }

    /// What its queue is scheduled at now.
    pub(crate) fn current(&self) -> i32 {
        self.current.load(Ordering::Relaxed)
    }
}

// SAFETY: the handle is a CUDA stream, usable from any thread; the rest is thread-safe.
unsafe impl Send for StreamEntry {}
// SAFETY: as above.
unsafe impl Sync for StreamEntry {}

/// Per-context state.
pub(crate) struct CtxState {
    pub(crate) ctx: CUcontext,
    pub(crate) device: i32,
    pub(crate) pool: Arc<EventPool>,
    pub(crate) legacy: OnceLock<Arc<StreamEntry>>,
    /// Blocking streams (regular and per-thread), which the legacy stream synchronizes with.
    pub(crate) blocking: RwLock<Vec<Arc<StreamEntry>>>,
    /// How many of the blocking streams' queues hold commands back from the driver: while
    /// none does, a legacy-stream command needs no look at them (the driver orders it).
    pub(crate) blocking_held_back: Arc<HeldBackCount>,
    /// The same for the legacy stream's queue, which blocking streams' commands follow.
    pub(crate) legacy_held_back: Arc<HeldBackCount>,
    /// The context's time slice, when its queues run at Level 3.
    pub(crate) slice: Option<Arc<ContextSlice>>,
    /// The SMs normal-priority kernels are confined to (`BATON_SMS`), made on first use;
    /// `None` inside when it could not be made.
    pub(crate) partition: OnceLock<Option<Arc<SmPartition>>>,
}

// SAFETY: the context handle is usable from any thread; the rest is thread-safe.
unsafe impl Send for CtxState {}
// SAFETY: as above.
unsafe impl Sync for CtxState {}

/// All entries of the process. The generation comes first: every launch reads it, and the
/// runtime places the registry so that it shares a cache line with its other hot fields.
#[derive(Default)]
#[repr(C)]
pub(crate) struct Registry {
    generation: AtomicU64,
    pub(crate) streams: RwLock<HashMap<usize, Arc<StreamEntry>>>,
    pub(crate) ctxs: RwLock<HashMap<usize, Arc<CtxState>>>,
    pub(crate) per_thread: RwLock<HashMap<(usize, u64), Arc<StreamEntry>>>,
}

impl Registry {
    pub(crate) fn current_generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Every entry (for context-wide synchronization, destruction and exit).
    pub(crate) fn all(&self) -> Vec<Arc<StreamEntry>> {
        let mut v: Vec<Arc<StreamEntry>> = locks::read(&self.streams).values().cloned().collect();
        v.extend(locks::read(&self.per_thread).values().cloned());
        for c in locks::read(&self.ctxs).values() {
            if let Some(l) = c.legacy.get() {
                v.push(l.clone());
            }
        }
        v
    }

    /// Entries of context `ctx`.
    pub(crate) fn of_context(&self, ctx: CUcontext) -> Vec<Arc<StreamEntry>> {
        self.all()
            .into_iter()
            .filter(|e| e.ctx.ctx == ctx)
            .collect()
    }

    /// Forgets a regular stream's entry (it is being destroyed) and returns it.
    pub(crate) fn remove_stream(&self, handle: CUstream) -> Option<Arc<StreamEntry>> {
        let e = locks::write(&self.streams).remove(&(handle as usize));
        if let Some(e) = &e {
            locks::write(&e.ctx.blocking).retain(|b| !Arc::ptr_eq(b, e));
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
        e
    }

    /// Forgets every entry of context `ctx` (it is being destroyed) and returns them.
    pub(crate) fn remove_context(&self, ctx: CUcontext) -> Vec<Arc<StreamEntry>> {
        let gone = self.of_context(ctx);
        locks::write(&self.streams).retain(|_, e| e.ctx.ctx != ctx);
        locks::write(&self.per_thread).retain(|(c, _), _| *c != ctx as usize);
        locks::write(&self.ctxs).remove(&(ctx as usize));
        self.generation.fetch_add(1, Ordering::AcqRel);
        gone
    }

    /// The time slices under Baton's control (Level 3), one per context.
    pub(crate) fn slices(&self) -> Vec<Arc<ContextSlice>> {
        locks::read(&self.ctxs)
            .values()
            .filter_map(|c| c.slice.clone())
            .collect()
    }

    /// Sync points recorded so far, over every context.
    pub(crate) fn sync_points(&self) -> u64 {
        locks::read(&self.ctxs)
            .values()
            .map(|c| c.pool.handed_out())
            .sum()
    }
}

/// Which family of entry points an application called: the plain one (stream 0 is the legacy
/// stream) or the `_ptsz`/`_ptds` one (stream 0 is the per-thread stream).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Api {
    Plain,
    PerThread,
}
