//! Baton's wire protocol: the versioned, validated messages between the in-process agents, the
//! daemon and the CLI, and the framing that carries them over the daemon's Unix socket.
//!
//! Every connection starts with the [`handshake`]: the peer sends [`Hello`] (its
//! [`PROTOCOL_VERSION`] and [`Role`]), the daemon answers [`HelloReply`]. Then, by role:
//!
//! | direction | message | what |
//! | --- | --- | --- |
//! | agent → daemon | [`AgentMessage`] | process start/exit, queue create/destroy/config, ready/idle, hints, stats |
//! | daemon → agent | [`DaemonMessage`] | run/suspend [`Operations`], queue configuration, stats interval, ping, release |
//! | CLI → daemon | [`Request`] | list, priority, hint, policy, config, trace, status, shutdown |
//! | daemon → CLI | [`Reply`] | the answer, or an [`ErrorReply`] with an [`ErrorKind`] |
//!
//! Each frame is a little-endian `u32` length and a [postcard](https://docs.rs/postcard)
//! payload ([`frame`] for blocking streams, `FrameCodec` for tokio with the `tokio`
//! feature). A length over the limit ([`MAX_FRAME_LEN`], or [`MAX_REPLY_FRAME_LEN`] for
//! replies) is refused before the body is read. Every decoded message passes
//! [`Message::validate`]: ranges, string lengths and characters, list sizes, all bounded by
//! the constants below; a bad frame yields a typed [`ProtocolError`], never a panic, whatever
//! the bytes (the `fuzzing` harness, feature `testing`, checks this under `cargo fuzz`).
//!
//! **Architecture invariant:** this is the only crate that defines serializable types. Others
//! convert at the boundary: wire values ([`WireLevel`], [`WirePriority`], [`LaunchWindow`],
//! [`QueueId`]) convert to and from the core's types through the core's own validators, so a
//! range is defined once. Nothing here performs I/O beyond the stream a caller hands in.
//!
//! **Trust:** the daemon never believes identity from a message: uid and pid come from the
//! socket (`SO_PEERCRED`). Validation bounds what a peer can make the daemon store or print
//! (text is printable, without terminal control characters).
#![forbid(unsafe_code)]

mod agent;
mod check;
#[cfg(feature = "tokio")]
mod codec;
mod daemon;
mod error;
pub mod frame;
#[cfg(any(test, feature = "testing"))]
pub mod fuzzing;
pub mod handshake;
mod hint;
mod limits;
mod listing;
mod message;
mod policy;
mod reply;
mod request;
#[cfg(any(test, feature = "testing"))]
pub mod samples;
mod status;
mod trace;
mod values;

pub use agent::{
    AgentMessage, AgentTarget, ProcessStarted, QueueCreated, QueueStateChange, QueueStats,
    StatsReport,
};
pub use check::sanitize_text;
#[cfg(feature = "tokio")]
pub use codec::FrameCodec;
pub use daemon::{DaemonMessage, Operations};
pub use error::{ProtocolError, RefusalReason};
pub use frame::{decode_frame, encode_frame, read_frame, write_frame};
pub use handshake::{Hello, HelloReply, Refused, Role, Welcome, client_handshake};
pub use hint::{Hint, HintKind, Scope};
pub use limits::*;
pub use listing::{
    MAX_COMMANDS_PER_SEC, MAX_LIST_DEVICES, OthersRow, ProcessList, ProcessRow, QueueRow,
};
pub use message::{Message, decode_payload, encode_payload};
pub use policy::{PolicyEntry, PolicyParam, PolicyReport};
pub use reply::{ErrorKind, ErrorReply, Reply};
pub use request::{Request, Target};
pub use status::{DaemonStatus, LatencySummary, MAX_SOCKET_PATH_LEN};
pub use trace::{DecisionCause, SpanState, TraceChunk, TraceRecord};
pub use values::{
    Backend, ClientId, DeviceRef, LaunchWindow, QueueId, QueueRef, WireLevel, WirePriority,
};
