//! The machine: what every executed command needs, for one process.
//!
//! The device memory table, the count of completed commands, the log and the settings that
//! change how commands execute (`FAKE_CUDA_KERNEL_US`, `FAKE_CUDA_LAZY_LOADING`), and the
//! devices the process sees (`devices.rs`). The objects the
//! API hands out (contexts, streams, events, …) are registered in `state.rs`, above the types
//! they hold; this state sits below them, so that executing a command needs nothing of the API.
//!
//! Like the registries, it is per process and starts anew in a forked child, never touching
//! the parent's locks (see `process.rs`).

use std::sync::RwLock;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use crate::devices::Devices;
use crate::log::Log;
use crate::memory::MemoryTable;
use crate::process::PerProcess;

/// The machine state of one process.
pub(crate) struct Machine {
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
    /// "Device" memory: host allocations the application addresses as device pointers.
    pub memory: RwLock<MemoryTable>,
    /// The devices the process sees (`FAKE_CUDA_DEVICES`, `CUDA_VISIBLE_DEVICES`).
    pub devices: Devices,
}

impl Machine {
    fn new() -> Self {
        let kernel_extra = std::env::var("FAKE_CUDA_KERNEL_US")
            .ok()
            .and_then(|us| us.trim().parse::<u64>().ok())
            .map_or(Duration::ZERO, Duration::from_micros);
        Self {
            completed: AtomicU64::new(0),
            log: std::env::var_os("FAKE_CUDA_LOG").and_then(|path| Log::open(path.as_ref())),
            kernel_extra,
            lazy_loading: std::env::var_os("FAKE_CUDA_LAZY_LOADING").is_some(),
            memory: RwLock::new(MemoryTable::default()),
            devices: Devices::from_env(),
        }
    }
}

static MACHINE: PerProcess<Machine> = PerProcess::new();

/// The machine state of this process, created on first use (and anew in a forked child).
pub(crate) fn machine() -> &'static Machine {
    MACHINE.get(|_| Machine::new())
}
