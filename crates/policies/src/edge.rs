//! What one queue waits for on another: the edges of the dependency graph a policy sees
//! (see [`inherit`](crate::inherit) for what the scheduler does with them).

use baton_core::{CommandSeq, XQueueId};

/// How far the waited-on queue must get.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Until {
    /// Until it has launched command `seq` (the device orders the rest, e.g. an event record
    /// that a later wait refers to).
    Launched(CommandSeq),
    /// Until command `seq` has completed.
    Completed(CommandSeq),
}

/// `waiter` cannot progress until `on` reaches `until`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dependency {
    /// The blocked queue.
    pub waiter: XQueueId,
    /// The queue it waits on.
    pub on: XQueueId,
    /// How far `on` must get.
    pub until: Until,
}

impl Dependency {
    /// Whether a queue that has launched `launched` commands and completed `completed`
    /// satisfies it.
    pub fn satisfied_by(&self, launched: u64, completed: u64) -> bool {
        match self.until {
            Until::Launched(s) => launched > s.0,
            Until::Completed(s) => completed > s.0,
        }
    }
}
