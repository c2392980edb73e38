//! The fuzzing harness (feature `testing`), kept in the crate so stable-toolchain tests run
//! it too: `fuzz/` calls [`check_input`] on libFuzzer's inputs, the property tests on random
//! bytes, and each crash it ever finds becomes a regression test calling it.
//!
//! An input is `[kind, piece, stream…]`: `kind` picks the message type (modulo 6), `piece`
//! the read size (1 to 16 bytes), and `stream` is what a peer sent. The stream is decoded both
//! by the blocking [`read_frame`] and by the incremental [`decode_frame`], in pieces, and the
//! harness panics only if an invariant breaks:
//! - the two readers disagree;
//! - a decoded message fails validation, or does not survive re-encoding unchanged.

use std::fmt::Debug;
use std::io::Read;

use bytes::BytesMut;

use crate::{
    AgentMessage, DaemonMessage, Hello, HelloReply, Message, ProtocolError, Reply, Request,
    decode_frame, decode_payload, encode_frame, read_frame, samples,
};

/// Runs one fuzz input; panics only on a broken invariant.
pub fn check_input(data: &[u8]) {
    let [kind, piece, stream @ ..] = data else {
        return;
    };
    let piece = usize::from(piece % 16) + 1;
    match kind % 6 {
        0 => check_stream::<Hello>(stream, piece),
        1 => check_stream::<HelloReply>(stream, piece),
        2 => check_stream::<AgentMessage>(stream, piece),
        3 => check_stream::<DaemonMessage>(stream, piece),
        4 => check_stream::<Request>(stream, piece),
        _ => check_stream::<Reply>(stream, piece),
    }
}

/// Seed inputs: every sample message framed, one stream per message type.
pub fn seeds() -> Vec<Vec<u8>> {
    fn stream<M: Message>(kind: u8, msgs: &[M]) -> Vec<Vec<u8>> {
        let mut all = vec![kind, 15];
        let mut out = Vec::new();
        for m in msgs {
            let mut one = vec![kind, 3];
            // Samples are valid, so encoding cannot fail.
            if encode_frame(m, &mut one).is_ok() {
                all.extend_from_slice(&one[2..]);
                out.push(one);
            }
        }
        out.push(all);
        out
    }
    let mut s = stream(0, &samples::hellos());
    s.extend(stream(1, &samples::hello_replies()));
    s.extend(stream(2, &samples::agent_messages()));
    s.extend(stream(3, &samples::daemon_messages()));
    s.extend(stream(4, &samples::requests()));
    s.extend(stream(5, &samples::replies()));
    s
}

/// What a reader produced, comparable across readers: a message, or a refusal as it would be
/// reported (two readers must refuse the same frames for the same reasons).
#[derive(Debug, PartialEq)]
enum Outcome<M> {
    Message(M),
    Refused(String),
}

/// A reader that hands out at most `piece` bytes per call.
struct Trickle<'a> {
    data: &'a [u8],
    piece: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.piece.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn outcome_of_error<M>(e: &ProtocolError) -> Outcome<M> {
    Outcome::Refused(e.to_string())
}

fn check_stream<M: Message + PartialEq + Debug>(stream: &[u8], piece: usize) {
    // The blocking reader.
    let mut r = Trickle {
        data: stream,
        piece,
    };
    let mut blocking: Vec<Outcome<M>> = Vec::new();
    loop {
        match read_frame::<M, _>(&mut r) {
            Ok(Some(m)) => blocking.push(Outcome::Message(m)),
            Ok(None) => break,
            // The incremental reader just waits for more bytes here.
            Err(ProtocolError::Truncated { .. }) => break,
            Err(e) => {
                blocking.push(outcome_of_error(&e));
                if !e.keeps_sync() {
                    break;
                }
            }
        }
    }
    // The incremental reader, fed in pieces.
    let mut buf = BytesMut::new();
    let mut incremental: Vec<Outcome<M>> = Vec::new();
    'feed: for chunk in stream.chunks(piece) {
        buf.extend_from_slice(chunk);
        loop {
            match decode_frame::<M>(&mut buf) {
                Ok(Some(m)) => incremental.push(Outcome::Message(m)),
                Ok(None) => break,
                Err(e) => {
                    incremental.push(outcome_of_error(&e));
                    if !e.keeps_sync() {
                        break 'feed;
                    }
                }
            }
        }
    }
    assert_eq!(blocking, incremental, "the two readers disagree");
    let messages = blocking.into_iter().filter_map(|o| match o {
        Outcome::Message(m) => Some(m),
        Outcome::Refused(_) => None,
    });
    for m in messages {
        m.validate().expect("a decoded message must be valid");
        let mut frame = Vec::new();
        encode_frame(&m, &mut frame).expect("a decoded message must re-encode");
        let again: M = decode_payload(&frame[crate::FRAME_HEADER_LEN..])
            .expect("a re-encoded message must decode");
        assert_eq!(again, m, "the message changed through re-encoding");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_run_clean_and_decode_to_messages() {
        let seeds = seeds();
        assert!(seeds.len() > 40);
        for s in &seeds {
            check_input(s);
        }
    }

    #[test]
    fn short_and_odd_inputs_are_fine() {
        for input in [
            &[][..],
            &[0],
            &[0, 0],
            &[2, 0, 0, 0, 0, 0],
            &[5, 1, 255, 255, 255, 255, 1, 2, 3],
            &[3, 7, 1, 0, 0, 0, 9],
        ] {
            check_input(input);
        }
    }
}
