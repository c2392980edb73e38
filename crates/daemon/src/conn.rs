//! One task per connection: the handshake, then a reader (frames to core events) and, for
//! agents, a writer (core messages to frames).
//!
//! A frame that decodes but is invalid (malformed payload, a value out of range, the wrong
//! version) was consumed whole: the peer gets an error and the connection goes on. A frame
//! whose length is over the limit, or a connection that breaks mid-frame, ends the
//! connection. Either way only that connection is affected.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use baton_core::Clock;

use baton_protocol::{
    AgentMessage, ClientId, ErrorReply, Hello, HelloReply, Message, PROTOCOL_VERSION,
    ProtocolError, RefusalReason, Refused, Reply, Request, Role, Welcome, decode_frame,
    encode_frame,
};
use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::sync::{Notify, mpsc, oneshot};

use crate::auth::Authority;
use crate::event::Event;
use crate::peer::{self, Peer};

/// How long a peer has to say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// What every connection task shares: the rules, the core's clock (to stamp arrivals), and a
/// count of live writers so shutdown can wait for them.
pub(crate) struct Shared {
    auth: Authority,
    clock: Arc<dyn Clock>,
    writers: AtomicUsize,
    done: Notify,
}

impl Shared {
    pub(crate) fn new(auth: Authority, clock: Arc<dyn Clock>) -> Shared {
        Shared {
            auth,
            clock,
            writers: AtomicUsize::new(0),
            done: Notify::new(),
        }
    }

    fn writer_done(&self) {
        if self.writers.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.done.notify_waiters();
        }
    }

    /// Waits until every writer finished, at most `limit`.
    pub(crate) async fn drain(&self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        while self.writers.load(Ordering::Acquire) > 0 {
            if tokio::time::timeout_at(deadline, self.done.notified())
                .await
                .is_err()
            {
                return;
            }
        }
    }
}

type CoreTx = mpsc::UnboundedSender<Event>;

/// Serves one connection from hello to close.
pub(crate) async fn connection(stream: UnixStream, id: ClientId, core: CoreTx, sh: Arc<Shared>) {
    let peer = match peer::peer_of(&stream) {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(error = %e, "no peer credentials; closing");
            return;
        }
    };
    let (mut rd, mut wr) = stream.into_split();
    let mut buf = BytesMut::with_capacity(4096);
    let hello =
        match tokio::time::timeout(HELLO_TIMEOUT, read_one::<Hello, _>(&mut rd, &mut buf)).await {
            Err(_) => return,
            Ok(Ok(Some(h))) => h,
            Ok(Ok(None)) => return,
            Ok(Err(e)) => {
                tracing::debug!(uid = peer.uid, pid = peer.pid, error = %e, "bad hello");
                let _ = write(&mut wr, &HelloReply::Refused(Refused::for_error(&e))).await;
                return;
            }
        };
    if !sh.auth.may_connect(peer.uid) {
        let r = Refused::new(
            RefusalReason::Unauthorized,
            &format!(
                "uid {} may not use this daemon, which belongs to uid {}: start your own with \
                 `baton daemon` (or `baton run` starts one), or ask an administrator for a \
                 system daemon (`baton daemon --system`)",
                peer.uid, sh.auth.daemon_uid
            ),
        );
        let _ = write(&mut wr, &HelloReply::Refused(r)).await;
        return;
    }
    match hello.role {
        Role::Agent => agent(rd, wr, buf, peer, id, hello, core, sh).await,
        Role::Cli => {
            // Counted like a writer, so a stopping daemon delivers the reply to `--stop`.
            sh.writers.fetch_add(1, Ordering::AcqRel);
            cli(rd, wr, buf, peer, id, core).await;
            sh.writer_done();
        }
    }
}

/// Reads until one frame of `M` is decoded; `None` at a clean end of stream.
async fn read_one<M: Message, R: AsyncRead + Unpin>(
    rd: &mut R,
    buf: &mut BytesMut,
) -> Result<Option<M>, ProtocolError> {
    loop {
        if let Some(m) = decode_frame::<M>(buf)? {
            return Ok(Some(m));
        }
        if rd.read_buf(buf).await? == 0 {
            return if buf.is_empty() {
                Ok(None)
            } else {
                Err(ProtocolError::Truncated {
                    expected: baton_protocol::FRAME_HEADER_LEN,
                    got: buf.len(),
                })
            };
        }
    }
}

async fn write<M: Message, W: AsyncWrite + Unpin>(wr: &mut W, m: &M) -> std::io::Result<()> {
    let mut out = Vec::new();
    encode_frame(m, &mut out).map_err(std::io::Error::other)?;
    wr.write_all(&out).await
}

