//! Daemon → CLI: replies, and the typed errors any request may get.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{
    DaemonStatus, MAX_MESSAGE_LEN, MAX_REPLY_FRAME_LEN, Message, PolicyReport, ProcessList,
    ProtocolError, TraceChunk, check, sanitize_text,
};

/// The daemon's answer to one [`Request`](crate::Request).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// The request was carried out (or forwarded to the agents concerned).
    Done,
    /// Answer to [`Request::List`](crate::Request::List).
    List(ProcessList),
    /// Answer to [`Request::GetPolicy`](crate::Request::GetPolicy).
    Policy(PolicyReport),
    /// Answer to [`Request::Status`](crate::Request::Status).
    Status(DaemonStatus),
    /// Answer to [`Request::TraceStop`](crate::Request::TraceStop).
    TraceStopped {
        /// Records kept, readable with [`Request::TraceRead`](crate::Request::TraceRead).
        records: u64,
        /// Records lost because the trace was full.
        dropped: u64,
    },
    /// Answer to [`Request::TraceRead`](crate::Request::TraceRead).
    Trace(TraceChunk),
    /// The request failed and changed nothing.
    Error(ErrorReply),
}

/// A failed request: a code to act on and a message for people.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorReply {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// What happened, why, and what to do; printable, at most [`MAX_MESSAGE_LEN`] bytes.
    pub message: String,
}

/// Kinds of failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The caller's user may not change this (only root or the owner of the processes may).
    Unauthorized,
    /// No such queue (it never existed or was destroyed).
    UnknownQueue,
    /// No such scheduled process.
    UnknownProcess,
    /// No queue runs on that device.
    UnknownDevice,
    /// No policy by that name.
    UnknownPolicy,
    /// A value was refused (out of range, a bad policy parameter, a malformed message).
    InvalidArgument,
    /// The hardware or the policy cannot do this (a level above a queue's maximum).
    Unsupported,
    /// A limit was reached (queues per client, clients, trace size).
    LimitReached,
    /// The request conflicts with the daemon's state (a trace is already recording, or none
    /// is to stop or read).
    Conflict,
    /// The daemon is stopping.
    ShuttingDown,
    /// The daemon failed; its log says more.
    Internal,
}

impl ErrorReply {
    /// An error reply; `message` is sanitized to fit, and an empty one replaced by the kind.
    pub fn new(kind: ErrorKind, message: &str) -> ErrorReply {
        let mut message = sanitize_text(message, MAX_MESSAGE_LEN);
        if message.is_empty() {
            message = format!("{kind:?}");
        }
        ErrorReply { kind, message }
    }

    /// The reply to a request that failed to decode or validate.
    pub fn for_error(err: &ProtocolError) -> ErrorReply {
        ErrorReply::new(ErrorKind::InvalidArgument, &err.to_string())
    }

    pub(crate) fn validate(&self) -> Result<(), ProtocolError> {
        check::text("message", &self.message, MAX_MESSAGE_LEN)
    }
}

impl fmt::Display for ErrorReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ErrorReply {}

impl Reply {
    /// Checks every field; errors are paths within the variant.
    fn check_fields(&self) -> Result<(), ProtocolError> {
        match self {
            Reply::Done | Reply::TraceStopped { .. } => Ok(()),
            Reply::List(l) => l.validate(),
            Reply::Policy(p) => p.validate(),
            Reply::Status(s) => s.validate(),
            Reply::Trace(t) => t.validate(),
            Reply::Error(e) => e.validate(),
        }
    }

    /// The variant's name, for logs.
    pub fn name(&self) -> &'static str {
        match self {
            Reply::Done => "done",
            Reply::List(_) => "list",
            Reply::Policy(_) => "policy",
            Reply::Status(_) => "status",
            Reply::TraceStopped { .. } => "trace_stopped",
            Reply::Trace(_) => "trace",
            Reply::Error(_) => "error",
        }
    }
}

impl Message for Reply {
    const NAME: &'static str = "reply";
    const MAX_FRAME_LEN: usize = MAX_REPLY_FRAME_LEN;

    fn validate(&self) -> Result<(), ProtocolError> {
        self.check_fields().map_err(|e| e.within(self.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_replies_are_sanitized_and_never_empty() {
        let e = ErrorReply::new(ErrorKind::UnknownQueue, "no queue \u{1b}[31m4242:q9");
        assert!(e.validate().is_ok());
        assert!(e.to_string().contains("4242:q9"));
        let e = ErrorReply::new(ErrorKind::Internal, "");
        assert_eq!(e.message, "Internal");
        let e = ErrorReply::new(ErrorKind::Internal, &"x".repeat(5000));
        assert_eq!(e.message.len(), MAX_MESSAGE_LEN);
    }

    #[test]
    fn error_message_must_be_printable_text() {
        let r = Reply::Error(ErrorReply {
            kind: ErrorKind::Conflict,
            message: String::new(),
        });
        assert_eq!(r.validate().unwrap_err().field(), Some("error.message"));
    }

    #[test]
    fn protocol_errors_become_invalid_argument() {
        let e = ErrorReply::for_error(&ProtocolError::invalid("hint.percent", "0 is out of range"));
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e.message.contains("hint.percent"));
    }
}
