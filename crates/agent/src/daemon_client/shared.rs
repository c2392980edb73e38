//! What the application's threads and the client's background thread share: the registered
//! queues and the live link under one lock (see the parent's "Locks"), and the sink queues
//! report to.

use std::collections::{BTreeMap, HashMap};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64};
use std::sync::{Arc, Mutex, MutexGuard};

use baton_core::locks;
use baton_core::{EventSink, Nanos, QueueEvent, QueueState, XQueueId};
use baton_protocol::{AgentMessage, Hint, QueueId, QueueStateChange};

use super::config::ClientConfig;
use super::link::Link;
use super::tracked::Tracked;

/// The most early transitions remembered for queues not registered yet.
pub(super) const MAX_EARLY: usize = 4096;

#[derive(Default)]
pub(super) struct State {
    pub(super) queues: BTreeMap<XQueueId, Tracked>,
    /// Transitions of queues that reported before they were registered.
    pub(super) early: HashMap<XQueueId, u64>,
    pub(super) process_hints: Vec<Hint>,
    pub(super) link: Option<Link>,
    /// Frames handed to a live link so far, over every connection.
    pub(super) sent: u64,
}

impl State {
    /// Sends `msg` if connected; returns whether the background thread must be woken.
    pub(super) fn send(&mut self, msg: &AgentMessage) -> bool {
        let Some(l) = self.link.as_mut() else {
            return false;
        };
        self.sent += 1;
        l.send(msg)
    }
}

pub(super) struct Shared {
    pub(super) cfg: ClientConfig,
    pub(super) pid: u32,
    pub(super) state: Mutex<State>,
    pub(super) apply: Mutex<()>,
    pub(super) wake: OwnedFd,
    pub(super) stop: AtomicBool,
    /// The connected socket's descriptor, or -1 (for `forget_in_child`).
    pub(super) live_fd: AtomicI32,
    pub(super) connected: AtomicBool,
    pub(super) connections: AtomicU64,
    /// Frames received from the daemon so far, by kind.
    pub(super) received: Received,
}

/// Frames received from the daemon so far, by kind ([`LinkTraffic`](super::LinkTraffic)).
#[derive(Debug, Default)]
pub(super) struct Received {
    /// `Operations` frames.
    pub(super) operations: AtomicU64,
    /// `Attention` frames.
    pub(super) attention: AtomicU64,
    /// Every other frame.
    pub(super) other: AtomicU64,
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        locks::lock(&self.state)
    }

    pub(super) fn lock_apply(&self) -> MutexGuard<'_, ()> {
        locks::lock(&self.apply)
    }

    /// Whether this is the process that created the client (not a forked child).
    pub(super) fn here(&self) -> bool {
        rustix::process::getpid()
            .as_raw_nonzero()
            .get()
            .unsigned_abs()
            == self.pid
    }

    /// Wakes the background thread.
    pub(super) fn ring(&self) {
        let _ = rustix::io::write(&self.wake, &1u64.to_ne_bytes());
    }

    pub(super) fn now(&self) -> Nanos {
        self.cfg.clock.now()
    }
}

/// The sink queues report to; see [`DaemonClient::sink`].
pub(super) struct Sink(pub(super) Arc<Shared>);

impl EventSink for Sink {
    fn on_queue_event(&self, ev: QueueEvent) {
        let sh = &self.0;
        if !sh.here() {
            return;
        }
        let ready = ev.state == QueueState::Ready;
        let mut st = sh.lock();
        let Some(q) = st.queues.get_mut(&ev.queue) else {
            if st.early.len() >= MAX_EARLY {
                st.early.clear();
            }
            let t = st.early.entry(ev.queue).or_default();
            *t = (*t).max(ev.transition);
            return;
        };
        if !q.note(ready, ev.transition, ev.at) {
            return;
        }
        let msg = AgentMessage::QueueState(QueueStateChange {
            queue: QueueId::from(ev.queue),
            ready,
            transition: ev.transition,
            at_ns: ev.at.0,
        });
        let wake = st.send(&msg);
        drop(st);
        if wake {
            sh.ring();
        }
    }
}
