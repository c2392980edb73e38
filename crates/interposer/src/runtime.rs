//! The interposer's process-wide state, created on the first intercepted call.
//!
//! `get()` is one atomic load once initialized. Initialization takes a spin lock that a forked
//! child can never find held (the child handler clears the state; see `reset_in_child`), opens
//! the real driver, resolves its functions with the *real* `dlsym` (never the hook, so there is
//! no re-entry), and starts the local scheduler thread when scheduling is local.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};

use baton_agent::{AgentConfig, AgentScheduler};
use baton_cuda::core::MonotonicClock;
use baton_cuda::{CaptureGate, Driver};

use crate::event_table::EventTable;
use crate::functions::Functions;
use crate::registry::{Registry, StreamEntry};
use crate::report::{Report, Stats};
use crate::sched_link::SchedLink;

/// What every launch reads or counts, besides the driver's function pointer: settings copied
/// from the configuration, and the two counters every launch bumps.
#[repr(C)]
pub(crate) struct Hot {
    /// `cfg.enabled`.
    pub(crate) enabled: bool,
    /// `cfg.profile`.
    pub(crate) profile: bool,
    /// Level-2 gates are in use (`cfg.enabled` at Level 2).
    pub(crate) l2_gates: bool,
    /// Kernels and commands submitted, for the report.
    pub(crate) kernels: AtomicU64,
    pub(crate) commands: AtomicU64,
}

/// Everything the hooks share. Laid out so that what a launch touches in it (the driver
/// table's address, [`Hot`], the capture gate's address and the registry's generation, which
/// begins [`Registry`]) shares the first cache line: a framework's own work between two
/// launches evicts it, and each line is a miss on the next launch.
#[repr(C, align(64))]
pub(crate) struct Runtime {
    pub(crate) driver: &'static Driver,
    pub(crate) hot: Hot,
    pub(crate) gate: Arc<CaptureGate>,
    pub(crate) reg: Registry,
    pub(crate) cfg: AgentConfig,
    /// The real driver's `dlopen` handle.
    pub(crate) library: usize,
    pub(crate) events: EventTable,
    /// Kernel functions: parameter layouts, and which were launched (Level 2).
    pub(crate) functions: Functions,
    /// The scheduler and what the process asked of it.
    pub(crate) link: SchedLink,
    pub(crate) clock: Arc<MonotonicClock>,
    pub(crate) stats: Stats,
}

static STATE: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
static INIT_LOCK: AtomicBool = AtomicBool::new(false);
/// Set once initialization failed for good: every hook then passes calls through.
static BROKEN: AtomicBool = AtomicBool::new(false);

/// The runtime, initialized on first use; `None` if the driver cannot be opened.
#[inline]
pub(crate) fn get() -> Option<&'static Runtime> {
    let p = STATE.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: a published runtime is leaked and never freed.
        return Some(unsafe { &*p });
    }
    init()
}

// Out of line: building the runtime needs a large stack frame, which every hook would
// otherwise reserve (and probe) on each call.
#[cold]
#[inline(never)]
fn init() -> Option<&'static Runtime> {
    if BROKEN.load(Ordering::Acquire) {
        return None;
    }
    while INIT_LOCK
        .compare_exchange_weak(false, true, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        std::thread::yield_now();
    }
    let p = STATE.load(Ordering::Acquire);
    let result = if !p.is_null() {
        // SAFETY: see `get`.
        Some(unsafe { &*p })
    } else {
        match build() {
            Ok(rt) => {
                let rt: &'static Runtime = Box::leak(Box::new(rt));
                STATE.store(rt as *const Runtime as *mut Runtime, Ordering::Release);
                register_process_hooks();
                if rt.cfg.enabled {
                    rt.guard_liveness();
                }
                if let Some(secs) = rt.cfg.stall_report_s {
                    rt.watch_stalls(std::time::Duration::from_secs(secs));
                }
                Some(rt)
            }
            Err(why) => {
                // One line: the application runs on, unscheduled.
                baton_agent::log::notice(&format!("baton: {why}; running without Baton"));
                BROKEN.store(true, Ordering::Release);
                None
            }
        }
    };
    INIT_LOCK.store(false, Ordering::Release);
    result
}

