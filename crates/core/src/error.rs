//! Errors of the core crate.

use crate::{CommandSeq, HwError, Level};

/// A configuration value was out of range. The message names the value and the valid range.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The in-flight threshold was outside its range.
    #[error("invalid threshold {threshold}: it must be between 1 and {max}")]
    Threshold {
        /// The rejected threshold.
        threshold: u32,
        /// The largest accepted threshold.
        max: u32,
    },
    /// The batch size did not fit the threshold.
    #[error(
        "invalid batch {batch} for threshold {threshold}: batch must be at least 1 and smaller \
         than the threshold (threshold 1 takes batch 1)"
    )]
    Batch {
        /// The threshold it was checked against.
        threshold: u32,
        /// The rejected batch size.
        batch: u32,
    },
    /// A preemption level that does not exist.
    #[error(
        "invalid level {0:?}: use 1, 2 or 3 (L1 progressive launch, L2 deactivate, L3 interrupt)"
    )]
    Level(String),
    /// A priority outside the valid range.
    #[error("invalid priority {0}: it must be between -100 and 100 (higher runs first)")]
    Priority(i64),
}

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
