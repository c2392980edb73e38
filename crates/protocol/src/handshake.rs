//! The handshake: the first frame each way on every connection.
//!
//! The peer sends [`Hello`]; the daemon answers [`HelloReply::Welcome`] or
//! [`HelloReply::Refused`] and, when refusing, closes. After a welcome an
//! [`Role::Agent`] speaks [`AgentMessage`](crate::AgentMessage) /
//! [`DaemonMessage`](crate::DaemonMessage) and a [`Role::Cli`] speaks
//! [`Request`](crate::Request) / [`Reply`](crate::Reply).
//!
//! **Compatibility invariant:** these encodings never change, whatever the protocol version,
//! so peers of different versions can always tell each other so: `Hello` starts with its
//! `version`, and `Refused` is variant 1 of `HelloReply` with fields `version`, `reason`,
//! `message` in that order. Everything else may change when [`PROTOCOL_VERSION`] does.

use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};

use crate::{
    ClientId, MAX_FRAME_LEN, MAX_LABEL_LEN, MAX_MESSAGE_LEN, MAX_POLICY_NAME_LEN,
    MAX_STATS_INTERVAL_MS, MIN_STATS_INTERVAL_MS, Message, PROTOCOL_VERSION, ProtocolError,
    RefusalReason, check, read_frame, sanitize_text, write_frame,
};

/// What kind of peer is connecting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The in-process agent of a scheduled application.
    Agent,
    /// The `baton` command line.
    Cli,
}

/// The first frame a peer sends.
///
/// The daemon identifies the peer by the socket's credentials (`SO_PEERCRED`: uid and pid),
/// never by what the message says: `pid` is informational (it differs from the daemon's view
/// inside a pid namespace) and there is no uid field to trust.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// Must be [`PROTOCOL_VERSION`]; anything else is answered with
    /// [`RefusalReason::VersionMismatch`].
    pub version: u16,
    /// Agent or CLI.
    pub role: Role,
    /// The sender's process id, as it sees it.
    pub pid: u32,
    /// The sending software and its version (`baton-agent 0.1.0`), for logs and `baton doctor`.
    pub software: String,
}

impl Hello {
    /// A hello at this build's protocol version; `software` is sanitized to fit.
    pub fn new(role: Role, pid: u32, software: &str) -> Hello {
        Hello {
            version: PROTOCOL_VERSION,
            role,
            pid,
            software: sanitize_text(software, MAX_LABEL_LEN),
        }
    }
}

impl Message for Hello {
    const NAME: &'static str = "hello";
    const MAX_FRAME_LEN: usize = MAX_FRAME_LEN;

    fn validate(&self) -> Result<(), ProtocolError> {
        check_version(self.version)?;
        check::pid("pid", self.pid)?;
        check::text("software", &self.software, MAX_LABEL_LEN)
    }

    /// Reports a version mismatch from the leading `version` alone, so a hello from another
    /// version is answered with the right refusal even if its other fields differ.
    fn precheck(payload: &[u8]) -> Result<(), ProtocolError> {
        match postcard::take_from_bytes::<u16>(payload) {
            Ok((version, _)) => check_version(version),
            Err(_) => Ok(()),
        }
    }
}

fn check_version(theirs: u16) -> Result<(), ProtocolError> {
    if theirs == PROTOCOL_VERSION {
        Ok(())
    } else {
        Err(ProtocolError::WrongVersion {
            ours: PROTOCOL_VERSION,
            theirs,
        })
    }
}

/// The daemon's answer to [`Hello`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HelloReply {
    /// Accepted: the connection is open for the role's messages.
    Welcome(Welcome),
    /// Refused: the daemon closes the connection after sending this.
    Refused(Refused),
}

