//! How a stream gets its XQueue: the entry for a stream as the application names it (regular,
//! legacy, per-thread default), created on first use with its context's state, registered with
//! the scheduler; a thread-local cache remembers the last entries a thread used. What a new
//! entry needs besides lives beside: its SMs (`sms`), its context's time slice (`slice`), and
//! what it tells its scheduler of itself (`measure`).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use baton_agent::{DeviceId, QueueHints};
use baton_agent::{QueueMeta, Registration};
use baton_cuda::core::locks;
use baton_cuda::core::{HeldBackCount, Level, XQueue};
use baton_cuda::sys::{
    CU_STREAM_LEGACY, CU_STREAM_NON_BLOCKING, CU_STREAM_PER_THREAD, CUcontext, CUstream,
};
use baton_cuda::{CudaHwQueue, EventPool};

use crate::registry::{Api, CtxState, StreamEntry, StreamKind, StreamPriority};
use crate::runtime::Runtime;

mod measure;
mod slice;
mod sms;

/// The calling thread's last lookups.
#[derive(Default)]
struct Cache {
    owner: usize,
    generation: u64,
    stream: Option<(usize, Arc<StreamEntry>)>,
    ctx: Option<(usize, Arc<StreamEntry>, Option<Arc<StreamEntry>>)>,
}

impl Cache {
    const EMPTY: Cache = Cache {
        owner: 0,
        generation: 0,
        stream: None,
        ctx: None,
    };

    /// Empties the cache if it belongs to another runtime or an older registry generation.
    fn renew(&mut self, owner: usize, generation: u64) {
        if self.owner != owner || self.generation != generation {
            *self = Cache {
                owner,
                generation,
                ..Cache::default()
            };
        }
    }
}

thread_local! {
    // Initialized in place (no lazy-initialization check on each launch).
    static CACHE: RefCell<Cache> = const { RefCell::new(Cache::EMPTY) };
    static THREAD_NO: u64 = next_thread_no();
    // The queue this thread last submitted a command to (`u64::MAX`: none yet).
    static LAST_QUEUE: Cell<u64> = const { Cell::new(u64::MAX) };
}

/// Remembers that the calling thread submits to `e`'s queue: a context-wide synchronization
/// it makes later is held if that queue is.
#[inline]
pub(crate) fn note_submitter(e: &StreamEntry) {
    LAST_QUEUE.with(|c| c.set(e.xq.id().0));
}

/// The queue among `entries` the calling thread last submitted to.
pub(crate) fn callers_queue(entries: &[Arc<StreamEntry>]) -> Option<&Arc<StreamEntry>> {
    let last = LAST_QUEUE.with(Cell::get);
    entries.iter().find(|e| e.xq.id().0 == last)
}

fn next_thread_no() -> u64 {
    static N: AtomicU64 = AtomicU64::new(1);
    N.fetch_add(1, Ordering::Relaxed)
}

impl Runtime {
    /// The entry of `stream` when Baton schedules anything (`BATON_ENABLE` is not off): what
    /// every stream operation starts from; `None` sends the call straight to the driver.
    #[inline]
    pub(crate) fn scheduled_entry(&self, stream: CUstream, api: Api) -> Option<Arc<StreamEntry>> {
        if !self.hot.enabled {
            return None;
        }
        self.entry(stream, api)
    }

    /// The entry for `stream` as the application named it, or `None` when the call should go
    /// straight to the driver (no current context, an invalid handle: the driver reports it).
    pub(crate) fn entry(&self, stream: CUstream, api: Api) -> Option<Arc<StreamEntry>> {
        let owner = self as *const Runtime as usize;
        let generation = self.reg.current_generation();
        let h = stream as usize;
        let special = h == 0 || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
        if !special {
            let hit = CACHE.with(|c| {
                let c = c.borrow();
                (c.owner == owner && c.generation == generation)
                    .then(|| {
                        c.stream
                            .as_ref()
                            .filter(|(k, _)| *k == h)
                            .map(|(_, e)| e.clone())
                    })
                    .flatten()
            });
            if hit.is_some() {
                return hit;
            }
            let e = self.regular(stream)?;
            CACHE.with(|c| {
                let mut c = c.borrow_mut();
                c.renew(owner, generation);
                c.stream = Some((h, e.clone()));
            });
            return Some(e);
        }
        let per_thread = stream == CU_STREAM_PER_THREAD || (h == 0 && api == Api::PerThread);
        let ctx = self.current_context()?;
        let hit = CACHE.with(|c| {
            let c = c.borrow();
            if c.owner != owner || c.generation != generation {
                return None;
            }
            let (k, legacy, ptds) = c.ctx.as_ref()?;
            if *k != ctx as usize {
                return None;
            }
            if per_thread {
                ptds.clone()
            } else {
                Some(legacy.clone())
            }
        });
        if hit.is_some() {
            return hit;
        }
        let state = self.context(ctx)?;
        let legacy = self.legacy(&state)?;
        let ptds = if per_thread {
            Some(self.per_thread(&state)?)
        } else {
            None
        };
        CACHE.with(|c| {
            let mut c = c.borrow_mut();
            c.renew(owner, generation);
            let keep = match &c.ctx {
                Some((k, _, p)) if *k == ctx as usize => p.clone(),
                _ => None,
            };
            c.ctx = Some((ctx as usize, legacy.clone(), ptds.clone().or(keep)));
        });
        if per_thread { ptds } else { Some(legacy) }
    }