#[expect(
    clippy::too_many_arguments,
    reason = "the halves of one connection and its context"
)]
async fn agent(
    mut rd: tokio::net::unix::OwnedReadHalf,
    mut wr: tokio::net::unix::OwnedWriteHalf,
    mut buf: BytesMut,
    peer: Peer,
    client: ClientId,
    hello: Hello,
    core: CoreTx,
    sh: Arc<Shared>,
) {
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let (reply_tx, reply_rx) = oneshot::channel();
    let hello_event = Event::AgentHello {
        client,
        peer,
        hello,
        tx: Box::new(out_tx),
        reply: reply_tx,
    };
    if core.send(hello_event).is_err() {
        return;
    }
    let Ok(reply) = reply_rx.await else {
        return;
    };
    let welcomed = matches!(reply, HelloReply::Welcome(_));
    if write(&mut wr, &reply).await.is_err() || !welcomed {
        let _ = core.send(Event::AgentGone {
            client,
            why: "the welcome could not be delivered",
        });
        return;
    }
    sh.writers.fetch_add(1, Ordering::AcqRel);
    tokio::spawn(writer(wr, out_rx, Arc::clone(&sh)));
    let death = {
        let core = core.clone();
        tokio::spawn(async move {
            if peer::exited(peer.pid).await.is_ok() {
                let _ = core.send(Event::AgentGone {
                    client,
                    why: "its process exited",
                });
            }
        })
    };
    let why = read_agent(&mut rd, &mut buf, client, &core, sh.clock.as_ref()).await;
    death.abort();
    let _ = core.send(Event::AgentGone { client, why });
}

/// Relays an agent's frames to the core until the connection ends; says why it ended.
async fn read_agent(
    rd: &mut tokio::net::unix::OwnedReadHalf,
    buf: &mut BytesMut,
    client: ClientId,
    core: &CoreTx,
    clock: &dyn Clock,
) -> &'static str {
    let mut arrived = clock.now();
    loop {
        let mut msgs = Vec::new();
        loop {
            match decode_frame::<AgentMessage>(buf) {
                Ok(Some(m)) => msgs.push(m),
                Ok(None) => break,
                Err(error) if error.keeps_sync() => {
                    if !msgs.is_empty() {
                        let batch = std::mem::take(&mut msgs);
                        let _ = core.send(Event::Agent {
                            client,
                            msgs: batch,
                            arrived,
                        });
                    }
                    let _ = core.send(Event::AgentRefused { client, error });
                }
                Err(error) => {
                    if !msgs.is_empty() {
                        let _ = core.send(Event::Agent {
                            client,
                            msgs,
                            arrived,
                        });
                    }
                    tracing::warn!(client = client.0, %error, "closing an agent connection");
                    return "it sent an unreadable frame";
                }
            }
        }
        if !msgs.is_empty()
            && core
                .send(Event::Agent {
                    client,
                    msgs,
                    arrived,
                })
                .is_err()
        {
            return "the daemon is stopping";
        }
        match rd.read_buf(buf).await {
            Ok(0) => return "its connection closed",
            Ok(_) => arrived = clock.now(),
            Err(_) => return "its connection failed",
        }
    }
}

/// Writes the core's messages to an agent, as many per write as are waiting.
async fn writer(
    mut wr: tokio::net::unix::OwnedWriteHalf,
    mut rx: mpsc::UnboundedReceiver<baton_protocol::DaemonMessage>,
    sh: Arc<Shared>,
) {
    let mut out = Vec::with_capacity(256);
    while let Some(m) = rx.recv().await {
        out.clear();
        let mut next = Some(m);
        while let Some(m) = next {
            if let Err(e) = encode_frame(&m, &mut out) {
                tracing::error!(error = %e, "not sent: the daemon built an invalid message");
            }
            next = rx.try_recv().ok();
        }
        if wr.write_all(&out).await.is_err() {
            break;
        }
    }
    let _ = wr.shutdown().await;
    sh.writer_done();
}

async fn cli(
    mut rd: tokio::net::unix::OwnedReadHalf,
    mut wr: tokio::net::unix::OwnedWriteHalf,
    mut buf: BytesMut,
    peer: Peer,
    client: ClientId,
    core: CoreTx,
) {
    let (status_tx, status_rx) = oneshot::channel();
    let ask = Event::Request {
        peer,
        request: Request::GetPolicy,
        reply: status_tx,
    };
    if core.send(ask).is_err() {
        return;
    }
    let policy = match status_rx.await {
        Ok(Reply::Policy(p)) => p.current,
        _ => return,
    };
    let welcome = HelloReply::Welcome(Welcome {
        version: PROTOCOL_VERSION,
        client,
        daemon_pid: std::process::id(),
        software: format!("baton-daemon {}", env!("CARGO_PKG_VERSION")),
        policy,
        stats_interval_ms: 0,
    });
    if write(&mut wr, &welcome).await.is_err() {
        return;
    }
    let _ = core.send(Event::Cli { open: true });
    loop {
        let (reply, last) = match read_one::<Request, _>(&mut rd, &mut buf).await {
            Ok(None) => break,
            Ok(Some(request)) => {
                let shutdown = request == Request::Shutdown;
                let (tx, rx) = oneshot::channel();
                if core
                    .send(Event::Request {
                        peer,
                        request,
                        reply: tx,
                    })
                    .is_err()
                {
                    break;
                }
                let Ok(r) = rx.await else { break };
                let done = r == Reply::Done;
                (r, shutdown && done)
            }
            Err(e) => {
                let last = !e.keeps_sync();
                (Reply::Error(ErrorReply::for_error(&e)), last)
            }
        };
        if write(&mut wr, &reply).await.is_err() || last {
            break;
        }
    }
    let _ = core.send(Event::Cli { open: false });
}
