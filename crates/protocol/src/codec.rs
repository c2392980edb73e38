//! The framing as a `tokio_util::codec` [`Decoder`] and [`Encoder`], for the daemon.
//!
//! ```ignore
//! let mut hs = Framed::new(socket, FrameCodec::<Hello, HelloReply>::new());
//! let hello = hs.next().await;                        // first frame: the handshake
//! let mut agent = hs.map_codec(|_| FrameCodec::<AgentMessage, DaemonMessage>::new());
//! ```
//! `map_codec` keeps bytes already buffered, so frames the peer sent right behind its
//! [`Hello`](crate::Hello) are not lost.
//!
//! A decoding error ends a `Framed` stream (tokio-util yields it once, then `None`): reply on
//! the sink if the error [keeps sync](crate::ProtocolError::keeps_sync), then close.

use std::fmt;
use std::marker::PhantomData;

use bytes::BytesMut;
use tokio_util::codec::{Decoder, Encoder};

use crate::frame::frame_len;
use crate::{FRAME_HEADER_LEN, Message, ProtocolError, decode_frame, encode_frame};

/// Decodes frames of `In` and encodes frames of `Out`.
pub struct FrameCodec<In, Out> {
    scratch: Vec<u8>,
    _kinds: PhantomData<fn(Out) -> In>,
}

impl<In, Out> FrameCodec<In, Out> {
    /// A codec with no bytes pending.
    pub fn new() -> Self {
        FrameCodec {
            scratch: Vec::new(),
            _kinds: PhantomData,
        }
    }
}

impl<In, Out> Default for FrameCodec<In, Out> {
    fn default() -> Self {
        Self::new()
    }
}

impl<In, Out> fmt::Debug for FrameCodec<In, Out> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameCodec").finish_non_exhaustive()
    }
}

impl<In: Message, Out> Decoder for FrameCodec<In, Out> {
    type Item = In;
    type Error = ProtocolError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<In>, ProtocolError> {
        let decoded = decode_frame::<In>(src)?;
        if decoded.is_none() {
            // Reserve what the pending frame still needs (its length is already checked).
            let need = frame_len::<In>(src)?.map_or(FRAME_HEADER_LEN, |n| FRAME_HEADER_LEN + n);
            src.reserve(need.saturating_sub(src.len()));
        }
        Ok(decoded)
    }
}

impl<In, Out: Message> Encoder<Out> for FrameCodec<In, Out> {
    type Error = ProtocolError;

    fn encode(&mut self, item: Out, dst: &mut BytesMut) -> Result<(), ProtocolError> {
        self.scratch.clear();
        encode_frame(&item, &mut self.scratch)?;
        dst.extend_from_slice(&self.scratch);
        Ok(())
    }
}
