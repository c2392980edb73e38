//! CLI → daemon: requests.
//!
//! The CLI sends one request and reads exactly one [`Reply`](crate::Reply) before the next;
//! replies come in request order. Every request may be answered with
//! [`Reply::Error`](crate::Reply::Error); the table on [`Request`] gives the other answer.
//! Requests that change something are checked against the caller's uid (`SO_PEERCRED`):
//! root, or the user owning every process concerned; otherwise
//! [`ErrorKind::Unauthorized`](crate::ErrorKind::Unauthorized) and nothing changes.

use serde::{Deserialize, Serialize};

use crate::values::check_config_change;
use crate::{
    Hint, LaunchWindow, MAX_FRAME_LEN, MAX_LABEL_LEN, MAX_TRACE_CAPACITY, Message, PolicyParam,
    ProtocolError, QueueRef, Scope, WireLevel, WirePriority, check, policy::check_policy,
};

/// A request from the CLI.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    /// Every scheduled process and its queues (`baton list`, `baton top`), or one process's.
    /// Answer: [`Reply::List`](crate::Reply::List). Anyone may ask.
    List {
        /// Only this process.
        pid: Option<u32>,
    },
    /// Set the priority of a queue or of every queue of a process (`baton priority`): the
    /// same as [`Request::Hint`] with [`Hint::Priority`]. Answer: `Done`.
    SetPriority {
        /// A queue or a process.
        target: Target,
        /// The priority.
        priority: WirePriority,
    },
    /// Give a hint (`baton hint`). Device-wide hints and hints for all devices need root.
    /// Answer: `Done`.
    Hint {
        /// What it is about; must be a scope the hint allows.
        target: Target,
        /// The hint.
        hint: Hint,
    },
    /// The policy in force and the ones available (`baton policy`). Answer:
    /// [`Reply::Policy`](crate::Reply::Policy). Anyone may ask.
    GetPolicy,
    /// Switch policy (`baton policy NAME [KEY=VALUE…]`); hints are kept. Needs root or the
    /// daemon's own user. Answer: `Done`, or `UnknownPolicy` / `InvalidArgument`.
    SetPolicy {
        /// The policy's name, as [`PolicyReport::available`](crate::PolicyReport) lists it.
        name: String,
        /// Its parameters; the policy says which it reads.
        params: Vec<PolicyParam>,
    },
    /// Change the level and/or launch window of a queue or of every queue of a process
    /// (`baton config`). At least one is given. Answer: `Done` once forwarded to the agent;
    /// `Unsupported` if a level is above a queue's maximum.
    SetConfig {
        /// A queue or a process.
        target: Target,
        /// The new level.
        level: Option<WireLevel>,
        /// The new launch window.
        launch: Option<LaunchWindow>,
    },
    /// Start recording a trace of run/suspend spans, queue states and decisions, keeping at
    /// most `capacity` records (later ones are counted as dropped). Needs root or the daemon's
    /// user. Answer: `Done`, or `Busy` if a trace is already recording.
    TraceStart {
        /// Records to keep, `1..=MAX_TRACE_CAPACITY`.
        capacity: u32,
    },
    /// Stop recording. Answer: [`Reply::TraceStopped`](crate::Reply::TraceStopped).
    TraceStop,
    /// Read the stopped trace from record `cursor` (start at 0). Answer:
    /// [`Reply::Trace`](crate::Reply::Trace); read again from its `next` until `complete`.
    TraceRead {
        /// The first record to return.
        cursor: u64,
    },
    /// The daemon's state (`baton doctor`, `baton top`'s header). Answer:
    /// [`Reply::Status`](crate::Reply::Status). Anyone may ask.
    Status,
    /// Stop the daemon: agents are released and run unscheduled. Needs root or the daemon's
    /// user. Answer: `Done`, then the daemon closes the connection.
    Shutdown,
}

/// What a request is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// One queue.
    Queue(QueueRef),
    /// One process, all its queues.
    Process {
        /// The process id, as the daemon sees it (`baton list` shows it).
        pid: u32,
    },
    /// One device, by its machine-wide id (`GPU-…`, `sim-0`).
    Device {
        /// The device's id.
        id: String,
    },
    /// Every device.
    All,
}

impl Target {
    /// The scope this target is.
    pub fn scope(&self) -> Scope {
        match self {
            Target::Queue(_) => Scope::Queue,
            Target::Process { .. } => Scope::Process,
            Target::Device { .. } => Scope::Device,
            Target::All => Scope::All,
        }
    }

    /// Checks the pid or device id.
    pub fn validate(&self) -> Result<(), ProtocolError> {
        match self {
            Target::Queue(q) => q.validate(),
            Target::Process { pid } => check::pid("pid", *pid),
            Target::Device { id } => check::ident("id", id, MAX_LABEL_LEN),
            Target::All => Ok(()),
        }
    }

    /// Checks that the target is a queue or a process.
    fn queue_or_process(&self, what: &str) -> Result<(), ProtocolError> {
        match self.scope() {
            Scope::Queue | Scope::Process => Ok(()),
            s => Err(ProtocolError::invalid(
                "target",
                format!("{what} applies to a queue or a process, not to {s}"),
            )),
        }
    }
}

impl Request {
    /// Checks every field; errors are paths within the variant.
    fn check_fields(&self) -> Result<(), ProtocolError> {
        match self {
            Request::List { pid } => pid.map_or(Ok(()), |p| check::pid("pid", p)),
            Request::SetPriority { target, priority } => {
                target.validate().map_err(|e| e.within("target"))?;
                target.queue_or_process("a priority")?;
                priority.validate()
            }
            Request::Hint { target, hint } => {
                target.validate().map_err(|e| e.within("target"))?;
                hint.validate().map_err(|e| e.within("hint"))?;
                hint.check_scope(target.scope())
            }
            Request::SetPolicy { name, params } => check_policy(name, params),
            Request::SetConfig {
                target,
                level,
                launch,
            } => {
                target.validate().map_err(|e| e.within("target"))?;
                target.queue_or_process("a queue configuration")?;
                check_config_change(*level, *launch)
            }
            Request::TraceStart { capacity } => {
                check::range("capacity", *capacity, 1, MAX_TRACE_CAPACITY)
            }
            Request::GetPolicy
            | Request::TraceStop
            | Request::TraceRead { .. }
            | Request::Status
            | Request::Shutdown => Ok(()),
        }
    }

    /// The variant's name, for logs.
    pub fn name(&self) -> &'static str {
        match self {
            Request::List { .. } => "list",
            Request::SetPriority { .. } => "set_priority",
            Request::Hint { .. } => "hint",
            Request::GetPolicy => "get_policy",
            Request::SetPolicy { .. } => "set_policy",
            Request::SetConfig { .. } => "set_config",
            Request::TraceStart { .. } => "trace_start",
            Request::TraceStop => "trace_stop",
            Request::TraceRead { .. } => "trace_read",
            Request::Status => "status",
            Request::Shutdown => "shutdown",
        }
    }
}

impl Message for Request {
    const NAME: &'static str = "request";
    const MAX_FRAME_LEN: usize = MAX_FRAME_LEN;

    fn validate(&self) -> Result<(), ProtocolError> {
        self.check_fields().map_err(|e| e.within(self.name()))
    }
}

#[cfg(test)]
mod tests;
