//! The background thread: connect, register, relay, apply; fail open on any break.

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use baton_core::{
    Attention, LaunchConfig, Level, QueueControl, ResumeFlags, SuspendFlags, XQueueId,
};
use baton_protocol::{
    AgentMessage, DaemonMessage, Hello, LaunchWindow, Operations, ProcessStarted, QueueId, Role,
    Welcome, WireLevel, client_handshake, decode_frame, sanitize_text,
};
use bytes::BytesMut;
use rustix::event::{PollFd, PollFlags, poll};
use rustix::net::RecvFlags;

use super::link::{self, Link};
use super::shared::Shared;
use super::tracked::Tracked;

/// The background thread's body: connect and serve until stopped, failing open between
/// connections.
pub(super) fn run(sh: &Shared) {
    let mut backoff = sh.cfg.min_backoff;
    let mut logged_absent = false;
    while !sh.stop.load(Ordering::Acquire) {
        match connect(sh) {
            Ok((sock, welcome)) => {
                backoff = sh.cfg.min_backoff;
                logged_absent = false;
                tracing::info!(client = welcome.client.0, policy = %welcome.policy, "connected to the Baton daemon");
                let why = serve(sh, &sock, welcome.stats_interval_ms);
                tracing::info!(reason = %why, "disconnected from the Baton daemon; running unscheduled");
                fail_open(sh);
                if why == Disconnect::Stopped {
                    break;
                }
            }
            Err(e) => {
                if !logged_absent {
                    tracing::debug!(error = %e, "no Baton daemon answers; running unscheduled and retrying");
                    logged_absent = true;
                }
                // Queues registered since the last attempt run unscheduled too.
                set_unbounded(sh, true);
            }
        }
        if sh.stop.load(Ordering::Acquire) {
            break;
        }
        sleep(sh, backoff);
        backoff = (backoff * 2).min(sh.cfg.max_backoff);
    }
    fail_open(sh);
}

/// Waits `d`, or until woken (a stop).
fn sleep(sh: &Shared, d: Duration) {
    let deadline = Instant::now() + d;
    while !sh.stop.load(Ordering::Acquire) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        let mut fds = [PollFd::new(&sh.wake, PollFlags::IN)];
        let ts = rustix::time::Timespec::try_from(left).ok();
        let _ = poll(&mut fds, ts.as_ref());
        drain_wake(sh);
    }
}

fn drain_wake(sh: &Shared) {
    let mut b = [0u8; 8];
    let _ = rustix::io::read(&sh.wake, &mut b);
}

/// Blocking reads and writes that never raise `SIGPIPE`, for the handshake.
struct NoSigpipe<'a>(&'a UnixStream);

impl Read for NoSigpipe<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self.0).read(buf)
    }
}

impl Write for NoSigpipe<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        rustix::net::send(self.0, buf, rustix::net::SendFlags::NOSIGNAL).map_err(io::Error::from)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Why one socket did not give a connection.
#[derive(Debug, thiserror::Error)]
enum Attempt {
    #[error("{}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        source: io::Error,
    },
    #[error("{}: {source}", path.display())]
    Handshake {
        path: std::path::PathBuf,
        source: baton_protocol::ProtocolError,
    },
}

/// No socket gave a connection: why, for each.
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
struct NoDaemon(Vec<Attempt>);

/// Connects to the first socket that answers and handshakes; on success the process and its
/// queues are announced (queued on the new link, ahead of any later event).
fn connect(sh: &Shared) -> Result<(Arc<UnixStream>, Welcome), NoDaemon> {
    let mut errors = Vec::new();
    for path in &sh.cfg.sockets {
        let io_error = |source| Attempt::Io {
            path: path.clone(),
            source,
        };
        let sock = match UnixStream::connect(path) {
            Ok(s) => s,
            Err(e) => {
                errors.push(io_error(e));
                continue;
            }
        };
        let t = Some(sh.cfg.handshake_timeout);
        let _ = sock.set_read_timeout(t);
        let _ = sock.set_write_timeout(t);
        let hello = Hello::new(Role::Agent, sh.pid, &sh.cfg.software);
        let welcome = match client_handshake(&mut NoSigpipe(&sock), &hello) {
            Ok(w) => w,
            Err(source) => {
                errors.push(Attempt::Handshake {
                    path: path.clone(),
                    source,
                });
                continue;
            }
        };
        if let Err(e) = sock.set_nonblocking(true) {
            return Err(NoDaemon(vec![io_error(e)]));
        }
        let sock = Arc::new(sock);
        install(sh, &sock);
        return Ok((sock, welcome));
    }
    Err(NoDaemon(errors))
}

