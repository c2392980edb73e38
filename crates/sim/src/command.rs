//! Simulated commands and the identifiers of simulated objects.

use baton_core::{CommandKind, HwCommand, Nanos};

/// A simulated context (one per simulated process).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ContextId(pub u32);

/// A simulated stream (hardware queue).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId(pub u32);

/// A simulated event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventId(pub u32);

/// A command for the simulated device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimCommand {
    /// What it is.
    pub kind: CommandKind,
    /// How long it takes alone: with all its SMs (kernels, graphs), on the copy engine
    /// (copies, fills) or on the host (host functions). Event records and waits take no time.
    pub duration: Nanos,
    /// SMs a kernel or graph asks for (clamped to the device's count, at least 1).
    pub sms: u32,
    /// The event an event record or wait refers to.
    pub event: Option<EventId>,
    /// A number for the submitter's bookkeeping, reported back on completion.
    pub tag: u64,
}

impl SimCommand {
    fn new(kind: CommandKind, duration: Nanos, sms: u32, event: Option<EventId>) -> Self {
        SimCommand {
            kind,
            duration,
            sms,
            event,
            tag: 0,
        }
    }

    /// A kernel running `duration` on `sms` SMs.
    pub fn kernel(duration: Nanos, sms: u32) -> Self {
        Self::new(CommandKind::Kernel, duration, sms, None)
    }

    /// A captured graph running `duration` on `sms` SMs.
    pub fn graph(duration: Nanos, sms: u32) -> Self {
        Self::new(CommandKind::GraphLaunch, duration, sms, None)
    }

    /// A copy taking `duration` on the copy engine.
    pub fn memcpy(duration: Nanos) -> Self {
        Self::new(CommandKind::Memcpy, duration, 0, None)
    }

    /// A fill taking `duration` on the copy engine.
    pub fn memset(duration: Nanos) -> Self {
        Self::new(CommandKind::Memset, duration, 0, None)
    }

    /// A host function taking `duration` on the host.
    pub fn host_func(duration: Nanos) -> Self {
        Self::new(CommandKind::HostFunc, duration, 0, None)
    }

    /// Records `event`.
    pub fn record(event: EventId) -> Self {
        Self::new(CommandKind::EventRecord, Nanos::ZERO, 0, Some(event))
    }

    /// Waits for the last record of `event` enqueued before this command was launched.
    pub fn wait_event(event: EventId) -> Self {
        Self::new(CommandKind::EventWait, Nanos::ZERO, 0, Some(event))
    }

    /// The same command carrying `tag`.
    pub fn with_tag(mut self, tag: u64) -> Self {
        self.tag = tag;
        self
    }

    /// Whether it runs on SMs.
    pub(crate) fn is_compute(&self) -> bool {
        matches!(self.kind, CommandKind::Kernel | CommandKind::GraphLaunch)
    }

    /// Whether it runs on the copy engine.
    pub(crate) fn is_copy(&self) -> bool {
        matches!(self.kind, CommandKind::Memcpy | CommandKind::Memset)
    }
}

impl HwCommand for SimCommand {
    fn kind(&self) -> CommandKind {
        self.kind
    }
}

/// A completed command, as reported by the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// Its stream.
    pub stream: StreamId,
    /// Its position in the stream (0 for the first command launched there).
    pub index: u64,
    /// Its kind.
    pub kind: CommandKind,
    /// Its tag.
    pub tag: u64,
    /// When it was launched on the device.
    pub launched_at: Nanos,
    /// When it started running.
    pub started_at: Nanos,
    /// When it completed.
    pub ended_at: Nanos,
}
