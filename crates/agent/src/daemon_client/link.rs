//! The connected socket's sending side, and the messages built from the client's state.
//!
//! A frame goes out with one non-blocking `send` (`MSG_DONTWAIT | MSG_NOSIGNAL`) when nothing
//! is waiting before it; the rest, and every frame behind it, wait in the backlog until the
//! background thread can write them. Frames therefore leave in the order they were sent.

use std::io;
use std::os::unix::net::UnixStream;
use std::sync::Arc;

use baton_core::{Nanos, XQueueId, XQueueStatus};
use baton_protocol::{
    AgentMessage, LaunchWindow, QueueCreated, QueueId, QueueStats, StatsReport, WireLevel,
    encode_frame,
};
use rustix::net::SendFlags;

use super::tracked::Tracked;

/// The most bytes left waiting for a daemon that does not read: beyond this it counts as gone.
pub(crate) const MAX_BACKLOG: usize = 4 * 1024 * 1024;

/// A connection's sending side.
pub(crate) struct Link {
    pub(crate) sock: Arc<UnixStream>,
    backlog: Vec<u8>,
    /// The socket failed or the backlog overflowed: the background thread disconnects.
    pub(crate) broken: bool,
    scratch: Vec<u8>,
}

impl Link {
    pub(crate) fn new(sock: Arc<UnixStream>) -> Link {
        Link {
            sock,
            backlog: Vec::new(),
            broken: false,
            scratch: Vec::with_capacity(128),
        }
    }

    /// Whether frames wait for the background thread.
    pub(crate) fn pending(&self) -> bool {
        !self.backlog.is_empty()
    }

    /// Queues `msg` behind everything else without trying the socket.
    pub(crate) fn queue(&mut self, msg: &AgentMessage) {
        if let Err(e) = encode_frame(msg, &mut self.backlog) {
            tracing::warn!(message = msg.name(), error = %e, "not sent: invalid message");
        }
    }

    /// Sends `msg` now if possible; returns whether the background thread must be woken (to
    /// write what is left, or because the link broke).
    pub(crate) fn send(&mut self, msg: &AgentMessage) -> bool {
        if self.broken {
            return false;
        }
        self.scratch.clear();
        if let Err(e) = encode_frame(msg, &mut self.scratch) {
            tracing::warn!(message = msg.name(), error = %e, "not sent: invalid message");
            return false;
        }
        if !self.backlog.is_empty() {
            self.backlog.extend_from_slice(&self.scratch);
            if self.backlog.len() > MAX_BACKLOG {
                self.broken = true;
            }
            return true;
        }
        match send_some(&self.sock, &self.scratch) {
            Ok(n) if n == self.scratch.len() => false,
            Ok(n) => {
                self.backlog.extend_from_slice(&self.scratch[n..]);
                true
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.backlog.extend_from_slice(&self.scratch);
                true
            }
            Err(_) => {
                self.broken = true;
                true
            }
        }
    }

    /// Writes as much of the backlog as the socket takes. An error marks the link broken.
    pub(crate) fn flush(&mut self) {
        while !self.backlog.is_empty() && !self.broken {
            match send_some(&self.sock, &self.backlog) {
                Ok(n) => {
                    self.backlog.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => self.broken = true,
            }
        }
    }
}

/// One non-blocking send that never raises `SIGPIPE`.
pub(crate) fn send_some(sock: &UnixStream, buf: &[u8]) -> io::Result<usize> {
    rustix::net::send(sock, buf, SendFlags::DONTWAIT | SendFlags::NOSIGNAL).map_err(io::Error::from)
}

/// The announcement of a tracked queue whose hardware state is `status`.
pub(crate) fn queue_created(
    id: XQueueId,
    q: &Tracked,
    status: &XQueueStatus,
    now: Nanos,
) -> AgentMessage {
    AgentMessage::QueueCreated(QueueCreated {
        queue: QueueId::from(id),
        label: q.info.label.clone(),
        device: q.info.device.clone(),
        level: WireLevel::from(status.level.min(status.max_level)),
        max_level: WireLevel::from(status.max_level),
        launch: LaunchWindow::from(status.config),
        hints: q.info.hints.clone(),
        ready: q.ready,
        transition: q.transition,
        at_ns: now.0,
    })
}

/// The counters of `queues` (with the status each reported) at `now`.
pub(crate) fn stats(queues: &[(XQueueId, XQueueStatus, u64)], now: Nanos) -> AgentMessage {
    let max_in_flight = baton_core::LaunchConfig::MAX_THRESHOLD;
    AgentMessage::Stats(StatsReport {
        at_ns: now.0,
        queues: queues
            .iter()
            .map(|(id, s, busy_ns)| {
                let launched = s.submitted.saturating_sub(s.pending);
                QueueStats {
                    queue: QueueId::from(*id),
                    launched,
                    completed: s.completed.min(launched),
                    in_flight: u32::try_from(s.inflight)
                        .unwrap_or(u32::MAX)
                        .min(max_in_flight),
                    buffered: s.pending,
                    busy_ns: *busy_ns,
                }
            })
            .take(baton_protocol::MAX_QUEUES_PER_CLIENT)
            .collect(),
    })
}