/// Every registered queue's control, read under the client's lock and returned without it (a
/// queue control call takes the queue's lock, and a queue reports to the sink, which takes the
/// client's).
fn controls(sh: &Shared) -> Vec<Arc<dyn QueueControl>> {
    sh.lock()
        .queues
        .values()
        .map(|q| Arc::clone(&q.ctl))
        .collect()
}

/// Every queue's status, read without holding the client's lock (a status takes the queue's).
fn statuses(sh: &Shared) -> Vec<(XQueueId, baton_core::XQueueStatus)> {
    controls(sh).iter().map(|c| (c.id(), c.status())).collect()
}

/// Tells every registered queue whether it may launch without its window and sync points:
/// yes while no daemon schedules the process (nothing can suspend it, and a queue that gives
/// way while outranked, by a short time slice or on part of the SMs, does so only while it
/// may be suspended); no again when a daemon is connected, which is what it assumes of a
/// queue it is told of. The caller holds `apply`, or is the background thread between
/// connections.
fn set_unbounded(sh: &Shared, on: bool) {
    let attention = if on { UNSCHEDULED } else { Attention::INITIAL };
    for ctl in controls(sh) {
        ctl.set_attention(attention);
    }
}

/// How a queue runs while no daemon schedules its process: as a new queue does (reporting,
/// watched, holdable, not measured again: no decision rests on its measure), but without its
/// window, which only bounds what a suspension waits for; and leading nothing, so a
/// time-sliced context keeps the driver's own slices.
const UNSCHEDULED: Attention = Attention {
    unbounded: true,
    ..Attention::INITIAL
};

/// Makes `sock` the live link, with the process and every queue announced first.
fn install(sh: &Shared, sock: &Arc<UnixStream>) {
    let _apply = sh.lock_apply();
    // Bounded, as a new queue is: what the daemon assumes until it says otherwise.
    set_unbounded(sh, false);
    // Statuses are read without the client's lock, so a queue may be registered between the
    // reading and the locking; with no link yet, its registration announced nothing, so it is
    // announced here, with the status it had when registered, a moment ago.
    let statuses: std::collections::HashMap<XQueueId, baton_core::XQueueStatus> =
        statuses(sh).into_iter().collect();
    let now = sh.now();
    let mut st = sh.lock();
    let mut l = Link::new(Arc::clone(sock));
    l.queue(&AgentMessage::ProcessStarted(ProcessStarted::new(
        sh.pid,
        &sh.cfg.name,
        &sh.cfg.argv,
        st.process_hints.clone(),
    )));
    for (id, q) in &st.queues {
        let status = statuses.get(id).unwrap_or(&q.registered);
        l.queue(&link::queue_created(*id, q, status, now));
    }
    st.sent += 1 + st.queues.len() as u64;
    st.link = Some(l);
    sh.live_fd.store(sock.as_raw_fd(), Ordering::Release);
    sh.connected.store(true, Ordering::Release);
    sh.connections.fetch_add(1, Ordering::AcqRel);
    drop(st);
    sh.ring();
}

/// Why a connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Disconnect {
    Stopped,
    Closed,
    Failed,
    Released,
    BadFrame,
}

impl std::fmt::Display for Disconnect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Disconnect::Stopped => "the agent is stopping",
            Disconnect::Closed => "the daemon closed the connection",
            Disconnect::Failed => "the connection failed or the daemon stopped reading",
            Disconnect::Released => "the daemon released this process",
            Disconnect::BadFrame => "the daemon sent a frame that cannot be read",
        })
    }
}

