//! What can go wrong reading or writing a frame.

use serde::{Deserialize, Serialize};

/// A frame could not be read, decoded, validated or written.
///
/// Errors that leave the byte stream in step ([`Malformed`](Self::Malformed),
/// [`Invalid`](Self::Invalid), [`WrongVersion`](Self::WrongVersion)) consumed exactly one frame,
/// so a reader *may* answer with an error and go on; the others mean the connection must be
/// closed. See [`ProtocolError::keeps_sync`].
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// The length header announced more bytes than the limit; the body was not read.
    #[error(
        "refused a frame of {len} bytes: the limit is {max} bytes; the peer is broken or does not \
         speak the Baton protocol, so the connection must be closed"
    )]
    Oversized {
        /// The announced (or, when sending, the encoded) payload length.
        len: u64,
        /// The limit for this kind of message.
        max: usize,
    },
    /// The payload is not a well-formed message of the expected kind.
    #[error(
        "malformed {what}: {detail}; the peer sent bytes that are not a Baton protocol \
         v{version} message, so make sure both sides come from the same Baton build",
        version = crate::PROTOCOL_VERSION
    )]
    Malformed {
        /// The kind of message that was expected.
        what: &'static str,
        /// What the decoder found wrong.
        detail: String,
    },
    /// The peer speaks another protocol version.
    #[error(
        "protocol version mismatch: this side speaks Baton protocol v{ours}, the peer speaks \
         v{theirs}; stop the running daemon so one from the same Baton build starts, or run \
         the client from the daemon's build"
    )]
    WrongVersion {
        /// The version of this build.
        ours: u16,
        /// The version the peer announced.
        theirs: u16,
    },
    /// A field holds a value outside its valid range.
    #[error("bad value in {field}: {reason}")]
    Invalid {
        /// Where the value is, as a path (`queues[3].in_flight`).
        field: String,
        /// What is wrong and what is accepted.
        reason: String,
    },
    /// The connection ended in the middle of a frame.
    #[error(
        "the connection closed in the middle of a frame ({got} of {expected} bytes): the peer \
         exited or crashed"
    )]
    Truncated {
        /// Bytes the frame (header or body) needed.
        expected: usize,
        /// Bytes that arrived.
        got: usize,
    },
    /// The daemon refused the handshake.
    #[error("the Baton daemon refused the connection ({reason:?}): {message}")]
    Refused {
        /// Why, as a code.
        reason: RefusalReason,
        /// Why, in words, with what to do.
        message: String,
    },
    /// The socket failed.
    #[error("I/O error on the Baton socket: {0}")]
    Io(#[from] std::io::Error),
}

impl ProtocolError {
    /// An [`Invalid`](Self::Invalid) error for `field`.
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> ProtocolError {
        ProtocolError::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// Prefixes the field path of an [`Invalid`](Self::Invalid) error with `outer`
    /// (`in_flight` within `queues[3]` becomes `queues[3].in_flight`); other errors pass through.
    pub fn within(self, outer: &str) -> ProtocolError {
        match self {
            ProtocolError::Invalid { field, reason } => ProtocolError::Invalid {
                field: format!("{outer}.{field}"),
                reason,
            },
            other => other,
        }
    }

    /// Whether exactly one whole frame was consumed, so the stream is still in step and the
    /// reader may reply with an error and continue. False for framing and I/O errors, after
    /// which the connection must be closed.
    pub fn keeps_sync(&self) -> bool {
        matches!(
            self,
            ProtocolError::Malformed { .. }
                | ProtocolError::Invalid { .. }
                | ProtocolError::WrongVersion { .. }
                | ProtocolError::Refused { .. }
        )
    }

    /// The field path of an [`Invalid`](Self::Invalid) error.
    pub fn field(&self) -> Option<&str> {
        match self {
            ProtocolError::Invalid { field, .. } => Some(field),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_builds_a_path_and_leaves_other_errors_alone() {
        let e = ProtocolError::invalid("in_flight", "too many")
            .within("queues[3]")
            .within("stats");
        assert_eq!(e.field(), Some("stats.queues[3].in_flight"));
        assert!(
            e.to_string()
                .contains("stats.queues[3].in_flight: too many")
        );
        let t = ProtocolError::Truncated {
            expected: 4,
            got: 1,
        }
        .within("x");
        assert!(matches!(t, ProtocolError::Truncated { .. }));
        assert!(!t.keeps_sync());
    }

    #[test]
    fn messages_say_what_to_do() {
        let v = ProtocolError::WrongVersion { ours: 1, theirs: 2 }.to_string();
        assert!(
            v.contains("v1") && v.contains("v2") && v.contains("same Baton build"),
            "{v}"
        );
        let o = ProtocolError::Oversized {
            len: 1 << 30,
            max: 65_536,
        }
        .to_string();
        assert!(o.contains("65536") && o.contains("closed"), "{o}");
    }
}

/// Why the daemon refused a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalReason {
    /// The peer speaks another protocol version.
    VersionMismatch,
    /// The peer's user may not use this daemon.
    Unauthorized,
    /// The daemon serves as many clients as it can.
    TooManyClients,
    /// The daemon is stopping.
    ShuttingDown,
    /// The first frame was not a valid [`Hello`](crate::Hello).
    BadHello,
}
