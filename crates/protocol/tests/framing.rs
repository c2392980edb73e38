//! Framing on blocking streams and in pieces: truncated, oversized, malformed and partial
//! frames.

use std::io::{self, Cursor, Read};

use baton_protocol::samples;
use baton_protocol::*;
use bytes::BytesMut;

fn frame_of<M: Message>(m: &M) -> Vec<u8> {
    let mut f = Vec::new();
    encode_frame(m, &mut f).unwrap();
    f
}

/// A frame with an arbitrary payload.
fn raw_frame(payload: &[u8]) -> Vec<u8> {
    let mut f = u32::try_from(payload.len()).unwrap().to_le_bytes().to_vec();
    f.extend_from_slice(payload);
    f
}

/// Hands out at most `piece` bytes per read, with an `Interrupted` error before each.
struct Trickle {
    data: Cursor<Vec<u8>>,
    piece: usize,
    interrupt: bool,
    read: usize,
}

impl Trickle {
    fn new(data: Vec<u8>, piece: usize) -> Trickle {
        Trickle {
            data: Cursor::new(data),
            piece,
            interrupt: false,
            read: 0,
        }
    }
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.interrupt = !self.interrupt;
        if self.interrupt {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "signal"));
        }
        let n = buf.len().min(self.piece);
        let n = self.data.read(&mut buf[..n])?;
        self.read += n;
        Ok(n)
    }
}

#[test]
fn frames_arrive_one_byte_at_a_time() {
    let msgs = samples::agent_messages();
    let stream: Vec<u8> = msgs.iter().flat_map(frame_of).collect();
    let mut r = Trickle::new(stream, 1);
    for m in &msgs {
        assert_eq!(&read_frame::<AgentMessage, _>(&mut r).unwrap().unwrap(), m);
    }
    assert!(read_frame::<AgentMessage, _>(&mut r).unwrap().is_none());
}

#[test]
fn incremental_decoding_in_every_split() {
    let msgs = samples::requests();
    let stream: Vec<u8> = msgs.iter().flat_map(frame_of).collect();
    for piece in [1, 2, 3, 5, 7, 64] {
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for chunk in stream.chunks(piece) {
            buf.extend_from_slice(chunk);
            while let Some(m) = decode_frame::<Request>(&mut buf).unwrap() {
                got.push(m);
            }
        }
        assert_eq!(got, msgs, "piece {piece}");
        assert!(buf.is_empty());
    }
}

#[test]
fn an_incomplete_frame_leaves_the_buffer_untouched() {
    let f = frame_of(&Request::Status);
    let mut buf = BytesMut::from(&f[..f.len() - 1]);
    assert!(decode_frame::<Request>(&mut buf).unwrap().is_none());
    assert_eq!(buf.len(), f.len() - 1);
    let mut buf = BytesMut::from(&f[..2]);
    assert!(decode_frame::<Request>(&mut buf).unwrap().is_none());
}

#[test]
fn clean_end_of_stream_between_frames() {
    assert!(
        read_frame::<Request, _>(&mut Cursor::new(Vec::new()))
            .unwrap()
            .is_none()
    );
}

#[test]
fn truncated_header() {
    let e = read_frame::<Request, _>(&mut Cursor::new(vec![5, 0])).unwrap_err();
    assert!(matches!(
        e,
        ProtocolError::Truncated {
            expected: 4,
            got: 2
        }
    ));
    assert!(!e.keeps_sync());
}

#[test]
fn truncated_body() {
    let f = frame_of(&samples::requests()[4]);
    let e = read_frame::<Request, _>(&mut Trickle::new(f[..f.len() - 3].to_vec(), 2)).unwrap_err();
    assert!(matches!(e, ProtocolError::Truncated { .. }), "{e}");
    assert!(e.to_string().contains("exited or crashed"));
}

#[test]
fn oversized_length_is_refused_without_reading_the_body() {
    let mut data = u32::MAX.to_le_bytes().to_vec();
    data.extend_from_slice(&[0; 100]);
    let mut r = Trickle::new(data.clone(), 1000);
    let e = read_frame::<AgentMessage, _>(&mut r).unwrap_err();
    assert!(matches!(
        e,
        ProtocolError::Oversized {
            len: 4_294_967_295,
            max: MAX_FRAME_LEN
        }
    ));
    assert_eq!(r.read, FRAME_HEADER_LEN, "the body must not be read");
    let mut buf = BytesMut::from(&data[..4]);
    let e = decode_frame::<AgentMessage>(&mut buf).unwrap_err();
    assert!(matches!(e, ProtocolError::Oversized { .. }));
    assert!(!e.keeps_sync());
}

#[test]
fn limits_differ_by_direction() {
    let len = u32::try_from(MAX_FRAME_LEN + 1).unwrap().to_le_bytes();
    let mut buf = BytesMut::from(&len[..]);
    assert!(decode_frame::<Request>(&mut buf).is_err());
    let mut buf = BytesMut::from(&len[..]);
    assert!(
        decode_frame::<Reply>(&mut buf).unwrap().is_none(),
        "replies may be larger"
    );
}