/// Relays until the connection ends.
fn serve(sh: &Shared, sock: &UnixStream, stats_ms: u32) -> Disconnect {
    let mut buf = BytesMut::with_capacity(4096);
    let mut stats_every = interval(stats_ms);
    let mut next_stats = stats_every.map(|d| Instant::now() + d);
    loop {
        if sh.stop.load(Ordering::Acquire) {
            let mut st = sh.lock();
            if st.send(&AgentMessage::ProcessExiting { exit_code: None }) {
                if let Some(l) = st.link.as_mut() {
                    l.flush();
                }
            }
            return Disconnect::Stopped;
        }
        let (pending, broken) = {
            let st = sh.lock();
            st.link
                .as_ref()
                .map_or((false, true), |l| (l.pending(), l.broken))
        };
        if broken {
            return Disconnect::Failed;
        }
        let mut sock_flags = PollFlags::IN;
        if pending {
            sock_flags |= PollFlags::OUT;
        }
        let timeout = next_stats
            .map(|t| t.saturating_duration_since(Instant::now()))
            .unwrap_or(Duration::from_secs(1))
            .min(Duration::from_secs(1));
        let ts = rustix::time::Timespec::try_from(timeout).ok();
        let mut fds = [
            PollFd::new(sock, sock_flags),
            PollFd::new(&sh.wake, PollFlags::IN),
        ];
        match poll(&mut fds, ts.as_ref()) {
            Ok(_) => {}
            Err(e) if e == rustix::io::Errno::INTR => continue,
            Err(_) => return Disconnect::Failed,
        }
        let (sock_ev, wake_ev) = (fds[0].revents(), fds[1].revents());
        if !wake_ev.is_empty() {
            drain_wake(sh);
        }
        if sock_ev.intersects(PollFlags::IN | PollFlags::HUP | PollFlags::ERR) {
            match read_available(sock, &mut buf) {
                Ok(true) => {}
                Ok(false) => return Disconnect::Closed,
                Err(_) => return Disconnect::Failed,
            }
            loop {
                match decode_frame::<DaemonMessage>(&mut buf) {
                    Ok(Some(msg)) => {
                        if let Some(why) = handle(sh, msg, &mut stats_every, &mut next_stats) {
                            return why;
                        }
                    }
                    Ok(None) => break,
                    Err(e) if e.keeps_sync() => {
                        tracing::warn!(error = %e, "ignored a daemon message");
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "unreadable daemon frame");
                        return Disconnect::BadFrame;
                    }
                }
            }
        }
        {
            let mut st = sh.lock();
            if let Some(l) = st.link.as_mut() {
                l.flush();
            }
        }
        if let Some(t) = next_stats {
            if Instant::now() >= t {
                send_stats(sh);
                next_stats = stats_every.map(|d| Instant::now() + d);
            }
        }
    }
}

fn interval(ms: u32) -> Option<Duration> {
    (ms > 0).then(|| Duration::from_millis(u64::from(ms)))
}

