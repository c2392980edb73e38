//! Agent → daemon: events from one application process.
//!
//! After the [`Welcome`](crate::Welcome) the agent sends [`AgentMessage::ProcessStarted`]
//! once, then queue and hint events as they happen. It never waits for an answer: the daemon
//! answers only with [`DaemonMessage`](crate::DaemonMessage)s, at its own pace, and the agent
//! must keep the application running if the daemon is slow or gone (fail-open: on
//! disconnection it resumes every queue and, on reconnecting, announces the process and
//! every live queue again with its current state).
//!
//! Times (`at_ns`) are the agent's own monotonic clock. They are comparable only within one
//! connection: the daemon uses them to order and measure one client's events, and stamps
//! arrivals with its own clock for anything across clients.

use serde::{Deserialize, Serialize};

use crate::hint::check_hint_set;
use crate::{
    DeviceRef, Hint, LaunchWindow, MAX_ARGS, MAX_COMMAND_LINE_LEN, MAX_FRAME_LEN, MAX_LABEL_LEN,
    MAX_MESSAGE_LEN, MAX_NAME_LEN, MAX_QUEUES_PER_CLIENT, Message, ProtocolError, QueueId, Scope,
    WireLevel, check, sanitize_text,
};
use baton_core::LaunchConfig;

/// An event from an agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentMessage {
    /// The process is here. First message after the welcome, once per connection.
    ProcessStarted(ProcessStarted),
    /// The process is exiting (sent from an exit hook when one runs; a crash shows only as
    /// the connection closing). Last message on the connection.
    ProcessExiting {
        /// The exit status, when known.
        exit_code: Option<i32>,
    },
    /// A queue was created (or, after a reconnection, still exists).
    QueueCreated(QueueCreated),
    /// A queue was destroyed; its id is not reused.
    QueueDestroyed {
        /// The queue.
        queue: QueueId,
    },
    /// A queue's level or launch window changed: after a
    /// [`DaemonMessage::Configure`](crate::DaemonMessage::Configure) or on the application's
    /// own request. Reports the values now in force.
    QueueConfigChanged {
        /// The queue.
        queue: QueueId,
        /// Its level now.
        level: WireLevel,
        /// Its launch window now.
        launch: LaunchWindow,
    },
    /// A queue became ready or idle.
    QueueState(QueueStateChange),
    /// The application gave a hint about one of its queues or about itself.
    Hint {
        /// What the hint is about.
        target: AgentTarget,
        /// The hint.
        hint: Hint,
    },
    /// Periodic counters, at the interval the daemon asked for.
    Stats(StatsReport),
    /// The [`DaemonMessage::Operations`](crate::DaemonMessage::Operations) numbered `seq` has
    /// been applied to the queues.
    Applied {
        /// Its sequence number.
        seq: u64,
    },
    /// A [`DaemonMessage::Configure`](crate::DaemonMessage::Configure) could not be applied;
    /// the queue keeps its configuration.
    ConfigFailed {
        /// The queue.
        queue: QueueId,
        /// Why, in words.
        message: String,
    },
    /// Answer to [`DaemonMessage::Ping`](crate::DaemonMessage::Ping).
    Pong {
        /// The ping's nonce.
        nonce: u64,
    },
}

/// A process announces itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessStarted {
    /// Its process id as it sees it (informational: the daemon uses `SO_PEERCRED`).
    pub pid: u32,
    /// Its short name (`comm`), at most [`MAX_NAME_LEN`] bytes.
    pub name: String,
    /// Its command line, at most [`MAX_ARGS`] arguments and [`MAX_COMMAND_LINE_LEN`] bytes in
    /// all; arguments may be empty. Use [`ProcessStarted::new`] to fit it.
    pub argv: Vec<String>,
    /// Process-wide hints from its environment (`BATON_PRIORITY`, …).
    pub hints: Vec<Hint>,
}