/// The daemon accepted the connection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Welcome {
    /// The daemon's protocol version, equal to the peer's.
    pub version: u16,
    /// This connection's number at the daemon (for logs on both sides).
    pub client: ClientId,
    /// The daemon's process id.
    pub daemon_pid: u32,
    /// The daemon's software and version.
    pub software: String,
    /// The policy in force.
    pub policy: String,
    /// How often an agent should send [`StatsReport`](crate::StatsReport)s, in milliseconds;
    /// 0 means not at all until a [`DaemonMessage::StatsInterval`](crate::DaemonMessage)
    /// asks. Ignored by the CLI.
    pub stats_interval_ms: u32,
}

/// The daemon refused the connection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refused {
    /// The daemon's protocol version (any value: this is how an old client learns it).
    pub version: u16,
    /// Why, as a code.
    pub reason: RefusalReason,
    /// Why, in words, and what to do.
    pub message: String,
}

impl Refused {
    /// A refusal at this build's version; `message` is sanitized to fit.
    pub fn new(reason: RefusalReason, message: &str) -> Refused {
        let mut message = sanitize_text(message, MAX_MESSAGE_LEN);
        if message.is_empty() {
            message = format!("{reason:?}");
        }
        Refused {
            version: PROTOCOL_VERSION,
            reason,
            message,
        }
    }

    /// The refusal for a hello that could not be accepted because of `err` (what the daemon
    /// sends when decoding the first frame fails).
    pub fn for_error(err: &ProtocolError) -> Refused {
        match err {
            ProtocolError::WrongVersion { theirs, .. } => Refused::new(
                RefusalReason::VersionMismatch,
                &format!(
                    "this daemon speaks Baton protocol v{PROTOCOL_VERSION} but the client speaks \
                     v{theirs}: stop the running daemon so one from the client's Baton build \
                     starts, or run the client from the daemon's build"
                ),
            ),
            other => Refused::new(
                RefusalReason::BadHello,
                &format!("the first frame must be a valid hello: {other}"),
            ),
        }
    }
}

impl Message for HelloReply {
    const NAME: &'static str = "hello reply";
    const MAX_FRAME_LEN: usize = MAX_FRAME_LEN;

    fn validate(&self) -> Result<(), ProtocolError> {
        match self {
            HelloReply::Welcome(w) => {
                check_version(w.version)?;
                check::pid("daemon_pid", w.daemon_pid)?;
                check::text("software", &w.software, MAX_LABEL_LEN)?;
                check::token("policy", &w.policy, MAX_POLICY_NAME_LEN)?;
                check_stats_interval("stats_interval_ms", w.stats_interval_ms)
            }
            HelloReply::Refused(r) => check::text("message", &r.message, MAX_MESSAGE_LEN),
        }
    }
}

/// A stats interval: 0 (off) or `MIN_STATS_INTERVAL_MS..=MAX_STATS_INTERVAL_MS`.
pub(crate) fn check_stats_interval(field: &str, ms: u32) -> Result<(), ProtocolError> {
    if ms == 0 {
        return Ok(());
    }
    check::range(field, ms, MIN_STATS_INTERVAL_MS, MAX_STATS_INTERVAL_MS)
}

/// The client side of the handshake on a blocking stream: sends `hello`, reads the answer.
/// A refusal becomes [`ProtocolError::Refused`]. Set the socket's read timeout beforehand if
/// the caller must not wait forever on a hung daemon.
pub fn client_handshake<S: Read + Write + ?Sized>(
    stream: &mut S,
    hello: &Hello,
) -> Result<Welcome, ProtocolError> {
    write_frame(stream, hello)?;
    match read_frame::<HelloReply, _>(stream)? {
        Some(HelloReply::Welcome(w)) => Ok(w),
        Some(HelloReply::Refused(r)) => Err(ProtocolError::Refused {
            reason: r.reason,
            message: r.message,
        }),
        None => Err(ProtocolError::Io(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the daemon closed the connection during the handshake; see its log",
        ))),
    }
}

#[cfg(test)]
mod tests;
