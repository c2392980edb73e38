//! The [`Message`] trait: what every top-level message is, and its payload encoding.
//!
//! A payload is the message in [postcard](https://docs.rs/postcard) form, nothing more: no
//! trailing bytes are accepted. Decoding always validates, so a value that comes out of
//! [`decode_payload`] is within every limit; encoding validates too, so a bug in a sender is
//! caught on its own side with a message naming the field, instead of as a dropped connection.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::ProtocolError;

/// A top-level message: the unit one frame carries.
///
/// Implemented by [`Hello`](crate::Hello), [`HelloReply`](crate::HelloReply),
/// [`AgentMessage`](crate::AgentMessage), [`DaemonMessage`](crate::DaemonMessage),
/// [`Request`](crate::Request) and [`Reply`](crate::Reply).
pub trait Message: Serialize + DeserializeOwned {
    /// What the message is called in errors.
    const NAME: &'static str;

    /// The largest payload of this kind, enforced before reading a frame's body and when
    /// encoding.
    const MAX_FRAME_LEN: usize;

    /// Checks every field against its limits. Decoding calls it on every message.
    fn validate(&self) -> Result<(), ProtocolError>;

    /// Looks at a raw payload before it is decoded. The handshake uses it to report a version
    /// mismatch even when the rest of a newer or older [`Hello`](crate::Hello) does not parse.
    fn precheck(_payload: &[u8]) -> Result<(), ProtocolError> {
        Ok(())
    }
}

/// Decodes and validates one payload (a frame without its header).
pub fn decode_payload<M: Message>(payload: &[u8]) -> Result<M, ProtocolError> {
    if payload.len() > M::MAX_FRAME_LEN {
        return Err(ProtocolError::Oversized {
            len: payload.len() as u64,
            max: M::MAX_FRAME_LEN,
        });
    }
    M::precheck(payload)?;
    let (msg, rest) =
        postcard::take_from_bytes::<M>(payload).map_err(|e| ProtocolError::Malformed {
            what: M::NAME,
            detail: e.to_string(),
        })?;
    if !rest.is_empty() {
        return Err(ProtocolError::Malformed {
            what: M::NAME,
            detail: format!("{} unexpected bytes after the message", rest.len()),
        });
    }
    msg.validate()?;
    Ok(msg)
}

/// Validates `msg` and appends its payload to `out`; returns the payload's length.
pub fn encode_payload<M: Message>(msg: &M, out: &mut Vec<u8>) -> Result<usize, ProtocolError> {
    msg.validate()?;
    let payload = postcard::to_allocvec(msg).map_err(|e| ProtocolError::Malformed {
        what: M::NAME,
        detail: format!("could not encode: {e}"),
    })?;
    if payload.len() > M::MAX_FRAME_LEN {
        return Err(ProtocolError::Oversized {
            len: payload.len() as u64,
            max: M::MAX_FRAME_LEN,
        });
    }
    out.extend_from_slice(&payload);
    Ok(payload.len())
}
