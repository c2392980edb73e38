//! The process-wide state of the fake driver and its handles.
//!
//! # Fork safety
//!
//! All state lives in one [`Global`] that records the pid that created it. [`global`] compares
//! that pid with the caller's: in a child created by `fork()`, the first call finds the parent's
//! `Global`, leaves it untouched (its locks may be held by threads that do not exist in the
//! child, so it is leaked, never dropped or locked) and installs a fresh one. The child then
//! needs `cuInit` again, as with a real driver, and every handle of the parent is unknown to it
//! (handles embed the pid). Thread-local state (the context stack, per-thread streams) carries
//! the pid the same way.
//!
//! # Exit
//!
//! The first `Global` registers an `atexit` handler that waits for all work queued on every
//! stream of the current process, so work an application launched without synchronizing still
//! executes (and is logged) before the process ends. It gives up when no command has completed
//! for [`EXIT_IDLE_LIMIT`] (a stream waiting for a memory value nobody will write).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::{Duration, Instant};

use baton_cuda_sys::CUresult;

use crate::context::{Context, Primary};
use crate::entry::CuResult;
use crate::events::Event;
use crate::graph::{Graph, GraphExec};
use crate::log::Log;
use crate::memory::MemoryTable;
use crate::module::{Function, Library, Module};
use crate::stream::Stream;

/// The kind of object a handle names; its value is the handle's top byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    Context = 1,
    Stream = 2,
    Event = 3,
    Module = 4,
    Library = 5,
    Function = 6,
    Kernel = 7,
    Graph = 8,
    GraphExec = 9,
    Node = 10,
    GreenCtx = 11,
}

/// A handle value given to the application, and the short id the log uses for it.
///
/// `raw` is `kind << 56 | pid << 24 | short`: distinct per kind, never 0, 1 or 2 (the special
/// stream handles), and unknown in any other process, a forked child included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Handle {
    pub raw: u64,
    pub short: u64,
}

/// Objects of one kind by raw handle value.
pub(crate) struct Registry<T> {
    map: Mutex<HashMap<u64, Arc<T>>>,
}

impl<T> Registry<T> {
    fn new() -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
        }
    }

    pub fn insert(&self, raw: u64, value: Arc<T>) {
        lock(&self.map).insert(raw, value);
    }

    pub fn get(&self, raw: u64) -> Option<Arc<T>> {
        lock(&self.map).get(&raw).cloned()
    }

    pub fn remove(&self, raw: u64) -> Option<Arc<T>> {
        lock(&self.map).remove(&raw)
    }

    pub fn all(&self) -> Vec<Arc<T>> {
        lock(&self.map).values().cloned().collect()
    }
}

/// Everything the fake driver knows, for one process.
pub(crate) struct Global {
    pub pid: u32,
    initialized: AtomicBool,
    next_id: AtomicU64,
    /// Commands completed by all workers (progress, for the exit handler).
    pub completed: AtomicU64,
    /// The JSON log, when `FAKE_CUDA_LOG` names a file.
    pub log: Option<Log>,
    /// Extra duration of every kernel (`FAKE_CUDA_KERNEL_US`).
    pub kernel_extra: Duration,
    /// `FAKE_CUDA_LAZY_LOADING`: a function's first launch loads it, which waits for all
    /// pending work of its context, as CUDA's lazy loading does (measured on an H100:
    /// `scripts/gpu/levels/gate_calls.sh`).
    pub lazy_loading: bool,
    pub contexts: Registry<Context>,
    pub primary: Mutex<Primary>,
    pub streams: Registry<Stream>,
    pub events: Registry<Event>,
    pub modules: Registry<Module>,
    pub libraries: Registry<Library>,
    /// Functions and kernels (a kernel is accepted wherever a function is).
    pub functions: Registry<Function>,
    pub graphs: Registry<Graph>,
    pub execs: Registry<GraphExec>,
    pub greens: Registry<crate::green::Green>,
    /// "Device" memory: host allocations the application addresses as device pointers.
    pub memory: RwLock<MemoryTable>,
    /// Captures in progress (see `capture::potentially_unsafe`).
    pub captures: Mutex<Vec<crate::capture::Shared>>,
    /// Handles of unloaded functions and kernels, reused by the next ones loaded.
    pub freed_functions: Mutex<Vec<Handle>>,
}

impl Global {
    fn new(pid: u32) -> Self {
        let kernel_extra = std::env::var("FAKE_CUDA_KERNEL_US")
            .ok()
            .and_then(|us| us.trim().parse::<u64>().ok())
            .map_or(Duration::ZERO, Duration::from_micros);
        Self {
            pid,
            initialized: AtomicBool::new(false),
            next_id: AtomicU64::new(1),
            completed: AtomicU64::new(0),
            log: std::env::var_os("FAKE_CUDA_LOG").and_then(|path| Log::open(path.as_ref())),
            kernel_extra,
            lazy_loading: std::env::var_os("FAKE_CUDA_LAZY_LOADING").is_some(),
            contexts: Registry::new(),
            primary: Mutex::new(Primary::default()),
            streams: Registry::new(),
            events: Registry::new(),
            modules: Registry::new(),
            libraries: Registry::new(),
            functions: Registry::new(),
            graphs: Registry::new(),
            execs: Registry::new(),
            greens: Registry::new(),
            memory: RwLock::new(MemoryTable::default()),
            captures: Mutex::new(Vec::new()),
            freed_functions: Mutex::new(Vec::new()),
        }
    }

