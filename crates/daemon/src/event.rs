//! What connection tasks tell the core, and how the core takes each in.
//!
//! Connection tasks run on tokio; the core does not: it is plain state driven by these events
//! and by an injected clock, so tests drive it in virtual time without a runtime.

use baton_core::Nanos;
use baton_protocol::{
    AgentMessage, ClientId, DaemonMessage, Hello, HelloReply, ProtocolError, Reply, Request,
};
use tokio::sync::{mpsc, oneshot};

use crate::cluster::PodUpdate;
use crate::core::views::Snapshot;
use crate::core::{AgentLink, AgentTx, Core};
use crate::peer::Peer;

/// One input for the core.
pub(crate) enum Event {
    /// An agent said hello; the core answers with a welcome or a refusal.
    AgentHello {
        client: ClientId,
        peer: Peer,
        hello: Hello,
        tx: AgentTx,
        reply: oneshot::Sender<HelloReply>,
    },
    /// Frames from an agent, decoded at `arrived` on the core's clock.
    Agent {
        client: ClientId,
        msgs: Vec<AgentMessage>,
        arrived: Nanos,
    },
    /// An agent's frame was refused (it was consumed; the connection goes on).
    AgentRefused {
        client: ClientId,
        error: ProtocolError,
    },
    /// An agent's connection closed, or its process exited.
    AgentGone { client: ClientId, why: &'static str },
    /// A CLI connection opened or closed.
    Cli { open: bool },
    /// A CLI request.
    Request {
        peer: Peer,
        request: Request,
        reply: oneshot::Sender<Reply>,
    },
    /// The metrics endpoint wants a snapshot.
    Snapshot { reply: oneshot::Sender<Snapshot> },
    /// The node's pods changed (`--kubernetes`).
    Pods(PodUpdate),
}

impl Event {
    /// Hands the event to `core`, answering whoever waits on a reply.
    pub(crate) fn apply(self, core: &mut Core) {
        match self {
            Event::AgentHello {
                client,
                peer,
                hello,
                tx,
                reply,
            } => {
                let r = core.agent_hello(client, peer, &hello, tx);
                let _ = reply.send(r);
            }
            Event::Agent {
                client,
                msgs,
                arrived,
            } => {
                for m in msgs {
                    core.agent_message(client, m, arrived);
                }
            }
            Event::AgentRefused { client, error } => core.agent_refused(client, &error),
            Event::AgentGone { client, why } => core.drop_client(client, why),
            Event::Cli { open } => core.cli(open),
            Event::Request {
                peer,
                request,
                reply,
            } => {
                let r = core.request(peer, request);
                let _ = reply.send(r);
            }
            Event::Snapshot { reply } => {
                let _ = reply.send(core.snapshot());
            }
            Event::Pods(update) => core.pods_changed(update),
        }
    }
}

/// An agent's writer task is fed through an unbounded channel.
impl AgentLink for mpsc::UnboundedSender<DaemonMessage> {
    fn send(&self, m: DaemonMessage) -> bool {
        mpsc::UnboundedSender::send(self, m).is_ok()
    }
}