/// Reads what the socket has; false at end of file.
fn read_available(sock: &UnixStream, buf: &mut BytesMut) -> io::Result<bool> {
    loop {
        buf.reserve(4096);
        let spare = buf.spare_capacity_mut();
        match rustix::net::recv(sock, spare, RecvFlags::DONTWAIT) {
            Ok(((&mut [], _), _)) => return Ok(false),
            Ok(((got, _), _)) => {
                let n = got.len();
                // SAFETY: `recv` initialized the first `n` bytes of the spare capacity.
                unsafe { buf.set_len(buf.len() + n) };
            }
            Err(e) if e == rustix::io::Errno::AGAIN => return Ok(true),
            Err(e) if e == rustix::io::Errno::INTR => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Handles one daemon message; `Some` ends the connection.
fn handle(
    sh: &Shared,
    msg: DaemonMessage,
    stats_every: &mut Option<Duration>,
    next_stats: &mut Option<Instant>,
) -> Option<Disconnect> {
    let count = match msg {
        DaemonMessage::Operations(_) => &sh.received.operations,
        DaemonMessage::Attention { .. } => &sh.received.attention,
        _ => &sh.received.other,
    };
    count.fetch_add(1, Ordering::Relaxed);
    match msg {
        DaemonMessage::Operations(ops) => apply_operations(sh, &ops),
        DaemonMessage::Configure {
            queue,
            level,
            launch,
        } => configure(sh, queue, level, launch),
        DaemonMessage::Attention {
            queue,
            report,
            unbounded,
            watch,
            remeasure,
            hold,
            leading,
        } => {
            let ctl = sh
                .lock()
                .queues
                .get(&XQueueId::from(queue))
                .map(|t| Arc::clone(&t.ctl));
            if let Some(ctl) = ctl {
                // As the daemon's scheduler computed it; nothing is derived here.
                ctl.set_attention(Attention {
                    report,
                    unbounded,
                    hold,
                    leading,
                    remeasure,
                    watch,
                });
            }
        }
        DaemonMessage::StatsInterval { interval_ms } => {
            *stats_every = interval(interval_ms);
            *next_stats = stats_every.map(|d| Instant::now() + d);
        }
        DaemonMessage::Ping { nonce } => {
            sh.lock().send(&AgentMessage::Pong { nonce });
        }
        DaemonMessage::Rejected { queue, error } => {
            tracing::warn!(?queue, error = %error, "the daemon refused a message");
        }
        DaemonMessage::Release { message } => {
            tracing::info!(%message, "released by the daemon");
            return Some(Disconnect::Released);
        }
    }
    None
}

/// Suspends, then resumes, the queues named; answers `Applied`.
fn apply_operations(sh: &Shared, ops: &Operations) {
    let _apply = sh.lock_apply();
    let pick = |ids: &[QueueId]| -> Vec<(XQueueId, Arc<dyn baton_core::QueueControl>)> {
        let st = sh.lock();
        ids.iter()
            .filter_map(|q| {
                let id = XQueueId::from(*q);
                st.queues.get(&id).map(|t| (id, Arc::clone(&t.ctl)))
            })
            .collect()
    };
    let (suspend, run) = (pick(&ops.suspend), pick(&ops.run));
    for (id, ctl) in &suspend {
        if let Err(e) = ctl.suspend(SuspendFlags::default()) {
            tracing::warn!(queue = %id, error = %e, "suspend: hardware step failed");
        }
    }
    // When the decision took effect, on the clock other processes and tools read
    // (`CLOCK_MONOTONIC`): launches after the first line and before the second were held.
    if !suspend.is_empty() {
        let ids: Vec<u64> = suspend.iter().map(|(id, _)| id.0).collect();
        tracing::debug!(target: "baton::decisions", queues = ?ids, t_ns = monotonic_ns(), "suspended");
    }
    if !run.is_empty() {
        let ids: Vec<u64> = run.iter().map(|(id, _)| id.0).collect();
        tracing::debug!(target: "baton::decisions", queues = ?ids, t_ns = monotonic_ns(), "resuming");
    }
    for (id, ctl) in &run {
        if let Err(e) = ctl.resume(ResumeFlags::default()) {
            tracing::warn!(queue = %id, error = %e, "resume: hardware step failed");
        }
    }
    let mut st = sh.lock();
    for (ids, flag) in [(&suspend, true), (&run, false)] {
        for (id, _) in ids {
            if let Some(t) = st.queues.get_mut(id) {
                t.suspended = flag;
            }
        }
    }
    st.send(&AgentMessage::Applied { seq: ops.seq });
}

/// `CLOCK_MONOTONIC` in nanoseconds, comparable across the processes of one boot.
fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64).saturating_mul(1_000_000_000) + t.tv_nsec as u64
}

/// A configuration change the agent could not apply.
#[derive(Debug, thiserror::Error)]
enum ConfigureError {
    /// A value out of range.
    #[error(transparent)]
    Value(#[from] baton_protocol::ProtocolError),
    /// The queue refused it.
    #[error(transparent)]
    Queue(#[from] baton_core::XQueueError),
}

/// Applies a configuration change and reports the result.
fn configure(sh: &Shared, queue: QueueId, level: Option<WireLevel>, launch: Option<LaunchWindow>) {
    let id = XQueueId::from(queue);
    let Some(ctl) = sh.lock().queues.get(&id).map(|t| Arc::clone(&t.ctl)) else {
        return;
    };
    let result = (|| -> Result<(), ConfigureError> {
        let level = level.map(Level::try_from).transpose()?;
        let launch = launch.map(LaunchConfig::try_from).transpose()?;
        if let Some(l) = level {
            ctl.set_level(l)?;
        }
        if let Some(c) = launch {
            ctl.set_launch_config(c);
        }
        Ok(())
    })();
    let msg = match result {
        Ok(()) => {
            let s = ctl.status();
            AgentMessage::QueueConfigChanged {
                queue,
                level: WireLevel::from(s.level),
                launch: LaunchWindow::from(s.config),
            }
        }
        Err(e) => AgentMessage::ConfigFailed {
            queue,
            message: sanitize_text(&e.to_string(), baton_protocol::MAX_MESSAGE_LEN),
        },
    };
    sh.lock().send(&msg);
}

fn send_stats(sh: &Shared) {
    let statuses = statuses(sh);
    let now = sh.now();
    let mut st = sh.lock();
    let rows: Vec<_> = statuses
        .into_iter()
        .filter_map(|(id, s)| st.queues.get(&id).map(|q| (id, s, q.busy_at(now))))
        .collect();
    st.send(&link::stats(&rows, now));
}

/// Drops the link and resumes every queue the daemon held suspended. Every queue goes back
/// to what a new queue reports, which is what a daemon assumes when the queue is registered
/// again, and launches without its window until then (it is bounded again, as a new queue
/// is, when a daemon answers: [`install`]), so nothing the daemon set outlives it: a queue
/// that gives way while outranked (a short time slice, part of the SMs) runs at full speed.
pub(super) fn fail_open(sh: &Shared) {
    let _apply = sh.lock_apply();
    for ctl in &controls(sh) {
        ctl.set_attention(UNSCHEDULED);
    }
    let resume: Vec<_> = {
        let mut st = sh.lock();
        st.link = None;
        sh.live_fd.store(-1, Ordering::Release);
        sh.connected.store(false, Ordering::Release);
        st.queues
            .values_mut()
            .filter(|q| q.suspended)
            .map(|q: &mut Tracked| {
                q.suspended = false;
                Arc::clone(&q.ctl)
            })
            .collect()
    };
    for ctl in resume {
        if let Err(e) = ctl.resume(ResumeFlags::default()) {
            tracing::warn!(queue = %ctl.id(), error = %e, "fail-open resume: hardware step failed");
        }
    }
}
