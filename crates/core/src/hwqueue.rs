//! The hardware adapter contract.

use std::ops::Range;

use crate::{CommandSeq, HwCommand, Level};

/// The commands an XQueue had in flight when it was suspended: `start..end` in its sequence
/// numbers. Backends that must re-launch work on reactivation or restore use it to know which
/// commands the XQueue still considers in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InflightRange {
    /// The oldest command not known to be complete.
    pub start: CommandSeq,
    /// One past the newest launched command.
    pub end: CommandSeq,
}

impl InflightRange {
    /// The range as sequence numbers.
    pub fn seqs(self) -> Range<u64> {
        self.start.0..self.end.0
    }

    /// How many commands are in flight.
    pub fn len(self) -> u64 {
        self.end.0.saturating_sub(self.start.0)
    }

    /// Whether nothing is in flight.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
}

/// A backend failed, or was asked for something it cannot do.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HwError {
    /// The backend does not implement this level's operations.
    #[error("this hardware queue does not support level {0}")]
    Unsupported(Level),
    /// Waiting would block, but the queue is driven in virtual time where nothing may block.
    #[error("this queue runs in virtual time, where waiting would block forever; poll it instead")]
    WouldBlock,
    /// The hardware queue cannot take this request now, and nothing is lost by asking again
    /// later (a CUDA stream that records into a graph instead of executing: a sync point placed
    /// there would become part of the application's graph). Only [`HwQueue::sync_point`]
    /// returns it; the XQueue then places the sync point later.
    #[error("the hardware queue cannot take a sync point now; try again later")]
    Busy,
    /// The device or driver returned an error.
    #[error("{backend} error {code}: {message}")]
    Backend {
        /// Which backend (`"cuda"`, `"sim"`, …).
        backend: &'static str,
        /// The backend's own error code (a `CUresult` for CUDA).
        code: i64,
        /// What the backend said.
        message: String,
    },
}

/// One hardware command queue (a CUDA stream, a simulated queue…) as an XQueue drives it.
///
/// # Threads
///
/// `launch` is called from two kinds of threads: the application thread that submits (when the
/// queue's buffer is empty and the in-flight window has room) and the queue's launch worker, on
/// which [`HwQueue::on_create`] ran first. `sync_point` is called from those and from
/// application threads that query or wait. The XQueue never calls `launch` or `sync_point`
/// concurrently for one queue (it holds its state lock). Every other method may be called from
/// any thread, concurrently with those.
///
/// # Levels
///
/// A backend declares its highest level with [`HwQueue::max_level`] and implements that level's
/// operations; the defaults return [`HwError::Unsupported`], and an XQueue refuses to be set to
/// a level it does not [`HwQueue::supports`], so an unsupported operation is never silently skipped.
pub trait HwQueue: Send + Sync + 'static {
    /// The backend's command type.
    type Command: HwCommand;
    /// A point in this queue's command stream whose completion can be observed (a CUDA event, a
    /// simulated marker). Cloning shares it; the backend reclaims it when the last clone drops.
    type SyncPoint: Clone + Send + Sync + 'static;

    /// The highest preemption level this queue supports.
    fn max_level(&self) -> Level;

    /// Whether this queue supports `level` (default: every level up to
    /// [`HwQueue::max_level`]). A backend with a Level-3 mechanism but no Level-2 one says so
    /// here; an XQueue refuses an unsupported level.
    fn supports(&self, level: Level) -> bool {
        level <= self.max_level()
    }

    /// Whether a scheduler may suspend this queue soon (`true`, the initial state) or none of
    /// its decisions can now (`false`; see `XQueue::set_unbounded`). A backend whose
    /// suspension takes effect slowly can prepare while preemptible; the default ignores it.
    /// Called with the queue's state lock held: must not block.
    fn set_preemptible(&self, preemptible: bool) {
        let _ = preemptible;
    }

    /// Whether this queue outranks other work on its device now (a scheduler's answer, with
    /// [`HwQueue::set_preemptible`]: see `QueueControl::set_leading`). A backend that shares
    /// the device by time slices can keep it longer for such a queue while it runs freely;
    /// the default ignores it. Must not block.
    fn set_leading(&self, leading: bool) {
        let _ = leading;
    }

    /// Runs once on the launch worker thread before it launches anything (e.g. to make the
    /// stream's context current on that thread).
    fn on_create(&self) -> Result<(), HwError> {
        Ok(())
    }

    /// Hands `cmd` to the hardware. Must not wait for the device.
    fn launch(&self, cmd: Self::Command) -> Result<(), HwError>;

    /// A sync point after every command launched so far: it is reached once they all complete.
    /// Called right after a launch, on the launching thread, so it is that command's sync
    /// point and sits in the queue exactly where the application's own order puts it; or later,
    /// with nothing launched in between, to cover launches made without one. May return
    /// [`HwError::Busy`] when none can be placed now: the XQueue asks again later.
    fn sync_point(&self) -> Result<Self::SyncPoint, HwError>;

    /// Whether `sp` has been reached. Never blocks.
    fn is_reached(&self, sp: &Self::SyncPoint) -> Result<bool, HwError>;

    /// Whether every command launched so far has completed. Never blocks, and never adds
    /// anything to the hardware queue (the application may be querying or synchronizing it).
    fn query_idle(&self) -> Result<bool, HwError>;

    /// Blocks until `sp` is reached.
    fn wait(&self, sp: &Self::SyncPoint) -> Result<(), HwError>;

    /// Blocks until every launched command has completed.
    fn synchronize(&self) -> Result<(), HwError>;

    /// Level 2: the device stops starting launched commands (running ones finish).
    fn deactivate(&self) -> Result<(), HwError> {
        Err(HwError::Unsupported(Level::L2))
    }

    /// Level 2: undoes [`HwQueue::deactivate`]; `inflight` are the commands the XQueue still
    /// counts as in flight, to be re-launched if the backend dropped them.
    fn reactivate(&self, inflight: InflightRange) -> Result<(), HwError> {
        let _ = inflight;
        Err(HwError::Unsupported(Level::L2))
    }

    /// Level 3: stops the running command as well, keeping what is needed to resume or re-run it.
    fn interrupt(&self) -> Result<(), HwError> {
        Err(HwError::Unsupported(Level::L3))
    }

    /// Level 3: undoes [`HwQueue::interrupt`]; `inflight` as for [`HwQueue::reactivate`].
    fn restore(&self, inflight: InflightRange) -> Result<(), HwError> {
        let _ = inflight;
        Err(HwError::Unsupported(Level::L3))
    }
}