/// Why Baton cannot run in this process.
#[derive(Debug, thiserror::Error)]
enum InitError {
    /// The real driver cannot be opened.
    #[error(transparent)]
    Library(#[from] baton_cuda::LibraryError),
    /// The scheduler the settings ask for cannot start.
    #[error(transparent)]
    Scheduler(#[from] baton_agent::StartError),
}

fn build() -> Result<Runtime, InitError> {
    let cfg = AgentConfig::from_env();
    baton_agent::log::init(&cfg);
    for w in cfg.warnings() {
        baton_agent::log::notice(w);
    }
    let handle = baton_cuda::open_library(cfg.cuda_lib.as_deref())?;
    // SAFETY: the lookup is the real dlsym on the driver's handle, which returns the driver's
    // own exports, whose signatures the table declares.
    let driver: &'static Driver = Box::leak(Box::new(unsafe {
        Driver::resolve(|name| crate::libdl::lookup(handle, name.as_ptr()))
    }));
    let clock = Arc::new(MonotonicClock::new());
    let sched = AgentScheduler::start(&cfg, clock.clone())?;
    tracing::info!(
        scheduler = %cfg.scheduler,
        enabled = cfg.enabled,
        "Baton interposer ready"
    );
    let link = SchedLink::new(sched, cfg.priority.get());
    Ok(Runtime {
        driver,
        hot: Hot {
            enabled: cfg.enabled,
            profile: cfg.profile,
            l2_gates: cfg.enabled && cfg.level == baton_cuda::core::Level::L2,
            kernels: AtomicU64::new(0),
            commands: AtomicU64::new(0),
        },
        gate: Arc::new(CaptureGate::default()),
        reg: Registry::default(),
        cfg,
        library: handle as usize,
        events: EventTable::default(),
        functions: Functions::default(),
        link,
        clock,
        stats: Stats::default(),
    })
}

/// Fork handling, registered once per process image.
fn register_process_hooks() {
    static DONE: AtomicBool = AtomicBool::new(false);
    if DONE.swap(true, Ordering::AcqRel) {
        return;
    }
    // SAFETY: the handlers are `extern "C" fn()` with no preconditions.
    unsafe {
        libc::pthread_atfork(None, None, Some(reset_in_child));
        if std::env::var_os("BATON_REPORT").is_some() {
            libc::atexit(report_at_exit);
        }
    }
}

/// Whether this process image registered [`at_exit`] yet.
static EXIT_DRAIN: AtomicBool = AtomicBool::new(false);

/// Registers the exit drain, once. Called when the first queue is created: by then the driver
/// and the CUDA runtime have registered their own exit teardown, and exit handlers run
/// last-registered first, so buffered work is launched before the driver goes away.
pub(crate) fn ensure_exit_drain() {
    if !EXIT_DRAIN.swap(true, Ordering::AcqRel) {
        // SAFETY: the handler is an `extern "C" fn()` with no preconditions.
        unsafe { libc::atexit(at_exit) };
    }
}

/// In a forked child: forget the parent's state (its threads do not exist here; its locks may
/// be held forever). The parent's objects are leaked, never touched. A new runtime is built on
/// the child's first call, and registers its exit drain again after the child's driver did.
extern "C" fn reset_in_child() {
    let p = STATE.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: see `get`; `forget_in_child` takes no lock (async-signal-safe).
        if let Some(s) = &unsafe { &*p }.link.sched {
            s.forget_in_child();
        }
    }
    STATE.store(std::ptr::null_mut(), Ordering::Release);
    crate::channel::reset_in_child();
    INIT_LOCK.store(false, Ordering::Release);
    BROKEN.store(false, Ordering::Release);
    EXIT_DRAIN.store(false, Ordering::Release);
}

/// At exit: every buffered command is handed to the driver, as if the application had launched
/// it directly, and the report is written if asked for.
extern "C" fn at_exit() {
    let _ = std::panic::catch_unwind(|| {
        let p = STATE.load(Ordering::Acquire);
        if p.is_null() {
            return;
        }
        // SAFETY: see `get`.
        let rt = unsafe { &*p };
        // No logging here: thread-local state may already be gone.
        for e in rt.reg.all() {
            let _ = e.xq.resume(baton_cuda::core::ResumeFlags::default());
            let _ = e.xq.flush();
        }
    });
}

