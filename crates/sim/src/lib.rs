//! A simulated accelerator that behaves, in the ways scheduling cares about, like a GPU.
//!
//! - **Contexts** (one per simulated process) are time-sliced: one context owns the compute
//!   units at a time, for up to its time slice (default 2 ms) while others wait; a switch costs
//!   a configurable pause. A context with nothing to run gives the device up at once.
//! - Within a context, **kernels from different streams run concurrently**, sharing a fixed
//!   number of SMs: a kernel asks for some SMs and holds those it gets until it completes or is
//!   preempted; freed SMs go to waiting kernels by stream priority, then launch order. A kernel
//!   with fewer SMs than it asked for runs proportionally slower.
//! - Copies run on a copy engine shared by all contexts, host functions on the host; event
//!   records and waits order streams.
//! - Every **level** is available: deactivating a stream stops it starting commands (L2);
//!   interrupting it also stops its running kernel after a configurable latency, keeping its
//!   progress (L3). Per-context time slices can be changed at run time.
//!
//! The model ([`SimDevice`]) is a pure discrete-event simulation in integer nanoseconds. [`Sim`]
//! drives it either in **virtual time** (the owner advances it; runs are deterministic and a
//! simulated second takes milliseconds) or in **real time** (a device thread follows the wall
//! clock), and hands out [`SimQueue`]s, which implement [`baton_core::HwQueue`].
#![forbid(unsafe_code)]

mod command;
mod config;
mod device;
mod model;

pub use command::{Completion, ContextId, EventId, SimCommand, StreamId};
pub use config::SimConfig;
pub use device::{Sim, SimQueue, SimSyncPoint, TimeMode};
pub use model::SimDevice;
