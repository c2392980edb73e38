//! How a queue is driven, and the options of suspending and resuming it.

/// How an XQueue learns that its hardware made progress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Drive {
    /// A launch worker thread waits on sync points and launches buffered commands.
    #[default]
    Worker,
    /// No thread: the owner calls [`XQueue::poll`](crate::XQueue::poll) whenever the hardware
    /// may have progressed. Blocking waits fail with
    /// [`HwError::WouldBlock`](crate::HwError::WouldBlock). Used in virtual time.
    External,
}

/// Options for [`XQueue::suspend`](crate::XQueue::suspend).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SuspendFlags {
    /// At Level 1, return only once the in-flight commands have completed, so the device no
    /// longer runs this queue's work. At Levels 2 and 3 the hardware step already stops it.
    pub sync_hw: bool,
}

/// Options for [`XQueue::resume`](crate::XQueue::resume). None yet; the type keeps the
/// signature stable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResumeFlags {}