/// At exit, last of Baton's handlers: writes the report if `BATON_REPORT` asks for one.
extern "C" fn report_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        let p = STATE.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: see `get`.
            let rt = unsafe { &*p };
            let totals = (
                rt.hot.kernels.load(Ordering::Relaxed),
                rt.hot.commands.load(Ordering::Relaxed),
            );
            let link = rt.link.sched.as_ref().and_then(AgentScheduler::traffic);
            Report::write_if_asked(&rt.stats, totals, &rt.reg, &rt.cfg, link);
        }
    });
}

/// How long nothing may progress, while a suspended queue holds work and a running one waits
/// on the device, before the liveness guard lets the suspended queues through.
const LIVENESS_AFTER: std::time::Duration = std::time::Duration::from_millis(200);

/// How often the guard thread looks at the process's queues.
pub(crate) const GUARD_TICK: std::time::Duration = std::time::Duration::from_millis(25);
/// Guard ticks between two looks at a queue's readiness (`Runtime::report_readiness`): 500 ms,
/// several of a decoder's tokens and dozens of a small service's requests.
pub(crate) const READINESS_TICKS: u64 = 20;

/// Every queue's state at one moment, for the watch threads. A queue whose lock is held stays
/// unread (`None`): the holder may be stuck in the driver, and a watcher must not get stuck
/// behind it.
struct Snapshot {
    entries: Vec<Arc<StreamEntry>>,
    st: Vec<Option<baton_cuda::core::XQueueStatus>>,
}

impl Snapshot {
    fn take(rt: &Runtime) -> Snapshot {
        let entries = rt.reg.all();
        let st = entries.iter().map(|e| e.xq.try_status()).collect();
        Snapshot { entries, st }
    }

    /// The states that could be read.
    fn known(&self) -> impl Iterator<Item = &baton_cuda::core::XQueueStatus> {
        self.st.iter().flatten()
    }

    /// Queues whose lock was held.
    fn locked(&self) -> usize {
        self.st.iter().filter(|s| s.is_none()).count()
    }

    /// Commands launched and completed, over the queues that could be read.
    fn progress(&self) -> (u64, u64) {
        (
            self.known().map(|s| s.submitted - s.pending).sum(),
            self.known().map(|s| s.completed).sum(),
        )
    }
}

/// How long a watched key has stayed the same while work was pending.
struct StallClock {
    last: (u64, u64, u64),
    since: std::time::Instant,
}

impl Default for StallClock {
    fn default() -> Self {
        StallClock {
            last: (0, 0, 0),
            since: std::time::Instant::now(),
        }
    }
}

impl StallClock {
    /// How long `key` has not changed while `pending` held; `None` (and the clock restarts)
    /// when it changed or nothing is pending.
    fn stalled(&mut self, key: (u64, u64, u64), pending: bool) -> Option<std::time::Duration> {
        if key != self.last || !pending {
            self.last = key;
            self.restart();
            return None;
        }
        Some(self.since.elapsed())
    }

    fn restart(&mut self) {
        self.since = std::time::Instant::now();
    }
}

