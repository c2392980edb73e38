//! The agent's link to the daemon: global scheduling from inside an application process.
//!
//! [`DaemonClient`] plays the role [`SchedulerThread`](baton_scheduler::SchedulerThread) plays in local
//! mode: queues report to its [`sink`](DaemonClient::sink), the process registers its queues
//! with it, and a background thread (a plain `std` thread: it lives inside arbitrary
//! applications) talks to the daemon:
//!
//! - it connects (the sockets of [`ClientConfig::sockets`], in order), handshakes, announces
//!   the process and every registered queue with its current state;
//! - it forwards queue events, hints, queue creation and destruction as they happen, and
//!   periodic [`StatsReport`](baton_protocol::StatsReport)s;
//! - it applies the daemon's [`Operations`](baton_protocol::Operations) (suspend, resume) and
//!   [`Configure`](baton_protocol::DaemonMessage::Configure) to the registered queues.
//!
//! # Fail-open
//!
//! If the daemon is absent, dies, stops reading, or releases the process, every queue the
//! daemon suspended is resumed at once and the application runs unscheduled: every queue
//! launches without its window, since nothing can suspend it (and a queue that gives way
//! while outranked, by time slice or SMs, runs at full speed). The thread tries again with a
//! growing back-off and, when a daemon answers, bounds every queue again (as the daemon
//! assumes of a new queue) and registers everything with its current state. An event that
//! happens while disconnected is simply folded into that state.
//!
//! # Never blocking the application
//!
//! An application thread (a queue's [`EventSink`] call, `register`, `hint`) only takes the
//! client's state lock, updates it and, when connected, hands the frame to the socket with a
//! non-blocking `send`; whatever the socket does not take at once is left in a bounded backlog
//! for the background thread. A daemon that stops reading for long enough to fill the backlog
//! is treated as gone. Writes never raise `SIGPIPE`.
//!
//! # Fork
//!
//! A forked child must not speak for its parent: every entry point checks the process id
//! against the creator's and does nothing in another process, and
//! [`DaemonClient::forget_in_child`] (async-signal-safe, for `pthread_atfork` child handlers)
//! closes the inherited socket so the parent's death is still seen by the daemon as a closed
//! connection. The child builds its own client, with its own identity.
//!
//! # Locks
//!
//! `apply` (held while the background thread applies operations, or while fail-open resumes
//! queues) is taken before `state`, never after. Queue control calls (`suspend`, `resume`,
//! `status`) are made without `state` held, because a queue reports events to the sink, which
//! takes `state`.

mod config;
mod io;
mod link;
mod shared;
mod tracked;

pub use config::{ClientConfig, QueueInfo};

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use baton_core::{EventSink, QueueControl, QueueState, XQueueId};
use baton_protocol::{AgentMessage, AgentTarget, Hint, ProtocolError, QueueId};

use shared::{Shared, Sink, State};
use tracked::Tracked;

/// The frames a process exchanged with the daemon: what scheduling through it cost the
/// process's link thread, and how often the daemon acted on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkTraffic {
    /// Frames sent (queue events, hints, stats, answers).
    pub sent: u64,
    /// `Operations` frames received (suspensions and resumptions).
    pub operations: u64,
    /// `Attention` frames received (how a queue reports and launches).
    pub attention: u64,
    /// Every other frame received (configuration, pings, stats intervals).
    pub other: u64,
}

/// Schedules this process's queues through the daemon; see the module documentation.
pub struct DaemonClient {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl DaemonClient {
    /// Starts the background thread, which connects at once (and keeps trying).
    pub fn start(cfg: ClientConfig) -> std::io::Result<DaemonClient> {
        use rustix::event::{EventfdFlags, eventfd};
        let wake = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?;
        let state = State {
            process_hints: cfg.hints.clone(),
            ..State::default()
        };
        let shared = Arc::new(Shared {
            pid: std::process::id(),
            cfg,
            state: Mutex::new(state),
            apply: Mutex::new(()),
            wake,
            stop: AtomicBool::new(false),
            live_fd: AtomicI32::new(-1),
            connected: AtomicBool::new(false),
            connections: AtomicU64::new(0),
            received: Default::default(),
        });
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("baton-daemon-link".into())
            .spawn(move || io::run(&s))?;
        Ok(DaemonClient {
            shared,
            thread: Some(thread),
        })
    }

    /// The sink this process's queues must report their events to.
    pub fn sink(&self) -> Arc<dyn EventSink> {
        Arc::new(Sink(Arc::clone(&self.shared)))
    }

