//! Hints: what applications and operators tell the scheduler about a queue.

use baton_core::Priority;

/// A hint about one queue. Each policy documents which hints it reads; the others are kept
/// but ignored, so switching policy never loses them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hint {
    /// Scheduling priority, higher runs first.
    Priority(Priority),
}

impl Hint {
    /// A priority hint from user input, validated.
    pub fn priority(p: i64) -> Result<Hint, HintError> {
        Priority::new(p)
            .map(Hint::Priority)
            .map_err(|e| HintError(e.to_string()))
    }
}

/// A hint was out of range. The message says which value and what range.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HintError(pub String);

/// The hints currently in force for one queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueHints {
    /// Its priority (default 0).
    pub priority: Priority,
}

impl QueueHints {
    /// Applies `hint`, replacing an earlier hint of the same kind.
    pub fn apply(&mut self, hint: Hint) {
        match hint {
            Hint::Priority(p) => self.priority = p,
        }
    }
}
