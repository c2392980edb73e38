//! Level 3 on NVIDIA GPUs: the channel group (TSG) of a CUDA context, found by watching the
//! resource-manager (RM) calls libcuda makes, and its time slice, set through those same RM
//! handles.
//!
//! A CUDA context owns one compute channel group (class `KEPLER_CHANNEL_GROUP_A`, `0xa06c`,
//! engine `GR0`) plus copy-engine groups. The GPU time-slices runnable groups of different
//! contexts; only the *running* group's slice decides how soon another context gets the GPU.
//! So a best-effort context whose compute group runs with a slice of a few microseconds yields
//! to any other runnable context within the hardware's switch time (measured:
//! docs/benchmarks/levels/README.md), even in the middle of a kernel, and loses nothing when
//! it runs alone.
//!
//! - [`Capture`] records channel-group allocations (and frees) from the `ioctl`s the process
//!   makes on the NVIDIA control device. The interposer feeds it every `ioctl`; nothing here
//!   issues one.
//! - [`RmControl`] sends an RM control to an object; [`Ioctl`] is the real one. Controls must
//!   go over the file descriptor libcuda allocated the group on (the RM client is bound to
//!   the open file), after libcuda's own initialization set its value.
//! - [`ContextSlice`] is one context's compute group as Level 3 for its queues: while *no*
//!   queue of the context runs freely — each is interrupted, or preemptible (a scheduler may
//!   suspend it, because a more urgent queue exists) — the group's slice is the short yield
//!   value, so the GPU is handed to another context as soon as that context has work, without
//!   waiting for a decision or an RM call. When a queue runs freely (nothing can suspend it
//!   now, and it is not interrupted), libcuda's slice comes back. The RM calls cost
//!   ~0.2–0.4 ms each, so they run on a background thread that applies only the latest wish:
//!   `interrupt` and `restore` never block and never call the driver.
//!
//! `abi` mirrors NVIDIA's open kernel module headers; `capture`, `control` and `slice` hold
//! the three parts above.

mod abi;
mod capture;
mod control;
mod slice;

pub use abi::*;
pub use capture::{Capture, ChannelGroup, ComputeGroupOf, ExportedGroup, thread_id};
pub use control::{Ioctl, RmControl, RmError, get_timeslice, preempt, schedule, set_timeslice};
pub use slice::{ContextSlice, SliceRole, SliceStats, SliceValues};

#[cfg(test)]
mod tests;
