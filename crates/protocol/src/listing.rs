//! What `baton list` and `baton top` show: every scheduled process and its queues.
//!
//! The CLI prints [`ProcessList`] as a table, or as JSON with `serde_json` for
//! `baton list --json` (field names are the JSON keys; enums are `snake_case`).

use baton_core::LaunchConfig;
use serde::{Deserialize, Serialize};

use crate::hint::check_hint_set;
use crate::{
    ClientId, DeviceRef, Hint, LaunchWindow, MAX_COMMAND_LINE_LEN, MAX_LABEL_LEN,
    MAX_LIST_PROCESSES, MAX_LIST_QUEUES, MAX_NAME_LEN, MAX_QUEUES_PER_CLIENT, ProtocolError,
    QueueId, Scope, WireLevel, check,
};

/// The highest command rate a row may claim (a sanity bound, far above any device).
pub const MAX_COMMANDS_PER_SEC: f64 = 1e12;

/// Scheduled processes (answer to [`Request::List`](crate::Request::List)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessList {
    /// The processes, by pid; at most [`MAX_LIST_PROCESSES`], with at most [`MAX_LIST_QUEUES`]
    /// queues in all.
    pub processes: Vec<ProcessRow>,
    /// Whether processes or queues were left out to respect those limits (ask for one pid to
    /// see it whole).
    pub truncated: bool,
    /// The processes the asker may not see, folded per device (at most
    /// [`MAX_LIST_DEVICES`]): visibility follows the authority to change, so a tenant sees
    /// its own processes and only how many others there are and what they hold.
    pub others: Vec<OthersRow>,
}

/// The most devices a [`ProcessList`] folds others' processes on.
pub const MAX_LIST_DEVICES: usize = 256;

/// Processes on one device that the asker may not see: how many, and what they hold there,
/// with no pid, name, command line, user, pod or job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OthersRow {
    /// The device's machine-wide id (the GPU's UUID).
    pub device: String,
    /// Processes with a queue on it.
    pub processes: u32,
    /// Their queues on it.
    pub queues: u32,
    /// Of those, queues with work.
    pub ready: u32,
    /// Of those, queues held suspended.
    pub suspended: u32,
    /// The lowest priority in force among those queues.
    pub priority_min: i32,
    /// The highest.
    pub priority_max: i32,
    /// Their share of the device's time, recently, in percent (0 to 100).
    pub device_share: f64,
}

/// One process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessRow {
    /// Its pid, as the daemon sees it.
    pub pid: u32,
    /// Its user, from the socket's credentials.
    pub uid: u32,
    /// Its connection.
    pub client: ClientId,
    /// Its short name.
    pub name: String,
    /// Its command line, arguments joined by spaces; may be empty.
    pub command: String,
    /// How long it has been connected, in nanoseconds.
    pub connected_ns: u64,
    /// Process-wide hints in force.
    pub hints: Vec<Hint>,
    /// Its queues, by id.
    pub queues: Vec<QueueRow>,
}

/// One queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueueRow {
    /// Its id in the process.
    pub queue: QueueId,
    /// The agent's description of it; may be empty.
    pub label: String,
    /// Its device.
    pub device: DeviceRef,
    /// Whether it has unfinished work.
    pub ready: bool,
    /// Whether the scheduler holds it suspended.
    pub suspended: bool,
    /// How long it has been ready or idle, in nanoseconds.
    pub since_ns: u64,
    /// Its level; at most `max_level`.
    pub level: WireLevel,
    /// The highest level it supports.
    pub max_level: WireLevel,
    /// Its launch window.
    pub launch: LaunchWindow,
    /// Commands in flight.
    pub in_flight: u32,
    /// Commands submitted, not yet launched.
    pub buffered: u64,
    /// Commands launched since creation.
    pub launched: u64,
    /// Commands completed since creation; at most `launched`.
    pub completed: u64,
    /// Commands completed per second, recently.
    pub commands_per_sec: f64,
    /// Its share of its device's time, recently, in percent (0 to 100).
    pub device_share: f64,
    /// Whether it launches without its in-flight window and sync points: the policy cannot
    /// suspend it now (`Attention`).
    pub unbounded: bool,
    /// Whether it runs so only because its commands were measured short, and keeps its window
    /// now and then to be measured again.
    pub remeasure: bool,
    /// Whether the policy may hold it back, not only keep it suspendable (`Attention`'s
    /// `hold`): its window then also bounds its work in flight by device time.
    pub hold: bool,
    /// Whether it leads its device (`Attention`'s `leading`): it outranks other work there
    /// and nothing can suspend it, so a time-sliced context keeps the GPU longer for it.
    pub leading: bool,
    /// Hints in force for this queue.
    pub hints: Vec<Hint>,
}

