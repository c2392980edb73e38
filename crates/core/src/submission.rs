//! What a submitter hands an XQueue: a command as the submitter holds it, which the queue either
//! launches at once from the submitting thread or turns into an owned command for its buffer.

use crate::{CommandSeq, HwError, HwQueue, Nanos};

/// A command as its submitter holds it. An interposer's is the application's call itself, its
/// arguments borrowed for the duration of that call: launched from there, it copies nothing.
/// The queue decides which of the two methods runs, and runs exactly one of them to the end
/// (a [`Submission::into_command`] that gives the submission back is followed by
/// [`Submission::launch`], in the command's turn).
pub trait Submission<H: HwQueue>: Sized {
    /// Hands the command to the hardware now, from the submitting thread.
    fn launch(self, hw: &H) -> Result<(), HwError>;

    /// An owned command to buffer and launch later from another thread, or the submission
    /// back when no faithful copy can be made (then it is launched in place once everything
    /// before it has been: delayed, never reordered).
    fn into_command(self, hw: &H) -> Result<H::Command, Self>;
}

/// An owned command submitted as it is.
pub struct Owned<C>(pub C);

impl<H: HwQueue> Submission<H> for Owned<H::Command> {
    fn launch(self, hw: &H) -> Result<(), HwError> {
        hw.launch(self.0)
    }

    fn into_command(self, _hw: &H) -> Result<H::Command, Self> {
        Ok(self.0)
    }
}

/// How a submission reached the hardware, or will.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubmitPath {
    /// Launched at once from the submitting thread.
    Direct,
    /// Copied into the buffer, launched later by whoever drives the queue.
    Buffered,
    /// No faithful copy: launched from the submitting thread once everything before it was.
    InPlace,
}

/// What [`XQueue::submit_after`](crate::XQueue::submit_after) did with a submission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Submitted {
    /// The command's position in its queue.
    pub seq: CommandSeq,
    /// How it got (or gets) to the hardware.
    pub path: SubmitPath,
    /// How long the submitting thread was held (a full buffer, or an in-place command's turn),
    /// if it was.
    pub held: Option<Nanos>,
}