    /// A new handle of `kind`.
    pub fn handle(&self, kind: Kind) -> Handle {
        let short = self.next_id.fetch_add(1, Ordering::Relaxed) & 0xff_ffff;
        let raw = (kind as u64) << 56 | u64::from(self.pid) << 24 | short;
        Handle { raw, short }
    }

    /// A new process-unique number (capture ids).
    pub fn next_number(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub fn set_initialized(&self) {
        self.initialized.store(true, Ordering::Release);
    }

    /// Every context, the primary one included, with all their streams.
    pub fn all_contexts(&self) -> Vec<Arc<Context>> {
        self.contexts.all()
    }
}

static GLOBAL: AtomicPtr<Global> = AtomicPtr::new(std::ptr::null_mut());
static AT_EXIT_REGISTERED: AtomicBool = AtomicBool::new(false);

/// The calling process's id.
pub(crate) fn current_pid() -> u32 {
    // SAFETY: getpid has no preconditions and cannot fail.
    let pid = unsafe { libc::getpid() };
    pid.unsigned_abs()
}

/// The calling thread's kernel thread id.
pub(crate) fn current_tid() -> u32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    let tid = unsafe { libc::gettid() };
    tid.unsigned_abs()
}

/// The state of this process, created on first use (and anew in a forked child).
pub(crate) fn global() -> &'static Global {
    let pid = current_pid();
    loop {
        let seen = GLOBAL.load(Ordering::Acquire);
        if !seen.is_null() {
            // SAFETY: a non-NULL GLOBAL points to a Global leaked by Box::into_raw below and
            // never freed, so it is valid for 'static.
            let existing = unsafe { &*seen };
            if existing.pid == pid {
                return existing;
            }
        }
        let fresh = Box::into_raw(Box::new(Global::new(pid)));
        match GLOBAL.compare_exchange(seen, fresh, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                register_at_exit();
                // SAFETY: `fresh` came from Box::into_raw and is now owned by GLOBAL forever.
                return unsafe { &*fresh };
            }
            Err(_) => {
                // SAFETY: `fresh` was never shared: the exchange failed, so we still own it.
                drop(unsafe { Box::from_raw(fresh) });
            }
        }
    }
}

/// The state of this process, or `CUDA_ERROR_NOT_INITIALIZED` before `cuInit`.
pub(crate) fn initialized() -> CuResult<&'static Global> {
    let g = global();
    if g.initialized.load(Ordering::Acquire) {
        Ok(g)
    } else {
        Err(CUresult::NOT_INITIALIZED)
    }
}

fn register_at_exit() {
    if !AT_EXIT_REGISTERED.swap(true, Ordering::AcqRel) {
        // SAFETY: `drain_at_exit` is an `extern "C" fn()` that never unwinds; the library is
        // linked with `-z nodelete`, so the handler's code stays mapped until exit.
        unsafe { libc::atexit(drain_at_exit) };
    }
}

/// How long the exit handler waits without any command completing before it gives up.
pub(crate) const EXIT_IDLE_LIMIT: Duration = Duration::from_secs(5);

extern "C" fn drain_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        let seen = GLOBAL.load(Ordering::Acquire);
        if seen.is_null() {
            return;
        }
        // SAFETY: see `global`: a non-NULL GLOBAL is a leaked, never-freed Global.
        let g = unsafe { &*seen };
        if g.pid != current_pid() {
            return;
        }
        let mut progress = g.completed.load(Ordering::Acquire);
        let mut deadline = Instant::now() + EXIT_IDLE_LIMIT;
        for ctx in g.all_contexts() {
            for dep in ctx.all_pending() {
                while !dep.wait_until(deadline) {
                    let now = g.completed.load(Ordering::Acquire);
                    if now == progress {
                        return;
                    }
                    progress = now;
                    deadline = Instant::now() + EXIT_IDLE_LIMIT;
                }
            }
        }
    });
}

/// A handle value as the pointer the application sees.
#[allow(clippy::cast_possible_truncation)] // usize is 64 bits: see lib.rs.
pub(crate) fn to_ptr<T>(raw: u64) -> *mut T {
    std::ptr::without_provenance_mut(raw as usize)
}

/// The value of a handle the application passed.
pub(crate) fn raw_of<T>(handle: *mut T) -> u64 {
    handle.addr() as u64
}

/// Locks `mutex`, ignoring poisoning (a panic was already turned into an error code).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `condvar`, ignoring poisoning.
pub(crate) fn wait<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    condvar.wait(guard).unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `condvar` until `deadline`, ignoring poisoning.
pub(crate) fn wait_until<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    deadline: Instant,
) -> MutexGuard<'a, T> {
    let timeout = deadline.saturating_duration_since(Instant::now());
    condvar
        .wait_timeout(guard, timeout)
        .unwrap_or_else(PoisonError::into_inner)
        .0
}