    /// Starts scheduling `ctl` through the daemon (announced now if connected, else at the
    /// next connection).
    pub fn register(&self, ctl: Arc<dyn QueueControl>, info: QueueInfo) {
        let sh = &self.shared;
        if !sh.here() {
            return;
        }
        let status = ctl.status();
        let now = sh.now();
        let mut st = sh.lock();
        let seen = st.early.remove(&status.id).unwrap_or(0);
        let ready = status.state == QueueState::Ready;
        // The latest transition consistent with the state read: the one seen, or the next.
        let transition = if (seen % 2 == 1) == ready {
            seen
        } else {
            seen + 1
        };
        let tracked = Tracked {
            ctl,
            info,
            ready,
            transition,
            suspended: false,
            busy_ns: 0,
            ready_since: ready.then_some(now),
            registered: status,
        };
        let msg = link::queue_created(status.id, &tracked, &status, now);
        st.queues.insert(status.id, tracked);
        let wake = st.send(&msg);
        drop(st);
        if wake {
            sh.ring();
        }
    }

    /// Stops scheduling `id` (its hardware queue is going away); a queue the daemon held
    /// suspended is resumed first so its work is not stranded.
    pub fn unregister(&self, id: XQueueId) {
        let sh = &self.shared;
        if !sh.here() {
            return;
        }
        let _apply = sh.lock_apply();
        let mut st = sh.lock();
        let Some(q) = st.queues.remove(&id) else {
            return;
        };
        let wake = st.send(&AgentMessage::QueueDestroyed {
            queue: QueueId::from(id),
        });
        drop(st);
        if q.suspended {
            let _ = q.ctl.resume(baton_core::ResumeFlags::default());
        }
        if wake {
            sh.ring();
        }
    }

    /// Gives a hint about one of this process's queues or about the process; it is kept and
    /// sent again after a reconnection. Refused if the hint is invalid or not allowed for the
    /// target (a k-EDF `k` binds every process and may only come from the CLI).
    pub fn hint(&self, target: AgentTarget, hint: Hint) -> Result<(), ProtocolError> {
        hint.validate()?;
        hint.check_scope(target.scope())?;
        let sh = &self.shared;
        if !sh.here() {
            return Ok(());
        }
        let mut st = sh.lock();
        match target {
            AgentTarget::Process => apply_hint(&mut st.process_hints, hint),
            AgentTarget::Queue(q) => match st.queues.get_mut(&XQueueId::from(q)) {
                Some(t) => apply_hint(&mut t.info.hints, hint),
                None => {
                    return Err(ProtocolError::invalid(
                        "target",
                        format!("{q} is not registered with this agent"),
                    ));
                }
            },
        }
        let wake = st.send(&AgentMessage::Hint { target, hint });
        drop(st);
        if wake {
            self.shared.ring();
        }
        Ok(())
    }

    /// Whether the client is connected to a daemon now.
    pub fn is_connected(&self) -> bool {
        self.shared.connected.load(Ordering::Acquire)
    }

    /// How many times it connected so far (a reconnection counts again).
    pub fn connections(&self) -> u64 {
        self.shared.connections.load(Ordering::Acquire)
    }

    /// The frames exchanged with the daemon so far, over every connection.
    pub fn traffic(&self) -> LinkTraffic {
        let r = &self.shared.received;
        LinkTraffic {
            sent: self.shared.lock().sent,
            operations: r.operations.load(Ordering::Relaxed),
            attention: r.attention.load(Ordering::Relaxed),
            other: r.other.load(Ordering::Relaxed),
        }
    }

    /// How many registered queues the daemon holds suspended now.
    pub fn suspended(&self) -> usize {
        self.shared
            .lock()
            .queues
            .values()
            .filter(|q| q.suspended)
            .count()
    }

    /// In a forked child: closes the connection inherited from the parent, touching no lock
    /// (async-signal-safe). The client is unusable in the child afterwards; build another.
    pub fn forget_in_child(&self) {
        let fd = self.shared.live_fd.swap(-1, Ordering::AcqRel);
        if fd >= 0 {
            // SAFETY: `fd` is the connected socket, which only the background thread (absent in
            // the child) would close; nothing in the child uses it after this. Closing is
            // async-signal-safe.
            drop(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) });
        }
    }
}

impl Drop for DaemonClient {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.ring();
        if let Some(t) = self.thread.take() {
            // The thread never panics on its own; a panic in a queue's control call has
            // already been reported by the runtime.
            let _ = t.join();
        }
    }
}

/// `hint` applied to a set of hints in force: it replaces the one of its kind, or removes it
/// if it is a clear.
pub(crate) fn apply_hint(set: &mut Vec<Hint>, hint: Hint) {
    set.retain(|h| h.kind() != hint.kind());
    if !matches!(hint, Hint::Clear(_)) {
        set.push(hint);
    }
}

#[cfg(test)]
mod tests;