impl Runtime {
    /// Starts the liveness guard. A running queue can wait on the device for a suspended one
    /// through a dependency no API call names (a `cuStreamWaitValue32` on a word the other
    /// stream writes, a driver-internal wait); Baton cannot see it, so it keeps the suspended
    /// queue suspended while the running one never finishes. When no queue of the process
    /// has made progress for [`LIVENESS_AFTER`] while one is suspended with work and another
    /// running one has work launched, every suspended queue launches what it holds and lets
    /// it through its gate. A hang becomes a delay, counted in the report
    /// (`liveness_releases`).
    fn guard_liveness(&'static self) {
        let spawned = std::thread::Builder::new()
            .name("baton-guard".into())
            .spawn(move || {
                let mut clock = StallClock::default();
                let mut tick: u64 = 0;
                loop {
                    std::thread::sleep(GUARD_TICK);
                    tick = tick.wrapping_add(1);
                    let snap = Snapshot::take(self);
                    let readiness = tick % READINESS_TICKS == 0;
                    for e in &snap.entries {
                        self.remeasure(e);
                        self.report_command_time(e);
                        if readiness {
                            self.report_readiness(e);
                        }
                    }
                    // A queue whose lock stays held has a thread inside the driver for it,
                    // launching: one blocked there waits on the device too.
                    let locked = snap.locked() > 0;
                    let held = locked
                        || snap
                            .known()
                            .any(|s| s.suspended && s.submitted > s.completed);
                    let waiting = locked || snap.known().any(|s| !s.suspended && s.inflight > 0);
                    let (launched, completed) = snap.progress();
                    match clock.stalled((launched, completed, 0), held && waiting) {
                        Some(t) if t >= LIVENESS_AFTER => {}
                        _ => continue,
                    }
                    if self.stats.liveness_releases.fetch_add(1, Ordering::Relaxed) == 0 {
                        tracing::warn!(
                            "no queue progressed for {} ms while suspended queues held work: \
                             letting them through (a dependency Baton cannot see, such as a \
                             stream waiting on a value another stream writes)",
                            LIVENESS_AFTER.as_millis()
                        );
                    }
                    for (e, s) in snap.entries.iter().zip(&snap.st) {
                        // A queue whose lock is held may be the suspended one, its gate closed
                        // in front of the launch that holds the lock: open it directly.
                        if s.is_none() {
                            e.xq.hw().force_gate_open();
                        }
                        if let Some(s) = s
                            && s.suspended
                            && s.submitted > s.completed
                        {
                            self.release(e, crate::report::Release::Liveness);
                        }
                    }
                    clock.restart();
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("no liveness guard ({e})");
        }
    }

    /// Starts a thread that prints every queue's state to stderr when none has made progress
    /// for `after` while work is pending (`BATON_STALL_REPORT_S`): what a hung program was
    /// waiting for. Once per stall; progress re-arms it.
    fn watch_stalls(&'static self, after: std::time::Duration) {
        let spawned = std::thread::Builder::new()
            .name("baton-stall".into())
            .spawn(move || {
                let mut clock = StallClock::default();
                let mut reported = false;
                loop {
                    std::thread::sleep(std::time::Duration::from_millis(250));
                    let snap = Snapshot::take(self);
                    let locked = snap.locked() as u64;
                    let (launched, completed) = snap.progress();
                    let waiting = locked > 0 || snap.known().any(|s| s.submitted > s.completed);
                    let stalled = match clock.stalled((launched, completed, locked), waiting) {
                        Some(t) => t,
                        None => {
                            reported = false;
                            continue;
                        }
                    };
                    if reported || stalled < after {
                        continue;
                    }
                    reported = true;
                    let mut lines = vec![format!(
                        "baton: no queue of process {} made progress for {:.1} s; queues with work:",
                        std::process::id(),
                        stalled.as_secs_f64()
                    )];
                    for (e, s) in snap.entries.iter().zip(&snap.st) {
                        let name = format!("baton:   {:?} {:#x} priority {}", e.kind, e.handle as usize, e.priority.current());
                        match s {
                            None => lines.push(format!(
                                "{name}: its lock is held (a thread is launching for it, maybe blocked in the driver)"
                            )),
                            Some(s) if s.submitted > s.completed => lines.push(format!(
                                "{name}: {} buffered, {} launched not known complete, {} submitted, {}{}{}",
                                s.pending,
                                s.inflight,
                                s.submitted,
                                if s.suspended { "suspended" } else { "running" },
                                if e.xq.is_gated() { ", gated" } else { "" },
                                e.xq.hw().confined_sms().map(|n| format!(", on {n} SMs")).unwrap_or_default(),
                            )),
                            Some(_) => {}
                        }
                    }
                    baton_agent::log::notice(&lines.join("\n"));
                }
            });
        if let Err(e) = spawned {
            baton_agent::log::notice(&format!("baton: no stall report ({e})"));
        }
    }
}
