//! The objects the API hands out, by handle, for one process: contexts (and each device's
//! primary one),
//! streams, events, modules, libraries, functions, graphs, green contexts and captures in
//! progress; the handles that name them; whether `cuInit` was called.
//!
//! The state that executing commands needs (memory, the log, …) is the machine's
//! (`machine.rs`), below the object types; this registry is above them, only API code uses it,
//! and it holds its process's machine for that code.
//!
//! # Fork safety
//!
//! The registry is a [`PerProcess`] value: a forked child's first call installs a fresh one,
//! leaving the parent's (and its locks) untouched. The child then needs `cuInit` again, as with
//! a real driver, and every handle of the parent is unknown to it (handles embed the pid).
//! Thread-local state (the context stack, per-thread streams: `current.rs`) carries the pid the
//! same way.
//!
//! # Exit
//!
//! The first registry registers an `atexit` handler that waits for all work queued on every
//! stream of the current process, so work an application launched without synchronizing still
//! executes (and is logged) before the process ends. It gives up when no command has completed
//! for [`EXIT_IDLE_LIMIT`] (a stream waiting for a memory value nobody will write).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton_cuda_sys::CUresult;

use crate::capture::Shared;
use crate::context::{Context, Primary};
use crate::events::Event;
use crate::green::Green;
use crate::handle::{Handle, Kind};
use crate::machine::{Machine, machine};
use crate::module::{Function, Library, Module};
use crate::ops::{Graph, GraphExec};
use crate::process::PerProcess;
use crate::result::CuResult;
use crate::stream::Stream;
use crate::sync::lock;

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

/// Every object the fake driver handed out, for one process, and the process's machine.
pub(crate) struct Global {
    pub pid: u32,
    /// The machine state of the same process.
    pub machine: &'static Machine,
    initialized: AtomicBool,
    next_id: AtomicU64,
    pub contexts: Registry<Context>,
    /// The primary context of each device, by ordinal.
    pub primary: Mutex<BTreeMap<i32, Primary>>,
    pub streams: Registry<Stream>,
    pub events: Registry<Event>,
    pub modules: Registry<Module>,
    pub libraries: Registry<Library>,
    /// Functions and kernels (a kernel is accepted wherever a function is).
    pub functions: Registry<Function>,
    pub graphs: Registry<Graph>,
    pub execs: Registry<GraphExec>,
    pub greens: Registry<Green>,
    /// Captures in progress (see `capture_api::potentially_unsafe`).
    pub captures: Mutex<Vec<Shared>>,
    /// Handles of unloaded functions and kernels, reused by the next ones loaded.
    pub freed_functions: Mutex<Vec<Handle>>,
}

impl Global {
    fn new(pid: u32) -> Self {
        register_at_exit();
        Self {
            pid,
            machine: machine(),
            initialized: AtomicBool::new(false),
            next_id: AtomicU64::new(1),
            contexts: Registry::new(),
            primary: Mutex::new(BTreeMap::new()),
            streams: Registry::new(),
            events: Registry::new(),
            modules: Registry::new(),
            libraries: Registry::new(),
            functions: Registry::new(),
            graphs: Registry::new(),
            execs: Registry::new(),
            greens: Registry::new(),
            captures: Mutex::new(Vec::new()),
            freed_functions: Mutex::new(Vec::new()),
        }
    }

    /// A new handle of `kind`.
    pub fn handle(&self, kind: Kind) -> Handle {
        let short = self.next_id.fetch_add(1, Ordering::Relaxed) & 0xff_ffff;
        Handle::new(kind, self.pid, short)
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

static GLOBAL: PerProcess<Global> = PerProcess::new();
static AT_EXIT_REGISTERED: AtomicBool = AtomicBool::new(false);

/// The state of this process, created on first use (and anew in a forked child).
pub(crate) fn global() -> &'static Global {
    GLOBAL.get(Global::new)
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
        let Some(g) = GLOBAL.existing() else {
            return;
        };
        let completed = &g.machine.completed;
        let mut progress = completed.load(Ordering::Acquire);
        let mut deadline = Instant::now() + EXIT_IDLE_LIMIT;
        for ctx in g.all_contexts() {
            for dep in ctx.streams.all_pending() {
                while !dep.wait_until(deadline) {
                    let now = completed.load(Ordering::Acquire);
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