impl ProcessStarted {
    /// The announcement of a process, with `name` and `argv` sanitized and cut to fit the
    /// limits (arguments past them are dropped).
    pub fn new<S: AsRef<str>>(pid: u32, name: &str, argv: &[S], hints: Vec<Hint>) -> Self {
        let mut name = sanitize_text(name, MAX_NAME_LEN);
        if name.is_empty() {
            name.push('?');
        }
        let mut left = MAX_COMMAND_LINE_LEN;
        let mut args = Vec::new();
        for a in argv.iter().take(MAX_ARGS) {
            let a = sanitize_text(a.as_ref(), left);
            left -= a.len();
            args.push(a);
            if left == 0 {
                break;
            }
        }
        ProcessStarted {
            pid,
            name,
            argv: args,
            hints,
        }
    }

    fn validate(&self) -> Result<(), ProtocolError> {
        check::pid("pid", self.pid)?;
        check::text("name", &self.name, MAX_NAME_LEN)?;
        check::list_len("argv", self.argv.len(), MAX_ARGS)?;
        let total: usize = self.argv.iter().map(String::len).sum();
        if total > MAX_COMMAND_LINE_LEN {
            return Err(ProtocolError::invalid(
                "argv",
                format!("{total} bytes of command line, the limit is {MAX_COMMAND_LINE_LEN}"),
            ));
        }
        for (i, a) in self.argv.iter().enumerate() {
            check::text_or_empty(&check::at("argv", i), a, MAX_COMMAND_LINE_LEN)?;
        }
        check_hint_set("hints", &self.hints, Scope::Process)
    }
}

/// A queue is announced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueCreated {
    /// Its id in the process.
    pub queue: QueueId,
    /// A short description for `baton list` (`stream 0x7f3a…`, `default stream`); may be empty.
    pub label: String,
    /// The device it runs on.
    pub device: DeviceRef,
    /// Its level now; at most `max_level`.
    pub level: WireLevel,
    /// The highest level its hardware queue supports; the daemon never asks for more.
    pub max_level: WireLevel,
    /// Its launch window now.
    pub launch: LaunchWindow,
    /// Hints given for it at creation (stream priority, environment).
    pub hints: Vec<Hint>,
    /// Whether it has unfinished work now.
    pub ready: bool,
    /// The number of its last ready/idle transition (0 if none yet): odd when ready, even when
    /// idle. Later [`QueueStateChange`]s continue from it.
    pub transition: u64,
    /// When it was announced.
    pub at_ns: u64,
}

impl QueueCreated {
    fn validate(&self) -> Result<(), ProtocolError> {
        check::text_or_empty("label", &self.label, MAX_LABEL_LEN)?;
        self.device.validate().map_err(|e| e.within("device"))?;
        self.level.validate()?;
        self.max_level
            .validate()
            .map_err(|e| ProtocolError::invalid("max_level", e.to_string()))?;
        if self.level > self.max_level {
            return Err(ProtocolError::invalid(
                "level",
                format!(
                    "level {} is above the queue's maximum {}",
                    self.level.0, self.max_level.0
                ),
            ));
        }
        self.launch.validate()?;
        check_hint_set("hints", &self.hints, Scope::Queue)?;
        check_parity(self.ready, self.transition)
    }
}

/// A queue changed between idle and ready (see
/// [`QueueEvent`](baton_core::QueueEvent)). Two changes of one queue may be sent in either
/// order from different threads: the daemon keeps the one with the highest `transition`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueStateChange {
    /// The queue.
    pub queue: QueueId,
    /// Ready (unfinished work) or idle.
    pub ready: bool,
    /// The queue's transition number, from 1: odd ones are idle→ready, even ones ready→idle.
    pub transition: u64,
    /// When it happened.
    pub at_ns: u64,
}

/// Ready must go with odd transition numbers and idle with even ones (0: never ready).
fn check_parity(ready: bool, transition: u64) -> Result<(), ProtocolError> {
    if ready != (transition % 2 == 1) {
        return Err(ProtocolError::invalid(
            "transition",
            format!(
                "transition {transition} cannot leave the queue {}: odd transitions make a queue \
                 ready, even ones idle",
                if ready { "ready" } else { "idle" }
            ),
        ));
    }
    Ok(())
}

/// What an application's hint is about: one of its queues, or itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentTarget {
    /// One of the process's queues.
    Queue(QueueId),
    /// The whole process.
    Process,
}

