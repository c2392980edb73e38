//! Daemon → agent: operations on one process's queues.
//!
//! The daemon sends only what changes: an [`Operations`] frame lists the queues whose run or
//! suspend decision changed since the last one, so an unchanged decision costs nothing. The
//! agent applies each frame in order and answers
//! [`AgentMessage::Applied`](crate::AgentMessage::Applied).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::handshake::check_stats_interval;
use crate::values::check_config_change;
use crate::{
    ErrorReply, LaunchWindow, MAX_FRAME_LEN, MAX_MESSAGE_LEN, MAX_QUEUES_PER_CLIENT, Message,
    ProtocolError, QueueId, WireLevel, check,
};

/// An operation from the daemon.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DaemonMessage {
    /// Queues to resume and queues to suspend.
    Operations(Operations),
    /// Change a queue's level and/or launch window. The agent answers
    /// [`AgentMessage::QueueConfigChanged`](crate::AgentMessage::QueueConfigChanged) or
    /// [`AgentMessage::ConfigFailed`](crate::AgentMessage::ConfigFailed). At least one of the
    /// two is given; a level is never above the queue's `max_level`.
    Configure {
        /// The queue.
        queue: QueueId,
        /// The new level, if it changes.
        level: Option<WireLevel>,
        /// The new launch window, if it changes.
        launch: Option<LaunchWindow>,
    },
    /// What one queue must tell and how it may launch, as the daemon's scheduler computed it
    /// from its policy's plan ([`baton_core::Attention`], applied as it is): whether it
    /// reports Idle/Ready transitions, whether it may skip its in-flight window (the policy
    /// can never suspend it), whether an idle tail is watched for, whether it runs without
    /// its window only for what was measured of its commands, whether the policy may hold it
    /// back rather than only keep it suspendable, and whether it leads its device. Sent when
    /// one of the six changes; a newly announced queue starts as
    /// [`Attention::INITIAL`](baton_core::Attention::INITIAL) says (reporting, bounded,
    /// watched, not measured again, holdable, not leading).
    Attention {
        /// The queue.
        queue: QueueId,
        /// Report Idle/Ready transitions.
        report: bool,
        /// Launch without the in-flight window and its sync points.
        unbounded: bool,
        /// Notice going idle even if the application never synchronizes.
        watch: bool,
        /// Runs without its window only because its commands were measured short (HPF spares
        /// them from other processes' work): keep the window now and then to measure them
        /// again. A queue let go because nothing outranks it is not measured again.
        remeasure: bool,
        /// The policy may hold it back, not only keep it suspendable so that it gives way by
        /// itself (a yielding queue beside programs bound by their launching is not held):
        /// bound its work in flight by device time as well as by count only then.
        hold: bool,
        /// It outranks other work on its device while it runs unbounded (it reports and
        /// nothing can suspend it): a time-sliced context may keep the GPU longer for it.
        leading: bool,
    },
    /// Send [`StatsReport`](crate::StatsReport)s every `interval_ms` from now on (0: stop).
    /// The daemon asks for them while someone watches (`baton top`).
    StatsInterval {
        /// The interval in milliseconds: 0, or 50 ms to 60 s.
        interval_ms: u32,
    },
    /// Answer with [`AgentMessage::Pong`](crate::AgentMessage::Pong) carrying `nonce`. The
    /// daemon pings a client that has been silent, to tell a stopped process from a quiet one.
    Ping {
        /// Echoed back.
        nonce: u64,
    },
    /// An agent message was refused (a queue past [`MAX_QUEUES_PER_CLIENT`], an event for an
    /// unknown queue, …). Nothing changed at the daemon; the connection stays open.
    Rejected {
        /// The queue concerned, if any.
        queue: Option<QueueId>,
        /// What went wrong.
        error: ErrorReply,
    },
    /// The daemon stops scheduling this process (it is shutting down or dropping the client).
    /// The agent resumes every queue, runs unscheduled, and may reconnect later.
    Release {
        /// Why, in words.
        message: String,
    },
}

/// A change of decisions, numbered.
///
/// Queues named nowhere keep their state. `run` and `suspend` are disjoint, and together hold
/// at most [`MAX_QUEUES_PER_CLIENT`] queues, each once; at least one is non-empty.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Operations {
    /// Numbers this frame, increasing by one per frame on a connection, from 1.
    pub seq: u64,
    /// Queues to resume.
    pub run: Vec<QueueId>,
    /// Queues to suspend.
    pub suspend: Vec<QueueId>,
}

impl Operations {
    fn validate(&self) -> Result<(), ProtocolError> {
        check::range("seq", self.seq, 1, u64::MAX)?;
        let total = self.run.len() + self.suspend.len();
        if total == 0 {
            return Err(ProtocolError::invalid(
                "run",
                "no queue to run or suspend: send operations only when a decision changes",
            ));
        }
        check::list_len("run", total, MAX_QUEUES_PER_CLIENT)?;
        check::unique("run", self.run.iter())?;
        check::unique("suspend", self.suspend.iter())?;
        let run: HashSet<&QueueId> = self.run.iter().collect();
        if let Some(q) = self.suspend.iter().find(|q| run.contains(q)) {
            return Err(ProtocolError::invalid(
                "suspend",
                format!("{q} is both to run and to suspend"),
            ));
        }
        Ok(())
    }
}

impl DaemonMessage {
    /// Checks every field; errors are paths within the variant.
    fn check_fields(&self) -> Result<(), ProtocolError> {
        match self {
            DaemonMessage::Operations(ops) => ops.validate(),
            DaemonMessage::Configure { level, launch, .. } => check_config_change(*level, *launch),
            DaemonMessage::StatsInterval { interval_ms } => {
                check_stats_interval("interval_ms", *interval_ms)
            }
            DaemonMessage::Ping { .. } | DaemonMessage::Attention { .. } => Ok(()),
            DaemonMessage::Rejected { error, .. } => {
                error.validate().map_err(|e| e.within("error"))
            }
            DaemonMessage::Release { message } => check::text("message", message, MAX_MESSAGE_LEN),
        }
    }

    /// The variant's name, for logs.
    pub fn name(&self) -> &'static str {
        match self {
            DaemonMessage::Operations(_) => "operations",
            DaemonMessage::Configure { .. } => "configure",
            DaemonMessage::Attention { .. } => "attention",
            DaemonMessage::StatsInterval { .. } => "stats_interval",
            DaemonMessage::Ping { .. } => "ping",
            DaemonMessage::Rejected { .. } => "rejected",
            DaemonMessage::Release { .. } => "release",
        }
    }
}

impl Message for DaemonMessage {
    const NAME: &'static str = "daemon message";
    const MAX_FRAME_LEN: usize = MAX_FRAME_LEN;

    fn validate(&self) -> Result<(), ProtocolError> {
        self.check_fields().map_err(|e| e.within(self.name()))
    }
}

#[cfg(test)]
mod tests;
