//! Every bound the protocol enforces, in one place.
//!
//! Decoding refuses anything outside these limits (see [`Message::validate`](crate::Message));
//! senders that build messages from data they do not control (process names, command lines,
//! error text) use [`sanitize_text`](crate::sanitize_text) to fit them first.

/// The protocol version spoken by this build. Peers must match exactly; see
/// [`Hello`](crate::Hello).
pub const PROTOCOL_VERSION: u16 = 12;

/// Bytes of the frame header: the payload length as a little-endian `u32`.
pub const FRAME_HEADER_LEN: usize = 4;

/// The largest payload of any frame sent *to* the daemon, and of the daemon's frames to agents.
/// Checked before the body is read or allocated.
pub const MAX_FRAME_LEN: usize = 64 * 1024;

/// The largest payload of a daemon [`Reply`](crate::Reply) to the CLI (process lists and trace
/// chunks are larger than anything a client sends).
pub const MAX_REPLY_FRAME_LEN: usize = 8 * 1024 * 1024;

/// The most queues one client may have at once, and the longest per-queue list it may send.
pub const MAX_QUEUES_PER_CLIENT: usize = 1024;

/// The highest process id Linux can hand out (`PID_MAX_LIMIT`); pid 0 is never valid.
pub const MAX_PID: u32 = 4_194_304;

/// The longest process name, in bytes.
pub const MAX_NAME_LEN: usize = 256;

/// The most command-line arguments a process reports.
pub const MAX_ARGS: usize = 64;

/// The longest command line, all arguments together, in bytes.
pub const MAX_COMMAND_LINE_LEN: usize = 4096;

/// The longest short identifier: device ids, queue labels, software versions, in bytes.
pub const MAX_LABEL_LEN: usize = 64;

/// The longest human-readable message (errors, refusals, descriptions), in bytes.
pub const MAX_MESSAGE_LEN: usize = 1024;

/// The longest policy name or policy parameter key, in bytes.
pub const MAX_POLICY_NAME_LEN: usize = 32;

/// The longest policy parameter value, in bytes.
pub const MAX_PARAM_VALUE_LEN: usize = 128;

/// The most parameters a policy may be given at once.
pub const MAX_POLICY_PARAMS: usize = 16;

/// The most policies a daemon may advertise.
pub const MAX_POLICIES: usize = 64;

/// The most processes in one [`ProcessList`](crate::ProcessList).
pub const MAX_LIST_PROCESSES: usize = 1024;

/// The most queues, all processes together, in one [`ProcessList`](crate::ProcessList).
pub const MAX_LIST_QUEUES: usize = 8192;

/// The most records in one [`TraceChunk`](crate::TraceChunk).
pub const MAX_TRACE_CHUNK: usize = 4096;

/// The most records a trace may hold before it drops new ones.
pub const MAX_TRACE_CAPACITY: u32 = 16 * 1024 * 1024;

/// The shortest time slice a hint may ask for: 1 µs.
pub const MIN_TIME_SLICE_NS: u64 = 1_000;

/// The longest time slice a hint may ask for: 10 s.
pub const MAX_TIME_SLICE_NS: u64 = 10_000_000_000;

/// The longest deadline or laxity a hint may give, and the longest span in a report: 1 hour.
pub const MAX_DURATION_NS: u64 = 3_600_000_000_000;

/// How far ahead an upcoming-work hint may look (arrival and expiry): 60 s.
pub const MAX_HINT_HORIZON_NS: u64 = 60_000_000_000;

/// The largest `k` for k-EDF (queues allowed to run at once on a device).
pub const MAX_K: u32 = 1024;

/// The shortest stats interval the daemon may ask agents for, in milliseconds (0 means off).
pub const MIN_STATS_INTERVAL_MS: u32 = 50;

/// The longest stats interval, in milliseconds.
pub const MAX_STATS_INTERVAL_MS: u32 = 60_000;

/// The most SMs an [`Isolated`](crate::Hint::Isolated) hint may name.
pub const MAX_SMS: u32 = 4096;