impl AgentTarget {
    /// The scope this target is.
    pub fn scope(self) -> Scope {
        match self {
            AgentTarget::Queue(_) => Scope::Queue,
            AgentTarget::Process => Scope::Process,
        }
    }
}

/// Counters of every live queue of the process, for `baton top`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatsReport {
    /// When the counters were read.
    pub at_ns: u64,
    /// One entry per queue, at most [`MAX_QUEUES_PER_CLIENT`], each queue once.
    pub queues: Vec<QueueStats>,
}

/// One queue's counters. All but `in_flight` count from the queue's creation, so the daemon
/// derives rates from two reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueStats {
    /// The queue.
    pub queue: QueueId,
    /// Commands launched on the hardware queue.
    pub launched: u64,
    /// Commands completed; at most `launched`.
    pub completed: u64,
    /// Commands in flight now; at most [`LaunchConfig::MAX_THRESHOLD`].
    pub in_flight: u32,
    /// Commands submitted but not yet launched.
    pub buffered: u64,
    /// Total time with at least one command in flight, in nanoseconds.
    pub busy_ns: u64,
}

impl StatsReport {
    fn validate(&self) -> Result<(), ProtocolError> {
        check::list_len("queues", self.queues.len(), MAX_QUEUES_PER_CLIENT)?;
        for (i, q) in self.queues.iter().enumerate() {
            let at = check::at("queues", i);
            if q.completed > q.launched {
                return Err(ProtocolError::invalid(
                    format!("{at}.completed"),
                    format!(
                        "{} commands completed but only {} launched",
                        q.completed, q.launched
                    ),
                ));
            }
            check::range(
                &format!("{at}.in_flight"),
                q.in_flight,
                0,
                LaunchConfig::MAX_THRESHOLD,
            )?;
        }
        check::unique("queues", self.queues.iter().map(|q| q.queue))
    }
}

impl AgentMessage {
    /// Checks every field; errors are paths within the variant.
    fn check_fields(&self) -> Result<(), ProtocolError> {
        match self {
            AgentMessage::ProcessStarted(p) => p.validate(),
            AgentMessage::QueueCreated(q) => q.validate(),
            AgentMessage::QueueConfigChanged { level, launch, .. } => {
                level.validate().and_then(|()| launch.validate())
            }
            AgentMessage::QueueState(s) => {
                check::range("transition", s.transition, 1, u64::MAX)?;
                check_parity(s.ready, s.transition)
            }
            AgentMessage::Hint { target, hint } => {
                hint.validate().map_err(|e| e.within("hint"))?;
                hint.check_scope(target.scope())
            }
            AgentMessage::Stats(s) => s.validate(),
            AgentMessage::ConfigFailed { message, .. } => {
                check::text("message", message, MAX_MESSAGE_LEN)
            }
            AgentMessage::ProcessExiting { .. }
            | AgentMessage::QueueDestroyed { .. }
            | AgentMessage::Applied { .. }
            | AgentMessage::Pong { .. } => Ok(()),
        }
    }

    /// The variant's name, for logs.
    pub fn name(&self) -> &'static str {
        match self {
            AgentMessage::ProcessStarted(_) => "process_started",
            AgentMessage::ProcessExiting { .. } => "process_exiting",
            AgentMessage::QueueCreated(_) => "queue_created",
            AgentMessage::QueueDestroyed { .. } => "queue_destroyed",
            AgentMessage::QueueConfigChanged { .. } => "queue_config_changed",
            AgentMessage::QueueState(_) => "queue_state",
            AgentMessage::Hint { .. } => "hint",
            AgentMessage::Stats(_) => "stats",
            AgentMessage::Applied { .. } => "applied",
            AgentMessage::ConfigFailed { .. } => "config_failed",
            AgentMessage::Pong { .. } => "pong",
        }
    }
}

impl Message for AgentMessage {
    const NAME: &'static str = "agent message";
    const MAX_FRAME_LEN: usize = MAX_FRAME_LEN;

    fn validate(&self) -> Result<(), ProtocolError> {
        self.check_fields().map_err(|e| e.within(self.name()))
    }
}

#[cfg(test)]
mod tests;
