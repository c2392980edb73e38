//! The tokio codec: the daemon's side of a connection, over an in-memory duplex pipe.

use baton_protocol::samples;
use baton_protocol::*;
use bytes::BytesMut;
use futures_util::{SinkExt, StreamExt};
use tokio::io::AsyncWriteExt;
use tokio_util::codec::{Decoder, Framed};

fn frame_of<M: Message>(m: &M) -> Vec<u8> {
    let mut f = Vec::new();
    encode_frame(m, &mut f).unwrap();
    f
}

#[tokio::test]
async fn handshake_then_agent_messages_sent_in_one_write() {
    let (mut client, daemon) = tokio::io::duplex(64);
    let agent_msgs = samples::agent_messages();
    // The agent writes its hello and every event at once, before hearing back, then reads
    // what the daemon sends.
    let mut bytes = frame_of(&samples::hellos()[0]);
    for m in &agent_msgs {
        bytes.extend(frame_of(m));
    }
    let agent_side = tokio::spawn(async move {
        client.write_all(&bytes).await.unwrap();
        let mut hs = Framed::new(client, FrameCodec::<HelloReply, Hello>::new());
        let welcome = hs.next().await.unwrap().unwrap();
        let mut ops = hs.map_codec(|_| FrameCodec::<DaemonMessage, AgentMessage>::new());
        let mut got = Vec::new();
        for _ in samples::daemon_messages() {
            got.push(ops.next().await.unwrap().unwrap());
        }
        (welcome, got)
    });

    let mut hs = Framed::new(daemon, FrameCodec::<Hello, HelloReply>::new());
    let hello = hs.next().await.unwrap().unwrap();
    assert_eq!(hello.role, Role::Agent);
    hs.send(samples::hello_replies()[0].clone()).await.unwrap();
    let mut agent = hs.map_codec(|_| FrameCodec::<AgentMessage, DaemonMessage>::new());
    for m in &agent_msgs {
        assert_eq!(&agent.next().await.unwrap().unwrap(), m);
    }
    for op in samples::daemon_messages() {
        agent.send(op).await.unwrap();
    }
    let (welcome, got) = agent_side.await.unwrap();
    assert_eq!(welcome, samples::hello_replies()[0]);
    assert_eq!(got, samples::daemon_messages());
    assert!(agent.next().await.is_none(), "clean end of stream");
}

#[tokio::test]
async fn an_oversized_frame_ends_the_stream_with_an_error() {
    let (mut client, daemon) = tokio::io::duplex(64);
    client.write_all(&u32::MAX.to_le_bytes()).await.unwrap();
    let mut framed = Framed::new(daemon, FrameCodec::<Request, Reply>::new());
    let e = framed.next().await.unwrap().unwrap_err();
    assert!(matches!(e, ProtocolError::Oversized { .. }), "{e}");
    assert!(framed.next().await.is_none());
}

#[tokio::test]
async fn an_invalid_request_can_be_answered_before_closing() {
    let (mut client, daemon) = tokio::io::duplex(256);
    let bad = postcard::to_allocvec(&Request::SetPriority {
        target: Target::Process { pid: 1 },
        priority: WirePriority(1000),
    })
    .unwrap();
    let mut f = u32::try_from(bad.len()).unwrap().to_le_bytes().to_vec();
    f.extend(bad);
    client.write_all(&f).await.unwrap();
    let mut framed = Framed::new(daemon, FrameCodec::<Request, Reply>::new());
    let e = framed.next().await.unwrap().unwrap_err();
    assert!(e.keeps_sync());
    framed
        .send(Reply::Error(ErrorReply::for_error(&e)))
        .await
        .unwrap();
    drop(framed);
    let mut cli = Framed::new(client, FrameCodec::<Reply, Request>::new());
    match cli.next().await.unwrap().unwrap() {
        Reply::Error(err) => {
            assert_eq!(err.kind, ErrorKind::InvalidArgument);
            assert!(err.message.contains("set_priority.priority"), "{err}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn decoder_reserves_what_the_pending_frame_needs() {
    let f = frame_of(&samples::replies()[1]);
    let mut codec = FrameCodec::<Reply, Request>::new();
    let mut buf = BytesMut::from(&f[..FRAME_HEADER_LEN + 1]);
    assert!(codec.decode(&mut buf).unwrap().is_none());
    assert!(buf.capacity() >= f.len());
    buf.extend_from_slice(&f[FRAME_HEADER_LEN + 1..]);
    assert_eq!(
        codec.decode(&mut buf).unwrap().unwrap(),
        samples::replies()[1]
    );
}

#[test]
fn encoder_refuses_invalid_messages() {
    let mut codec = FrameCodec::<Reply, Request>::new();
    let mut buf = BytesMut::new();
    let e =
        tokio_util::codec::Encoder::encode(&mut codec, Request::List { pid: Some(0) }, &mut buf)
            .unwrap_err();
    assert_eq!(e.field(), Some("list.pid"));
    assert!(buf.is_empty());
}
