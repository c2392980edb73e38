//! Framing: a little-endian `u32` payload length, then the payload.
//!
//! Two ways to read frames share these rules:
//! - [`read_frame`] / [`write_frame`] on any blocking [`Read`] / [`Write`]: the agent, inside an
//!   application process, and the CLI;
//! - [`decode_frame`] on a growing [`BytesMut`] (sans I/O): the daemon's
//!   `FrameCodec` (feature `tokio`) and anything that reads in pieces.
//!
//! The length is checked against the message kind's limit before the body is read or any
//! memory is reserved for it, so a peer cannot make the reader allocate more than the limit.
//! Partial reads are fine either way: a frame is complete only when all its bytes are there.

use std::io::{ErrorKind, Read, Write};

use bytes::{Buf, BytesMut};

use crate::{FRAME_HEADER_LEN, Message, ProtocolError, decode_payload, encode_payload};

/// Validates `msg` and appends its whole frame (header and payload) to `out`.
pub fn encode_frame<M: Message>(msg: &M, out: &mut Vec<u8>) -> Result<(), ProtocolError> {
    let start = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER_LEN]);
    let len = match encode_payload(msg, out) {
        Ok(len) => len,
        Err(e) => {
            out.truncate(start);
            return Err(e);
        }
    };
    // The payload is at most M::MAX_FRAME_LEN, far below u32::MAX.
    let header = u32::try_from(len).unwrap_or(u32::MAX).to_le_bytes();
    out[start..start + FRAME_HEADER_LEN].copy_from_slice(&header);
    Ok(())
}

/// Writes one frame with a single `write_all` (so frames written under a lock never
/// interleave) and flushes.
pub fn write_frame<M: Message, W: Write + ?Sized>(w: &mut W, msg: &M) -> Result<(), ProtocolError> {
    let mut buf = Vec::with_capacity(64);
    encode_frame(msg, &mut buf)?;
    w.write_all(&buf)?;
    w.flush()?;
    Ok(())
}

/// The payload length a header announces, if it is within `max`.
fn checked_len(header: [u8; FRAME_HEADER_LEN], max: usize) -> Result<usize, ProtocolError> {
    let len = u32::from_le_bytes(header);
    match usize::try_from(len) {
        Ok(n) if n <= max => Ok(n),
        _ => Err(ProtocolError::Oversized {
            len: u64::from(len),
            max,
        }),
    }
}

/// Fills `buf` from `r`; returns how many bytes arrived before end of file.
fn read_full<R: Read + ?Sized>(r: &mut R, buf: &mut [u8]) -> Result<usize, ProtocolError> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(got)
}

/// Reads one frame and decodes it. `Ok(None)` means the peer closed the connection cleanly,
/// between frames; closing inside a frame is [`ProtocolError::Truncated`]. A length over
/// `M::MAX_FRAME_LEN` is refused without reading the body.
pub fn read_frame<M: Message, R: Read + ?Sized>(r: &mut R) -> Result<Option<M>, ProtocolError> {
    let mut header = [0; FRAME_HEADER_LEN];
    let got = read_full(r, &mut header)?;
    if got == 0 {
        return Ok(None);
    }
    if got < FRAME_HEADER_LEN {
        return Err(ProtocolError::Truncated {
            expected: FRAME_HEADER_LEN,
            got,
        });
    }
    let len = checked_len(header, M::MAX_FRAME_LEN)?;
    let mut body = vec![0; len];
    let got = read_full(r, &mut body)?;
    if got < len {
        return Err(ProtocolError::Truncated { expected: len, got });
    }
    decode_payload(&body).map(Some)
}

/// Takes one complete frame off the front of `buf` and decodes it. `Ok(None)` means more
/// bytes are needed (and `buf` is untouched). An oversized length is an error as soon as the
/// header is there, whatever follows. On a decoding or validation error the frame has been
/// consumed, so the stream stays in step.
pub fn decode_frame<M: Message>(buf: &mut BytesMut) -> Result<Option<M>, ProtocolError> {
    let Some(len) = frame_len::<M>(buf)? else {
        return Ok(None);
    };
    if buf.len() < FRAME_HEADER_LEN + len {
        return Ok(None);
    }
    buf.advance(FRAME_HEADER_LEN);
    let body = buf.split_to(len);
    decode_payload(&body).map(Some)
}

/// The payload length of the frame at the front of `buf`, once its header is there.
pub(crate) fn frame_len<M: Message>(buf: &[u8]) -> Result<Option<usize>, ProtocolError> {
    match buf.first_chunk::<FRAME_HEADER_LEN>() {
        None => Ok(None),
        Some(header) => checked_len(*header, M::MAX_FRAME_LEN).map(Some),
    }
}
