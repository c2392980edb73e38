//! How a stream gets its XQueue: the entry for a stream as the application names it (regular,
//! legacy, per-thread default), created on first use with its context's state, registered with
//! the scheduler; a thread-local cache remembers the last entries a thread used.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use baton_agent::{DeviceId, QueueHints, SmShare};
use baton_agent::{QueueMeta, Registration};
use baton_cuda::core::locks;
use baton_cuda::core::{HeldBackCount, XQueue};
use baton_cuda::rm::{ContextSlice, Ioctl, SliceValues};
use baton_cuda::sys::{
    CU_STREAM_LEGACY, CU_STREAM_NON_BLOCKING, CU_STREAM_PER_THREAD, CUcontext, CUstream,
};
use baton_cuda::{CudaHwQueue, EventPool, SmPartition};

use crate::registry::{Api, CtxState, StreamEntry, StreamKind, StreamPriority};
use crate::runtime::Runtime;

/// How many guard ticks apart a stream let go without its window measures its commands again
/// ([`Runtime::remeasure`]): 40 ticks of 25 ms, a second.
pub(crate) const REMEASURE_EVERY: u32 = 40;
/// How many more samples of its command time such a stream takes in before it goes without its
/// window again: enough for the moving average to move most of the way to a new length.
pub(crate) const REMEASURE_SAMPLES: u64 = 8;
/// The longest it keeps its window to be measured, in guard ticks: two seconds (eight samples
/// of a batch of eight 8 ms commands, after what it launched unbounded).
pub(crate) const REMEASURE_LONGEST: u32 = 80;
/// How far (‰) a queue's readiness must move from what its scheduler was told to be told
/// again (a change of whether it is bound by its launching is told at once).
pub(crate) const READINESS_STEP: u16 = 50;

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
        let level3 = self.cfg.level == baton_cuda::core::Level::L3;
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

    /// Under MPS, once kernels really are confined, tells the daemon the process is isolated
    /// (`Hint::Isolated`, `BATON_SMS`): other processes' work then does not hold it back.
    /// Sent only now, so that a process whose partition could not be made is never claimed
    /// isolated. (A queue confined only while outranked, `BATON_YIELD`, claims it itself when
    /// it is registered: `Hint::Confining`.)
    fn claim_isolation(&self, sms: u32) {
        if self.cfg.isolated_sms().is_none() {
            return;
        }
        if let Some(s) = &self.link.sched {
            let sms = sms.min(baton_agent::MAX_SMS);
            match s.hint_process(baton_agent::WireHint::Isolated { sms }) {
                Ok(()) => tracing::info!(
                    "BATON_SMS under MPS: isolated on {sms} SMs (other processes do not hold it back)"
                ),
                Err(e) => tracing::warn!("BATON_SMS under MPS: isolation not claimed: {e}"),
            }
        }
    }

    /// Where the kernels of normal-priority streams are confined, if they are: `BATON_SMS`
    /// always; under MPS, yielding (`BATON_YIELD`), `BATON_YIELD_SMS` while outranked
    /// (`true`).
    fn confinement(&self) -> Option<(SmShare, bool)> {
        match self.cfg.sms {
            Some(n) => Some((SmShare::Count(n), false)),
            None => self.cfg.confines_while_outranked().map(|s| (s, true)),
        }
    }

    /// The SM partition of `state`'s context for `want` SMs (`BATON_SMS`, or yielding under
    /// MPS), made on first use. Only a device's primary context can have one: a green context
    /// shares the primary context's memory and modules, not those of other contexts.
    fn partition(&self, state: &CtxState, want: SmShare) -> Option<Arc<SmPartition>> {
        state
            .partition
            .get_or_init(|| {
                let primary = (|| {
                    let (retain, release) = (
                        self.driver.cuDevicePrimaryCtxRetain?,
                        self.driver.cuDevicePrimaryCtxRelease_v2?,
                    );
                    let mut p = std::ptr::null_mut();
                    // SAFETY: a valid out-pointer; the retain is released at once (the
                    // application holds its own).
                    unsafe {
                        if !retain(&mut p, state.device).is_success() {
                            return None;
                        }
                        let _ = release(state.device);
                    }
                    Some(p)
                })();
                let (var, when) = if self.cfg.sms.is_some() {
                    ("BATON_SMS", "")
                } else {
                    ("BATON_YIELD_SMS", " while outranked")
                };
                if primary != Some(state.ctx) {
                    tracing::warn!(
                        "{var}: context {:#x} is not its device's primary context; its kernels use the whole GPU",
                        state.ctx as usize
                    );
                    return None;
                }
                // SAFETY: the device of a live primary context, for both calls.
                let made = unsafe {
                    SmPartition::device_sm_count(self.driver, state.device).and_then(|all| {
                        SmPartition::new(self.driver, state.device, want.of(all))
                    })
                };
                match made {
                    Ok(p) => {
                        tracing::info!(
                            "{var}: normal-priority kernels of device {} run on {} of its {} SMs{when}",
                            state.device,
                            p.sms(),
                            p.device_sms(),
                        );
                        self.claim_isolation(p.sms());
                        Some(Arc::new(p))
                    }
                    Err(e) => {
                        tracing::warn!(
                            "{var}={want}: no SM partition on device {} ({e}); kernels use the whole GPU",
                            state.device
                        );
                        None
                    }
                }
            })
            .clone()
    }

    /// Tells the scheduler how long `e`'s commands take on the GPU, when its queue has measured
    /// it and it changed since it was last told (`BATON_COMMAND_TIME`; see
    /// [`Hint::CommandTime`](baton_agent::WireHint::CommandTime)). Called from the guard
    /// thread, never on a launch.
    pub(crate) fn report_command_time(&self, e: &StreamEntry) {
        let Some(s) = self.link.sched.as_ref().filter(|_| self.cfg.command_time) else {
            return;
        };
        let told = match e.told_command_ns.load(Ordering::Relaxed) {
            0 => None,
            ns => Some(baton_cuda::core::Nanos(ns)),
        };
        let Some(t) = e.xq.command_time_news(told) else {
            return;
        };
        e.told_command_ns.store(t.0, Ordering::Relaxed);
        let wire = baton_agent::WireHint::CommandTime { command_ns: t.0 };
        match s.hint_queue(e.xq.id(), move |h, _| h.command_time = Some(t), wire) {
            Ok(()) => tracing::debug!("{:#x}: commands take {t} on the GPU", e.handle as usize),
            Err(err) => tracing::warn!(error = %err, "command time not sent"),
        }
    }

    /// Called every [`READINESS_TICKS`](crate::runtime::READINESS_TICKS) ticks of the guard
    /// thread: tells the scheduler how
    /// `e`'s program used its queue since the last look (`Hint::Readiness`: the share of the
    /// time the queue had work, and the share its program spent blocked in its own waits for
    /// that work), when the queue had work and the figures moved by [`READINESS_STEP`] or
    /// changed whether the queue is bound by its program's launching
    /// ([`Readiness::launch_bound`](baton_agent::Readiness::launch_bound)). The time the queue
    /// had work while suspended is left out of the period and of both shares
    /// ([`Usage`](baton_cuda::core::Usage)): held back, any program has work queued and waits
    /// for it. Never on a launch; `BATON_COMMAND_TIME=off` measures neither this nor command
    /// times.
    pub(crate) fn report_readiness(&self, e: &StreamEntry) {
        let Some(s) = self.link.sched.as_ref().filter(|_| self.cfg.command_time) else {
            return;
        };
        let now = baton_cuda::core::Clock::now(&*self.clock);
        let u = e.xq.usage();
        let mut look = locks::lock(&e.readiness);
        let then = look.at.replace(now);
        let d = u.since(std::mem::replace(&mut look.usage, u));
        let Some(then) = then.filter(|_| d.ready.0 > 0) else {
            // First look, or no work since the last while let run: nothing to tell.
            return;
        };
        let period = baton_cuda::core::Nanos(now.0.saturating_sub(then.0).saturating_sub(d.held.0));
        if d.waits == 0 {
            // Work, but the program never waited for it: no evidence that the device keeps
            // up with it (a kernel that runs for ever, a program that polls). Whatever was
            // told before no longer holds.
            if look.told.take().is_some() {
                drop(look);
                let wire = baton_agent::WireHint::Clear(baton_agent::WireHintKind::Readiness);
                match s.hint_queue(e.xq.id(), |h, _| h.readiness = None, wire) {
                    Ok(()) => tracing::info!(
                        "{:#x}: had work the last {period}, its program never waited for it: \
                         readiness withdrawn",
                        e.handle as usize,
                    ),
                    Err(err) => tracing::warn!(error = %err, "readiness not withdrawn"),
                }
            }
            return;
        }
        let Some(r) = baton_agent::Readiness::over(d.ready, d.waited, period) else {
            return;
        };
        let changed = look
            .told
            .is_none_or(|w| w.launch_bound() != r.launch_bound());
        if let Some(w) = look.told
            && !changed
            && w.ready.abs_diff(r.ready) < READINESS_STEP
            && w.waiting.abs_diff(r.waiting) < READINESS_STEP
        {
            return;
        }
        look.told = Some(r);
        drop(look);
        let wire = baton_agent::WireHint::Readiness {
            ready_permille: r.ready,
            waiting_permille: r.waiting,
        };
        match s.hint_queue(e.xq.id(), move |h, _| h.readiness = Some(r), wire) {
            Ok(()) if changed => tracing::info!(
                "{:#x}: ready {} ‰, waiting {} ‰ of the last {period}: {}",
                e.handle as usize,
                r.ready,
                r.waiting,
                if r.launch_bound() {
                    "bound by its own launching"
                } else {
                    "not bound by its launching"
                }
            ),
            Ok(()) => tracing::debug!(
                "{:#x}: ready {} ‰, waiting {} ‰ of the last {period}",
                e.handle as usize,
                r.ready,
                r.waiting
            ),
            Err(err) => tracing::warn!(error = %err, "readiness not sent"),
        }
    }

    /// Called on every tick of the guard thread ([`GUARD_TICK`](crate::runtime::GUARD_TICK)):
    /// a stream that told its scheduler a command time and that the scheduler then lets run
    /// without its window for that measure (as HPF does for short commands that another
    /// process's queue outranks: [`XQueue::set_remeasure`]) keeps its window every
    /// [`REMEASURE_EVERY`] ticks until its measure has taken in [`REMEASURE_SAMPLES`] more
    /// samples (or for [`REMEASURE_LONGEST`] ticks), so that the measure follows what it runs.
    /// Unbounded, nothing measures it, and a measure taken on one workload would stand for the
    /// next on the same stream: a training job's warm-up, measured short, left the long GEMMs
    /// that followed it unheld beside the services (docs/BENCHMARKS.md, "Earlier runs"). A
    /// stream of short commands is measured again within milliseconds; what is learnt reaches
    /// the scheduler through [`Runtime::report_command_time`].
    pub(crate) fn remeasure(&self, e: &StreamEntry) {
        if self.link.sched.is_none() || !self.cfg.command_time {
            return;
        }
        let (ticks, from) = &e.remeasure;
        if e.told_command_ns.load(Ordering::Relaxed) == 0 || !e.xq.wants_remeasure() {
            // A queue let go because nothing outranks it (a service) is not measured: that
            // would change no decision, and cost it its window. Setting the wish off ended
            // any measurement under way.
            ticks.store(0, Ordering::Relaxed);
            return;
        }
        let t = ticks.fetch_add(1, Ordering::Relaxed) + 1;
        if t < REMEASURE_EVERY {
            return;
        }
        let samples = e.xq.command_samples();
        if t == REMEASURE_EVERY {
            if e.xq.may_run_unbounded() {
                from.store(samples, Ordering::Relaxed);
                e.xq.set_measuring(true);
            } else {
                // Bounded anyway, and measured as it runs: look again a period later.
                ticks.store(0, Ordering::Relaxed);
            }
        } else if samples >= from.load(Ordering::Relaxed) + REMEASURE_SAMPLES
            || t >= REMEASURE_EVERY + REMEASURE_LONGEST
        {
            e.xq.set_measuring(false);
            ticks.store(0, Ordering::Relaxed);
        }
    }

    /// Once a context's slice is controlled and the process yields to others
    /// (`BATON_YIELD`), tells the daemon (`Hint::Yielding`, once per process): other processes'
    /// work then does not hold it back, since its slice is short whenever it is outranked.
    fn claim_yielding(&self) {
        if !self.cfg.yields_to_others() || !self.link.claim_yield() {
            return;
        }
        if let Some(s) = &self.link.sched {
            let slice_ns = self.cfg.yield_slice_us().saturating_mul(1_000);
            match s.hint_process(baton_agent::WireHint::Yielding { slice_ns }) {
                Ok(()) => tracing::info!(
                    "yielding by time slice ({} µs while outranked): other processes do not hold it back",
                    self.cfg.yield_slice_us()
                ),
                Err(e) => tracing::warn!("yielding not claimed: {e}"),
            }
        }
    }

    /// Takes control of `ctx`'s time slice, for Level 3 (`level3`) or to yield to other
    /// processes, if its compute channel group is known and the driver lets the slice change;
    /// otherwise its queues stay at Level 1 and are held back as before. Only a requested
    /// Level 3 warns when that fails.
    fn start_slice(&self, ctx: CUcontext, level3: bool) -> Option<Arc<ContextSlice>> {
        let unavailable = |why: &str| {
            if level3 {
                tracing::warn!(
                    "level 3 unavailable for context {:#x}: {why}; its queues use level 1",
                    ctx as usize
                );
            } else {
                tracing::debug!(
                    "no time-slice control for context {:#x}: {why}; other processes' work holds it back",
                    ctx as usize
                );
            }
        };
        let channels = crate::channel::channels();
        let Some(group) = channels.group_of(ctx) else {
            let seen: Vec<String> = channels
                .capture
                .groups()
                .iter()
                .map(|g| format!("{:#x} engine {:#x} thread {}", g.handle, g.engine, g.thread))
                .collect();
            unavailable(&format!(
                "its compute channel group was not identified among {} seen ({})",
                seen.len(),
                seen.join(", ")
            ));
            return None;
        };
        match ContextSlice::start(
            Arc::new(Ioctl),
            group,
            SliceValues {
                yield_us: self.cfg.yield_slice_us(),
                normal_us: self.cfg.run_slice_us,
                lead_us: self.cfg.lead_slice_us(),
                off_while_interrupted: self.cfg.l3_off,
            },
        ) {
            Ok(s) => {
                tracing::info!(
                    "time-slice control for context {:#x} ({}): channel group {:#x}, time slice {} µs, {} µs while outranked, {} µs while outranking",
                    ctx as usize,
                    if level3 { "level 3" } else { "yielding" },
                    group.handle,
                    s.normal_us(),
                    s.yield_us(),
                    s.lead_us()
                );
                Some(Arc::new(s))
            }
            Err(e) => {
                unavailable(&e.to_string());
                None
            }
        }
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
        if let Some(slice) = &state.slice {
            hw = hw.with_slice(slice.clone());
        } else if self.cfg.level == baton_cuda::core::Level::L2 {
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
        let level = self
            .cfg
            .level
            .min(baton_cuda::core::HwQueue::max_level(&hw));
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
        let xq = Arc::new(b.build().ok()?);
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