    /// The calling thread's current context, if any.
    pub(crate) fn current_context(&self) -> Option<CUcontext> {
        let get = self.driver.cuCtxGetCurrent?;
        let mut ctx: CUcontext = std::ptr::null_mut();
        // SAFETY: `ctx` is a valid out-pointer.
        let r = unsafe { get(&mut ctx) };
        (r.is_success() && !ctx.is_null()).then_some(ctx)
    }

    /// The state of context `ctx`, created on first use.
    pub(crate) fn context(&self, ctx: CUcontext) -> Option<Arc<CtxState>> {
        if let Some(s) = locks::read(&self.reg.ctxs).get(&(ctx as usize)) {
            return Some(s.clone());
        }
        let device = self.context_device(ctx);
        let level3 = self.cfg.level == Level::L3;
        let slice = if level3 || self.cfg.yields_to_others() {
            self.start_slice(ctx, level3)
        } else {
            None
        };
        if slice.is_some() {
            self.claim_yielding();
        }
        let state = Arc::new(CtxState {
            ctx,
            device,
            pool: EventPool::new(self.driver, ctx),
            legacy: OnceLock::new(),
            blocking: RwLock::new(Vec::new()),
            blocking_held_back: Arc::new(HeldBackCount::new()),
            legacy_held_back: Arc::new(HeldBackCount::new()),
            slice,
            partition: OnceLock::new(),
        });
        let mut w = locks::write(&self.reg.ctxs);
        Some(w.entry(ctx as usize).or_insert(state).clone())
    }

    fn context_device(&self, ctx: CUcontext) -> i32 {
        let (Some(push), Some(pop), Some(dev)) = (
            self.driver.cuCtxPushCurrent_v2,
            self.driver.cuCtxPopCurrent_v2,
            self.driver.cuCtxGetDevice,
        ) else {
            return 0;
        };
        let mut d = 0;
        // SAFETY: push/pop are balanced; `d` and `old` are valid out-pointers.
        unsafe {
            if push(ctx).is_success() {
                let _ = dev(&mut d);
                let mut old = std::ptr::null_mut();
                let _ = pop(&mut old);
            }
        }
        d
    }

    fn legacy(&self, state: &Arc<CtxState>) -> Option<Arc<StreamEntry>> {
        if let Some(e) = state.legacy.get() {
            return Some(e.clone());
        }
        let e = self.new_entry(state, CU_STREAM_LEGACY, StreamKind::Legacy, 0)?;
        Some(state.legacy.get_or_init(|| e).clone())
    }

    fn per_thread(&self, state: &Arc<CtxState>) -> Option<Arc<StreamEntry>> {
        let key = (state.ctx as usize, THREAD_NO.with(|n| *n));
        if let Some(e) = locks::read(&self.reg.per_thread).get(&key) {
            return Some(e.clone());
        }
        let create = self.driver.cuStreamCreate?;
        let mut s: CUstream = std::ptr::null_mut();
        // SAFETY: `s` is a valid out-pointer; the context is current on this thread.
        if !unsafe { create(&mut s, 0) }.is_success() {
            return None;
        }
        let e = self.new_entry(state, s, StreamKind::PerThread, 0)?;
        locks::write(&state.blocking).push(e.clone());
        locks::write(&self.reg.per_thread).insert(key, e.clone());
        Some(e)
    }