#[test]
fn empty_payload_is_malformed() {
    let e = read_frame::<Request, _>(&mut Cursor::new(raw_frame(&[]))).unwrap_err();
    assert!(
        matches!(
            e,
            ProtocolError::Malformed {
                what: "request",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn unknown_variant_is_malformed() {
    let e = decode_payload::<Request>(&[200]).unwrap_err();
    assert!(matches!(e, ProtocolError::Malformed { .. }), "{e}");
    assert!(e.to_string().contains("same Baton build"), "{e}");
}

#[test]
fn trailing_bytes_are_malformed() {
    let mut f = frame_of(&Request::Status);
    f.push(0);
    f[0] += 1;
    let e = read_frame::<Request, _>(&mut Cursor::new(f)).unwrap_err();
    assert!(e.to_string().contains("1 unexpected bytes"), "{e}");
}

#[test]
fn a_string_longer_than_the_frame_is_malformed() {
    // Request::SetPolicy with a name claiming 100 bytes but carrying 3.
    let e = decode_payload::<Request>(&[4, 100, b'a', b'b', b'c']).unwrap_err();
    assert!(matches!(e, ProtocolError::Malformed { .. }), "{e}");
}

#[test]
fn invalid_bool_and_utf8_are_malformed() {
    // AgentMessage::QueueState with ready = 2.
    assert!(decode_payload::<AgentMessage>(&[5, 1, 2, 1, 0]).is_err());
    // Request::SetPolicy with invalid UTF-8 in the name.
    let e = decode_payload::<Request>(&[4, 2, 0xff, 0xfe, 0]).unwrap_err();
    assert!(matches!(e, ProtocolError::Malformed { .. }), "{e}");
}

#[test]
fn an_invalid_message_is_consumed_and_the_next_one_reads() {
    // A well-formed but out-of-range request, then a good one.
    let bad = Request::TraceStart { capacity: 0 };
    let mut stream = raw_frame(&postcard::to_allocvec(&bad).unwrap());
    stream.extend(frame_of(&Request::Status));
    let mut r = Cursor::new(stream.clone());
    let e = read_frame::<Request, _>(&mut r).unwrap_err();
    assert_eq!(e.field(), Some("trace_start.capacity"));
    assert!(e.keeps_sync());
    assert_eq!(
        read_frame::<Request, _>(&mut r).unwrap(),
        Some(Request::Status)
    );
    let mut buf = BytesMut::from(&stream[..]);
    assert!(decode_frame::<Request>(&mut buf).is_err());
    assert_eq!(
        decode_frame::<Request>(&mut buf).unwrap(),
        Some(Request::Status)
    );
}

#[test]
fn encoding_refuses_invalid_messages_and_leaves_the_buffer_alone() {
    let mut out = vec![9, 9];
    let e = encode_frame(&Request::TraceStart { capacity: 0 }, &mut out).unwrap_err();
    assert_eq!(e.field(), Some("trace_start.capacity"));
    assert_eq!(out, vec![9, 9]);
}

#[test]
fn encoding_refuses_oversized_messages() {
    // No valid Baton message exceeds its limit (see roundtrip.rs), so a made-up message type
    // exercises the size guard.
    #[derive(serde::Serialize, serde::Deserialize, Debug)]
    struct Big(Vec<u8>);
    impl Message for Big {
        const NAME: &'static str = "big";
        const MAX_FRAME_LEN: usize = 8;
        fn validate(&self) -> Result<(), ProtocolError> {
            Ok(())
        }
    }
    let mut out = Vec::new();
    let e = encode_frame(&Big(vec![0; 8]), &mut out).unwrap_err();
    assert!(
        matches!(e, ProtocolError::Oversized { len: 9, max: 8 }),
        "{e}"
    );
    assert!(out.is_empty());
    encode_frame(&Big(vec![0; 7]), &mut out).unwrap();
    assert_eq!(out.len(), FRAME_HEADER_LEN + 8);
}

#[test]
fn write_frame_writes_whole_frames() {
    let mut out = Vec::new();
    for r in samples::replies() {
        write_frame(&mut out, &r).unwrap();
    }
    let mut cur = Cursor::new(out);
    for r in samples::replies() {
        assert_eq!(read_frame::<Reply, _>(&mut cur).unwrap().unwrap(), r);
    }
}

#[test]
fn io_errors_are_reported() {
    struct Broken;
    impl Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::Error::new(io::ErrorKind::ConnectionReset, "reset"))
        }
    }
    let e = read_frame::<Request, _>(&mut Broken).unwrap_err();
    assert!(matches!(e, ProtocolError::Io(_)));
    assert!(e.to_string().contains("reset"));
}
