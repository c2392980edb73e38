//! Handshake encoding, version checks and the blocking client side.

use std::io::Cursor;

use super::*;
use crate::{decode_payload, encode_frame};

fn welcome() -> Welcome {
    Welcome {
        version: PROTOCOL_VERSION,
        client: ClientId(3),
        daemon_pid: 77,
        software: "batond 0.1.0".into(),
        policy: "hpf".into(),
        stats_interval_ms: 500,
    }
}

/// A stream that answers with `reply` and records what is written.
struct Peer {
    reply: Cursor<Vec<u8>>,
    sent: Vec<u8>,
}

impl Read for Peer {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.reply.read(buf)
    }
}

impl Write for Peer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.sent.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn peer_answering(reply: Option<&HelloReply>) -> Peer {
    let mut bytes = Vec::new();
    if let Some(r) = reply {
        encode_frame(r, &mut bytes).unwrap();
    }
    Peer {
        reply: Cursor::new(bytes),
        sent: Vec::new(),
    }
}

#[test]
fn wrong_version_is_reported_with_both_versions() {
    let mut h = Hello::new(Role::Agent, 10, "baton-agent 9.0");
    h.version = PROTOCOL_VERSION + 1;
    let bytes = postcard::to_allocvec(&h).unwrap();
    let e = decode_payload::<Hello>(&bytes).unwrap_err();
    assert!(matches!(
        e,
        ProtocolError::WrongVersion { ours, theirs } if ours == PROTOCOL_VERSION && theirs == PROTOCOL_VERSION + 1
    ));
    assert!(e.keeps_sync());
    let refused = Refused::for_error(&e);
    assert_eq!(refused.reason, RefusalReason::VersionMismatch);
    let theirs = format!("v{}", PROTOCOL_VERSION + 1);
    assert!(refused.message.contains(&theirs), "{}", refused.message);
    assert!(refused.message.contains(&format!("v{PROTOCOL_VERSION}")));
}

#[test]
fn a_future_hello_with_another_layout_still_reads_as_a_version_mismatch() {
    // The next version followed by fields this build does not know.
    let next = PROTOCOL_VERSION + 1;
    let mut bytes = postcard::to_allocvec(&next).unwrap();
    bytes.extend_from_slice(&[0xff, 0xff, 0xff, 0x07, 42]);
    let e = decode_payload::<Hello>(&bytes).unwrap_err();
    assert!(
        matches!(e, ProtocolError::WrongVersion { theirs, .. } if theirs == next),
        "{e}"
    );
}

#[test]
fn frozen_encodings_do_not_change() {
    let h = Hello::new(Role::Cli, 5, "x");
    let bytes = postcard::to_allocvec(&h).unwrap();
    assert_eq!(
        &bytes[..1],
        &postcard::to_allocvec(&PROTOCOL_VERSION).unwrap()[..]
    );
    let r = HelloReply::Refused(Refused {
        version: 1,
        reason: RefusalReason::VersionMismatch,
        message: "x".into(),
    });
    assert_eq!(postcard::to_allocvec(&r).unwrap(), vec![1, 1, 0, 1, b'x']);
}

#[test]
fn hello_pid_must_be_a_process_id() {
    let e = Hello::new(Role::Agent, 0, "a").validate().unwrap_err();
    assert_eq!(e.field(), Some("pid"));
}

#[test]
fn hello_software_must_be_given() {
    let e = Hello::new(Role::Agent, 1, "").validate().unwrap_err();
    assert_eq!(e.field(), Some("software"));
}

#[test]
fn hello_new_sanitizes_software() {
    let h = Hello::new(Role::Agent, 1, &"\u{1b}x".repeat(100));
    assert!(h.validate().is_ok());
}

#[test]
fn welcome_version_must_match() {
    let mut w = welcome();
    w.version += 1;
    let e = HelloReply::Welcome(w).validate().unwrap_err();
    assert!(matches!(e, ProtocolError::WrongVersion { .. }));
}

#[test]
fn welcome_policy_must_be_a_name() {
    let mut w = welcome();
    w.policy = "Not A Name".into();
    let e = HelloReply::Welcome(w).validate().unwrap_err();
    assert_eq!(e.field(), Some("policy"));
}

#[test]
fn welcome_stats_interval_in_range_or_zero() {
    let mut w = welcome();
    w.stats_interval_ms = 0;
    assert!(HelloReply::Welcome(w.clone()).validate().is_ok());
    for bad in [MIN_STATS_INTERVAL_MS - 1, MAX_STATS_INTERVAL_MS + 1] {
        w.stats_interval_ms = bad;
        let e = HelloReply::Welcome(w.clone()).validate().unwrap_err();
        assert_eq!(e.field(), Some("stats_interval_ms"));
    }
}

#[test]
fn welcome_daemon_pid_and_software() {
    let mut w = welcome();
    w.daemon_pid = 0;
    let e = HelloReply::Welcome(w).validate().unwrap_err();
    assert_eq!(e.field(), Some("daemon_pid"));
    let mut w = welcome();
    w.software.clear();
    let e = HelloReply::Welcome(w).validate().unwrap_err();
    assert_eq!(e.field(), Some("software"));
}

#[test]
fn refused_message_must_be_printable() {
    let mut r = Refused::new(RefusalReason::ShuttingDown, "bye");
    r.message = "a\u{7}".into();
    let e = HelloReply::Refused(r).validate().unwrap_err();
    assert_eq!(e.field(), Some("message"));
    assert!(!Refused::new(RefusalReason::BadHello, "").message.is_empty());
}

#[test]
fn client_handshake_returns_the_welcome() {
    let mut peer = peer_answering(Some(&HelloReply::Welcome(welcome())));
    let w = client_handshake(&mut peer, &Hello::new(Role::Cli, 9, "baton 0.1.0")).unwrap();
    assert_eq!(w, welcome());
    let sent: Hello = read_frame(&mut Cursor::new(peer.sent)).unwrap().unwrap();
    assert_eq!(sent.role, Role::Cli);
}

#[test]
fn client_handshake_reports_a_refusal() {
    let r = Refused::new(RefusalReason::Unauthorized, "uid 1000 may not connect");
    let mut peer = peer_answering(Some(&HelloReply::Refused(r)));
    let e = client_handshake(&mut peer, &Hello::new(Role::Agent, 9, "a")).unwrap_err();
    assert!(matches!(
        e,
        ProtocolError::Refused {
            reason: RefusalReason::Unauthorized,
            ..
        }
    ));
    assert!(e.to_string().contains("uid 1000"), "{e}");
}

#[test]
fn client_handshake_reports_a_closed_connection() {
    let mut peer = peer_answering(None);
    let e = client_handshake(&mut peer, &Hello::new(Role::Agent, 9, "a")).unwrap_err();
    assert!(e.to_string().contains("during the handshake"), "{e}");
}