    /// The entry of a regular stream, created on first use.
    pub(crate) fn regular(&self, stream: CUstream) -> Option<Arc<StreamEntry>> {
        if let Some(e) = locks::read(&self.reg.streams).get(&(stream as usize)) {
            return Some(e.clone());
        }
        let d = self.driver;
        let mut ctx: CUcontext = std::ptr::null_mut();
        let mut flags = 0u32;
        let mut prio = 0i32;
        // SAFETY: valid out-pointers; an invalid handle makes the driver return an error.
        unsafe {
            if !d.cuStreamGetCtx?(stream, &mut ctx).is_success() || ctx.is_null() {
                return None;
            }
            if let Some(f) = d.cuStreamGetFlags {
                let _ = f(stream, &mut flags);
            }
            if let Some(f) = d.cuStreamGetPriority {
                let _ = f(stream, &mut prio);
            }
        }
        let state = self.context(ctx)?;
        let blocking = flags & CU_STREAM_NON_BLOCKING == 0;
        let e = self.new_entry(&state, stream, StreamKind::Regular { blocking }, prio)?;
        let mut w = locks::write(&self.reg.streams);
        if let Some(existing) = w.get(&(stream as usize)) {
            return Some(existing.clone());
        }
        w.insert(stream as usize, e.clone());
        drop(w);
        if blocking {
            locks::write(&state.blocking).push(e.clone());
        }
        Some(e)
    }

    /// A new XQueue over `handle`, registered with the local scheduler. `cuda_priority` is the
    /// stream's CUDA priority (lower is more urgent).
    fn new_entry(
        &self,
        state: &Arc<CtxState>,
        handle: CUstream,
        kind: StreamKind,
        cuda_priority: i32,
    ) -> Option<Arc<StreamEntry>> {
        let mut hw = CudaHwQueue::new(
            self.driver,
            state.ctx,
            handle,
            state.pool.clone(),
            self.gate.clone(),
        );
        // The context's slice serves Level 3 and yielding to other programs (the default
        // under `baton run`); Level 2 is the gate, which a queue needs whether or not its
        // context's slice is controlled. (Given the slice instead of the gate, a Level-2 queue
        // could not be built and its stream went unscheduled.)
        if let Some(slice) = &state.slice {
            hw = hw.with_slice(slice.clone());
        }
        if self.cfg.level == Level::L2 {
            // SAFETY: the registry's contexts are live while they have streams.
            match unsafe { baton_cuda::Gate::new(self.driver, state.ctx) } {
                Ok(g) => hw = hw.with_gate(g),
                Err(e) => tracing::warn!(
                    "level 2 unavailable for stream {:#x}: {e}; it uses level 1",
                    handle as usize
                ),
            }
        }
        // The SMs the queue keeps to while outranked, which it claims when registered if it
        // yields that way (`--yield`); confined by BATON_YIELD_SMS alone it is held back too,
        // and says so for `baton list` only.
        let (mut confining, mut confined_held) = (None, None);
        if let Some((want, while_outranked)) = self.confinement().filter(|_| cuda_priority >= 0)
            && let Some(part) = self.partition(state, want)
        {
            // SAFETY: the partition was made for this primary context's device.
            match unsafe { part.confine(state.ctx, cuda_priority) } {
                Ok(c) if while_outranked => {
                    let sms = Some(c.sms().min(baton_agent::MAX_SMS));
                    if self.cfg.claims_confining() {
                        confining = sms;
                    } else {
                        confined_held = sms;
                    }
                    hw = hw.with_confinement_while_preemptible(c);
                }
                Ok(c) => hw = hw.with_confinement(c),
                Err(e) => tracing::warn!(
                    "{want} SMs: stream {:#x} keeps the whole GPU: {e}",
                    handle as usize
                ),
            }
        }
        let level = supported_level(self.cfg.level, |l| {
            baton_cuda::core::HwQueue::supports(&hw, l)
        });
        let mut b = XQueue::builder(hw)
            .level(level)
            .config(self.cfg.launch)
            .inflight_budget(baton_cuda::core::Nanos::from_micros(
                self.cfg.inflight_budget_us(),
            ))
            .early_refill(self.cfg.early_refill)
            .keep_window(self.cfg.keep_window)
            .max_buffered(self.cfg.max_buffered)
            .clock(self.clock.clone());
        if let Some(s) = &self.link.sched {
            b = b.sink(s.sink());
        }
        match kind {
            StreamKind::PerThread | StreamKind::Regular { blocking: true } => {
                b = b.held_back_count(state.blocking_held_back.clone());
            }
            StreamKind::Legacy => b = b.held_back_count(state.legacy_held_back.clone()),
            StreamKind::Regular { blocking: false } => {}
        }
        let xq = match b.build() {
            Ok(q) => Arc::new(q),
            Err(e) => {
                tracing::warn!(
                    "stream {:#x} is not scheduled: its queue cannot be made: {e}",
                    handle as usize
                );
                return None;
            }
        };
        let priority = self.default_priority(cuda_priority);
        if let Some(s) = &self.link.sched {
            let now = baton_cuda::core::Clock::now(&*self.clock);
            let mut hints = QueueHints {
                priority,
                confining,
                ..QueueHints::default()
            };
            // What code asked of the whole process (only kept here with a local scheduler;
            // the daemon keeps its own).
            for r in self.link.process_requests().iter() {
                r.apply(&mut hints, now);
            }
            let meta = QueueMeta {
                pid: std::process::id(),
                device: DeviceId(u32::try_from(state.device).unwrap_or(0)),
                hints,
            };
            let reg = Registration {
                meta,
                label: format!("{kind:?} stream {:#x}", handle as usize),
                device: self.device_ref(state.device),
                confined_held,
            };
            s.register(xq.clone(), reg, now);
        }
        self.stats.streams.fetch_add(1, Ordering::Relaxed);
        crate::runtime::ensure_exit_drain();
        Some(Arc::new(StreamEntry {
            handle,
            kind,
            ctx: state.clone(),
            xq,
            capturing: AtomicBool::new(false),
            priority: StreamPriority::new(cuda_priority, priority.get()),
            counts: Default::default(),
            told_command_ns: AtomicU64::new(0),
            remeasure: (AtomicU32::new(0), AtomicU64::new(0)),
            readiness: Default::default(),
        }))
    }

