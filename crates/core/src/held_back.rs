//! A count, shared by a group of queues, of those that hold commands back from the hardware.

use std::sync::atomic::Ordering;

use crate::sync::AtomicUsize;

/// How many queues of a group hold at least one command back from the hardware: buffered, or
/// launched behind a closed Level-2 gate ([`XQueue::has_pending`](crate::XQueue::has_pending)
/// or [`XQueue::is_gated`](crate::XQueue::is_gated)).
///
/// A caller that must order a command after every earlier command of the group (CUDA's legacy
/// default stream after the blocking streams) reads zero here and knows, in one load, that all
/// of them already reached the hardware, which orders them itself; only otherwise does it need
/// to look at the queues one by one. A queue counts itself in before the call that made it hold
/// something back returns, and out only once nothing is held back any more.
pub struct HeldBackCount {
    queues: AtomicUsize,
}

impl HeldBackCount {
    /// A count of zero.
    pub fn new() -> HeldBackCount {
        HeldBackCount {
            queues: AtomicUsize::new(0),
        }
    }

    /// Whether no queue of the group holds anything back.
    pub fn is_zero(&self) -> bool {
        self.queues.load(Ordering::SeqCst) == 0
    }

    pub(crate) fn add(&self) {
        self.queues.fetch_add(1, Ordering::SeqCst);
    }

    pub(crate) fn remove(&self) {
        self.queues.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Default for HeldBackCount {
    fn default() -> HeldBackCount {
        HeldBackCount::new()
    }
}

impl std::fmt::Debug for HeldBackCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldBackCount")
            .field("queues", &self.queues.load(Ordering::SeqCst))
            .finish()
    }
}
