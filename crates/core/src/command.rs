//! Commands: the units of work an [`XQueue`](crate::XQueue) buffers and launches.

use std::fmt;

/// What a command does on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CommandKind {
    /// A compute kernel launch.
    Kernel,
    /// A memory copy (any direction).
    Memcpy,
    /// A memory fill.
    Memset,
    /// Recording an event: marks a point in the queue others may wait for.
    EventRecord,
    /// Waiting for an event recorded on another queue.
    EventWait,
    /// A host function run in queue order.
    HostFunc,
    /// A whole captured graph launched as one command.
    GraphLaunch,
}

impl CommandKind {
    /// Every kind, in declaration order.
    pub const ALL: [CommandKind; 7] = [
        CommandKind::Kernel,
        CommandKind::Memcpy,
        CommandKind::Memset,
        CommandKind::EventRecord,
        CommandKind::EventWait,
        CommandKind::HostFunc,
        CommandKind::GraphLaunch,
    ];

    /// The properties a command of this kind has unless its backend knows better.
    ///
    /// - Everything the device executes can be deactivated (held back before it starts);
    ///   a host function runs on a host thread the device does not gate.
    /// - Copies, fills, event records and waits give the same result when re-run; kernels,
    ///   graphs and host functions may not (atomics, in-place updates, side effects).
    pub const fn default_props(self) -> CommandProps {
        match self {
            CommandKind::Kernel | CommandKind::GraphLaunch => CommandProps {
                deactivatable: true,
                idempotent: false,
            },
            CommandKind::Memcpy
            | CommandKind::Memset
            | CommandKind::EventRecord
            | CommandKind::EventWait => CommandProps {
                deactivatable: true,
                idempotent: true,
            },
            CommandKind::HostFunc => CommandProps {
                deactivatable: false,
                idempotent: false,
            },
        }
    }

    /// A short lower-case name, as shown in traces and listings.
    pub const fn name(self) -> &'static str {
        match self {
            CommandKind::Kernel => "kernel",
            CommandKind::Memcpy => "memcpy",
            CommandKind::Memset => "memset",
            CommandKind::EventRecord => "event-record",
            CommandKind::EventWait => "event-wait",
            CommandKind::HostFunc => "host-func",
            CommandKind::GraphLaunch => "graph-launch",
        }
    }
}

impl fmt::Display for CommandKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the scheduler may do with a command once it has been launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CommandProps {
    /// The device can be told not to start it after it was launched (Level 2).
    pub deactivatable: bool,
    /// Running it twice gives the same result as once, so an interrupted run may be redone
    /// from the start (Level 3 on hardware that cannot resume mid-command).
    pub idempotent: bool,
}

/// One unit of work on a hardware queue, in the form its backend launches it.
///
/// A backend's command type owns everything it needs to launch later (deferred launches
/// deep-copy their arguments before the application's call returns).
pub trait HwCommand: Send + 'static {
    /// What the command does.
    fn kind(&self) -> CommandKind;

    /// What may be done with it once launched; the kind's defaults unless overridden.
    fn props(&self) -> CommandProps {
        self.kind().default_props()
    }
}

/// The position of a command in its XQueue: 0 for the first command ever submitted, then 1, 2…
///
/// Sequence numbers are never reused; they order a queue's commands exactly as submitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CommandSeq(pub u64);

impl fmt::Display for CommandSeq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Where a submitted command is in its life. States only move forward:
/// pending → in flight → completed.
///
/// (Before submission a command is merely *created*: it is a value the caller owns, and the
/// XQueue does not know it.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CommandState {
    /// Submitted and buffered in the XQueue, not yet handed to the hardware.
    Pending,
    /// Launched on the hardware queue, not yet known to be complete.
    InFlight,
    /// Known to be complete.
    Completed,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_props_match_documentation() {
        for kind in CommandKind::ALL {
            let p = kind.default_props();
            assert_eq!(p.deactivatable, kind != CommandKind::HostFunc, "{kind}");
            let idempotent = matches!(
                kind,
                CommandKind::Memcpy
                    | CommandKind::Memset
                    | CommandKind::EventRecord
                    | CommandKind::EventWait
            );
            assert_eq!(p.idempotent, idempotent, "{kind}");
        }
    }

    #[test]
    fn states_are_ordered_forward() {
        assert!(CommandState::Pending < CommandState::InFlight);
        assert!(CommandState::InFlight < CommandState::Completed);
    }
}