    /// Stops scheduling `e`'s queue (its stream is going away).
    pub(crate) fn unregister(&self, e: &StreamEntry) {
        if let Some(s) = &self.link.sched {
            s.unregister(e.xq.id(), baton_cuda::core::Clock::now(&*self.clock));
        }
    }

    /// Device `ordinal` as the daemon knows it: its UUID (`GPU-…`) when the driver reports
    /// one, else `cuda-ORDINAL`.
    fn device_ref(&self, ordinal: i32) -> baton_agent::DeviceRef {
        let uuid = (|| {
            let (get, uuid) = (self.driver.cuDeviceGet?, self.driver.cuDeviceGetUuid_v2?);
            let mut dev = 0;
            let mut id = baton_cuda::sys::CUuuid { bytes: [0; 16] };
            // SAFETY: valid out-pointers; an invalid ordinal makes the driver return an error.
            unsafe {
                if !get(&mut dev, ordinal).is_success() || !uuid(&mut id, dev).is_success() {
                    return None;
                }
            }
            Some(id.to_string())
        })();
        baton_agent::DeviceRef {
            backend: baton_agent::Backend::Cuda,
            id: uuid.unwrap_or_else(|| format!("cuda-{ordinal}")),
            ordinal: u32::try_from(ordinal).unwrap_or(0),
        }
    }
}

/// The level a new queue runs at: the highest up to `requested` that its hardware queue
/// `supports`. Level 2 needs the stream's gate and Level 3 its context's slice, so a queue may
/// support Level 3 but not Level 2 (a context whose slice is controlled, its gate not made):
/// capping the request at the highest level supported would ask such a queue for a level it
/// cannot have, and the queue could not be made.
fn supported_level(requested: Level, supports: impl Fn(Level) -> bool) -> Level {
    Level::ALL
        .into_iter()
        .rev()
        .find(|&l| l <= requested && supports(l))
        .unwrap_or(Level::L1)
}

#[cfg(test)]
mod tests {
    use super::{Level, supported_level};

    #[test]
    fn a_queue_runs_at_the_highest_level_it_supports_up_to_the_one_asked() {
        let all = |_: Level| true;
        assert_eq!(supported_level(Level::L2, all), Level::L2);
        assert_eq!(supported_level(Level::L3, all), Level::L3);
        assert_eq!(supported_level(Level::L1, all), Level::L1);
        // A context's slice without the stream's gate: Levels 1 and 3 only.
        let slice_only = |l: Level| l != Level::L2;
        assert_eq!(supported_level(Level::L2, slice_only), Level::L1);
        assert_eq!(supported_level(Level::L3, slice_only), Level::L3);
        // A gate without a slice.
        let gate_only = |l: Level| l != Level::L3;
        assert_eq!(supported_level(Level::L3, gate_only), Level::L2);
    }
}