impl ProcessList {
    pub(crate) fn validate(&self) -> Result<(), ProtocolError> {
        check::list_len("processes", self.processes.len(), MAX_LIST_PROCESSES)?;
        let queues: usize = self.processes.iter().map(|p| p.queues.len()).sum();
        if queues > MAX_LIST_QUEUES {
            return Err(ProtocolError::invalid(
                "processes",
                format!("{queues} queues in all, the limit is {MAX_LIST_QUEUES}"),
            ));
        }
        for (i, p) in self.processes.iter().enumerate() {
            p.validate()
                .map_err(|e| e.within(&check::at("processes", i)))?;
        }
        check::unique("processes", self.processes.iter().map(|p| p.pid))?;
        check::list_len("others", self.others.len(), MAX_LIST_DEVICES)?;
        for (i, o) in self.others.iter().enumerate() {
            o.validate()
                .map_err(|e| e.within(&check::at("others", i)))?;
        }
        check::unique("others", self.others.iter().map(|o| o.device.as_str()))
    }
}

impl OthersRow {
    fn validate(&self) -> Result<(), ProtocolError> {
        check::text("device", &self.device, MAX_LABEL_LEN)?;
        check::range("processes", self.processes, 1, u32::MAX)?;
        check::range("queues", self.queues, 1, u32::MAX)?;
        check::range("ready", self.ready, 0, self.queues)?;
        check::range("suspended", self.suspended, 0, self.queues)?;
        check::range("priority_min", self.priority_min, -100, self.priority_max)?;
        check::range("priority_max", self.priority_max, self.priority_min, 100)?;
        check::real("device_share", self.device_share, 100.0)
    }
}

impl ProcessRow {
    fn validate(&self) -> Result<(), ProtocolError> {
        check::pid("pid", self.pid)?;
        check::text("name", &self.name, MAX_NAME_LEN)?;
        check::text_or_empty("command", &self.command, MAX_COMMAND_LINE_LEN)?;
        check_hint_set("hints", &self.hints, Scope::Process)?;
        check::list_len("queues", self.queues.len(), MAX_QUEUES_PER_CLIENT)?;
        for (i, q) in self.queues.iter().enumerate() {
            q.validate()
                .map_err(|e| e.within(&check::at("queues", i)))?;
        }
        check::unique("queues", self.queues.iter().map(|q| q.queue))
    }
}

impl QueueRow {
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
                    "level {} is above the maximum {}",
                    self.level.0, self.max_level.0
                ),
            ));
        }
        self.launch.validate()?;
        check::range("in_flight", self.in_flight, 0, LaunchConfig::MAX_THRESHOLD)?;
        if self.completed > self.launched {
            return Err(ProtocolError::invalid(
                "completed",
                format!(
                    "{} commands completed but only {} launched",
                    self.completed, self.launched
                ),
            ));
        }
        check::real(
            "commands_per_sec",
            self.commands_per_sec,
            MAX_COMMANDS_PER_SEC,
        )?;
        check::real("device_share", self.device_share, 100.0)?;
        check_hint_set("hints", &self.hints, Scope::Queue)
    }
}

#[cfg(test)]
mod tests;
