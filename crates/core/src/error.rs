//! Errors of the core crate.

use crate::{CommandSeq, HwError, Level};

/// An operation on an [`XQueue`](crate::XQueue) failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum XQueueError {
    /// The command was never submitted to this queue.
    #[error("command {0} was never submitted to this queue")]
    UnknownCommand(CommandSeq),
    /// The hardware queue cannot provide the requested level.
    #[error(
        "level {requested} is not supported by this hardware queue (its highest level is {max})"
    )]
    LevelUnsupported {
        /// What was asked for.
        requested: Level,
        /// The most the backend supports.
        max: Level,
    },
    /// The level cannot change while the queue is suspended.
    #[error("cannot change the level of a suspended queue: resume it first")]
    SuspendedLevelChange,
    /// The queue is shutting down and takes no new commands.
    #[error("the queue is shutting down and accepts no new commands")]
    ShuttingDown,
    /// The hardware reported an error.
    #[error(transparent)]
    Hw(#[from] HwError),
}
