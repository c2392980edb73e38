//! The daemon client against a scripted daemon on a temporary socket.

use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton_core::testing::{ScriptedHwQueue, TestCommand};
use baton_core::{Drive, Level, MonotonicClock, XQueue};
use baton_protocol::{
    AgentMessage, Backend, ClientId, DaemonMessage, DeviceRef, Hello, HelloReply, Operations,
    PROTOCOL_VERSION, QueueId, Welcome, read_frame, write_frame,
};

use super::*;

/// A folder of the test's own, removed when the test ends (passed or failed).
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A socket path in a fresh folder, and the folder's guard.
fn temp_socket(tag: &str) -> (Scratch, PathBuf) {
    let dir = std::env::temp_dir().join(format!("baton-agent-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s");
    (Scratch(dir), path)
}

/// A daemon that accepts one agent and welcomes it.
struct FakeDaemon {
    listener: UnixListener,
}

impl FakeDaemon {
    fn bind(path: &Path) -> FakeDaemon {
        FakeDaemon {
            listener: UnixListener::bind(path).unwrap(),
        }
    }

    fn accept(&self) -> UnixStream {
        let (mut s, _) = self.listener.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let hello: Hello = read_frame(&mut s).unwrap().unwrap();
        assert_eq!(hello.pid, std::process::id());
        let w = HelloReply::Welcome(Welcome {
            version: PROTOCOL_VERSION,
            client: ClientId(1),
            daemon_pid: std::process::id(),
            software: "test daemon".into(),
            policy: "hpf".into(),
            stats_interval_ms: 0,
        });
        write_frame(&mut s, &w).unwrap();
        s
    }
}

fn next(s: &mut UnixStream) -> AgentMessage {
    read_frame(s).unwrap().expect("a message")
}

/// The next message that is not a stats report.
fn next_event(s: &mut UnixStream) -> AgentMessage {
    loop {
        match next(s) {
            AgentMessage::Stats(_) => {}
            m => return m,
        }
    }
}

fn client(path: &Path) -> DaemonClient {
    let mut cfg = ClientConfig::new(vec![path.to_path_buf()], Arc::new(MonotonicClock::new()));
    cfg.hints = vec![Hint::Priority(baton_protocol::WirePriority(3))];
    cfg.min_backoff = Duration::from_millis(5);
    cfg.max_backoff = Duration::from_millis(20);
    DaemonClient::start(cfg).unwrap()
}

fn queue(c: &DaemonClient) -> (ScriptedHwQueue, Arc<XQueue<ScriptedHwQueue>>) {
    let hw = ScriptedHwQueue::new(Level::L1);
    let q = XQueue::builder(hw.clone())
        .drive(Drive::External)
        .sink(c.sink())
        .build()
        .unwrap();
    (hw, Arc::new(q))
}

fn info() -> QueueInfo {
    QueueInfo {
        label: "test".into(),
        device: DeviceRef {
            backend: Backend::Sim,
            id: "sim-0".into(),
            ordinal: 0,
        },
        hints: vec![],
    }
}

fn wait_until(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::yield_now();
    }
}

#[test]
fn announces_relays_and_applies_operations() {
    let (_scratch, path) = temp_socket("relay");
    let d = FakeDaemon::bind(&path);
    let c = client(&path);
    let (hw, q) = queue(&c);
    c.register(q.clone(), info());
    let mut s = d.accept();
    match next_event(&mut s) {
        AgentMessage::ProcessStarted(p) => {
            assert_eq!(p.pid, std::process::id());
            assert_eq!(
                p.hints,
                vec![Hint::Priority(baton_protocol::WirePriority(3))]
            );
        }
        m => panic!("{m:?}"),
    }
    match next_event(&mut s) {
        AgentMessage::QueueCreated(qc) => {
            assert_eq!(qc.queue, QueueId::from(q.id()));
            assert!(!qc.ready);
            assert_eq!(qc.transition, 0);
        }
        m => panic!("{m:?}"),
    }
    q.submit(TestCommand(1)).unwrap();
    match next_event(&mut s) {
        AgentMessage::QueueState(st) => assert!(st.ready && st.transition == 1),
        m => panic!("{m:?}"),
    }
    let ops = DaemonMessage::Operations(Operations {
        seq: 1,
        run: vec![],
        suspend: vec![QueueId::from(q.id())],
    });
    write_frame(&mut s, &ops).unwrap();
    assert_eq!(next_event(&mut s), AgentMessage::Applied { seq: 1 });
    assert!(q.status().suspended);
    assert_eq!(c.suspended(), 1);
    // What crossed the link so far: one operations frame in; out, the process's and the
    // queue's announcements, the transition and the answer.
    let t = c.traffic();
    assert_eq!((t.operations, t.attention, t.other), (1, 0, 0), "{t:?}");
    assert_eq!(t.sent, 4, "{t:?}");
    q.submit(TestCommand(2)).unwrap();
    assert_eq!(
        hw.script().launched,
        vec![1],
        "suspended: nothing more launched"
    );
    // Fail-open: the daemon goes away, the queue runs again at once.
    drop(s);
    wait_until("fail-open", || !q.status().suspended);
    assert_eq!(hw.script().launched, vec![1, 2]);
    assert_eq!(c.suspended(), 0);
}

/// A queue's control that records what it is told of its window, over an XQueue.
struct Recording {
    q: Arc<XQueue<ScriptedHwQueue>>,
    /// Every attention it was given, in order.
    told: std::sync::Mutex<Vec<baton_core::Attention>>,
}

impl Recording {
    /// Whether it was last told to run unbounded.
    fn last(&self) -> Option<bool> {
        self.told.lock().unwrap().last().map(|a| a.unbounded)
    }
}

impl QueueControl for Recording {
    fn id(&self) -> XQueueId {
        self.q.id()
    }
    fn status(&self) -> baton_core::XQueueStatus {
        self.q.status()
    }
    fn suspend(&self, flags: baton_core::SuspendFlags) -> Result<(), baton_core::XQueueError> {
        self.q.suspend(flags)
    }
    fn resume(&self, flags: baton_core::ResumeFlags) -> Result<(), baton_core::XQueueError> {
        self.q.resume(flags)
    }
    fn set_level(&self, level: Level) -> Result<(), baton_core::XQueueError> {
        self.q.set_level(level)
    }
    fn set_launch_config(&self, config: baton_core::LaunchConfig) {
        self.q.set_launch_config(config);
    }
    fn set_attention(&self, attention: baton_core::Attention) {
        self.told.lock().unwrap().push(attention);
        self.q.set_attention(attention);
    }
}

#[test]
fn queues_launch_without_their_window_only_while_no_daemon_schedules_them() {
    // No daemon at first: nothing can suspend the queue, so it runs unbounded (a queue that
    // gives way while outranked, by time slice or SMs, then runs at full speed). A daemon
    // answers: the queue is bounded again before it is announced, as the daemon assumes of
    // a new queue. The daemon unbounds it; the daemon goes: unbounded still; it returns:
    // bounded again.
    let (_scratch, path) = temp_socket("window");
    let c = client(&path);
    let (_hw, q) = queue(&c);
    let rec = Arc::new(Recording {
        q,
        told: std::sync::Mutex::new(Vec::new()),
    });
    c.register(rec.clone(), info());
    wait_until("unbounded while no daemon answers", || {
        rec.last() == Some(true)
    });
    let d = FakeDaemon::bind(&path);
    let mut s = d.accept();
    assert!(matches!(
        next_event(&mut s),
        AgentMessage::ProcessStarted(_)
    ));
    assert!(matches!(next_event(&mut s), AgentMessage::QueueCreated(_)));
    assert_eq!(rec.last(), Some(false), "bounded before it was announced");
    let unbound = DaemonMessage::Attention {
        queue: QueueId::from(rec.id()),
        report: true,
        unbounded: true,
        watch: false,
        remeasure: false,
        hold: true,
        leading: false,
    };
    write_frame(&mut s, &unbound).unwrap();
    wait_until("the daemon's word", || rec.last() == Some(true));
    assert!(rec.q.holdable());
    // Applied as it came: a queue that reports and runs unbounded (for a dependency, say)
    // leads only if the daemon says so.
    let last = *rec.told.lock().unwrap().last().unwrap();
    assert!(last.report && !last.leading, "{last:?}");
    // Kept suspendable but not held: its work in flight bounded by count alone.
    let only_suspendable = DaemonMessage::Attention {
        queue: QueueId::from(rec.id()),
        report: false,
        unbounded: false,
        watch: false,
        remeasure: false,
        hold: false,
        leading: false,
    };
    write_frame(&mut s, &only_suspendable).unwrap();
    wait_until("not holdable", || !rec.q.holdable());
    assert_eq!(rec.last(), Some(false));
    // Let go, and told it may not be held (which bounds nothing now): a reconnection must
    // make it holdable again.
    let let_go = DaemonMessage::Attention {
        queue: QueueId::from(rec.id()),
        report: false,
        unbounded: true,
        watch: false,
        remeasure: false,
        hold: false,
        leading: true,
    };
    write_frame(&mut s, &let_go).unwrap();
    wait_until("the daemon's word again", || rec.last() == Some(true));
    assert!(!rec.q.holdable());
    assert!(rec.told.lock().unwrap().last().unwrap().leading);
    let told = rec.told.lock().unwrap().len();
    drop(s);
    wait_until("disconnected", || !c.is_connected());
    wait_until("fail-open", || rec.told.lock().unwrap().len() > told);
    assert_eq!(rec.last(), Some(true), "unscheduled: unbounded");
    assert!(
        !rec.told.lock().unwrap().last().unwrap().leading,
        "unscheduled: leading nothing"
    );
    let _s = d.accept();
    wait_until("reconnected", || c.is_connected());
    assert_eq!(rec.last(), Some(false), "bounded again for the new daemon");
    assert!(rec.q.holdable(), "and holdable, as a new queue is");
}

#[test]
fn every_queue_registered_while_a_connection_is_made_is_announced() {
    // Registrations race with the connection: each queue must reach the daemon once, whether
    // registered before the link is installed (announced by the installation) or after it
    // (announced by the registration). One registered between the installation's reading of
    // the queues' statuses and its taking the client's lock used to be announced by neither.
    let (_scratch, path) = temp_socket("race");
    let c = Arc::new(client(&path));
    // Registering from before the daemon answers until well after the connection.
    let registering = {
        let c = Arc::clone(&c);
        std::thread::spawn(move || {
            let mut queues = Vec::new();
            let mut after = 0;
            // Bounded, should the connection never come.
            while after < 200 && queues.len() < 20_000 {
                let (_hw, q) = queue(&c);
                c.register(q.clone(), info());
                queues.push(q);
                after += usize::from(c.is_connected());
            }
            queues
        })
    };
    let d = FakeDaemon::bind(&path);
    let mut s = d.accept();
    let queues = registering.join().unwrap();
    assert!(c.is_connected(), "never connected while queues kept coming");
    let mut announced = std::collections::HashSet::new();
    while announced.len() < queues.len() {
        match next_event(&mut s) {
            AgentMessage::QueueCreated(qc) => assert!(announced.insert(qc.queue), "twice"),
            AgentMessage::ProcessStarted(_) | AgentMessage::QueueState(_) => {}
            m => panic!("{m:?}"),
        }
    }
    for q in &queues {
        assert!(announced.contains(&QueueId::from(q.id())));
    }
}

#[test]
fn reconnects_with_current_state_after_the_daemon_returns() {
    let (_scratch, path) = temp_socket("reconnect");
    let d = FakeDaemon::bind(&path);
    let c = client(&path);
    let (hw, q) = queue(&c);
    c.register(q.clone(), info());
    let s = d.accept();
    wait_until("connected", || c.is_connected());
    drop(s);
    drop(d);
    wait_until("disconnected", || !c.is_connected());
    // Events while nobody listens are folded into the state sent at reconnection.
    q.submit(TestCommand(1)).unwrap();
    hw.complete_all();
    q.poll();
    q.submit(TestCommand(2)).unwrap();
    std::fs::remove_file(&path).unwrap();
    let d = FakeDaemon::bind(&path);
    let mut s = d.accept();
    assert!(matches!(
        next_event(&mut s),
        AgentMessage::ProcessStarted(_)
    ));
    match next_event(&mut s) {
        AgentMessage::QueueCreated(qc) => {
            assert!(qc.ready);
            assert_eq!(qc.transition, 3, "ready, idle, ready again");
        }
        m => panic!("{m:?}"),
    }
    assert_eq!(c.connections(), 2);
}

#[test]
fn hints_are_checked_and_kept() {
    let (_scratch, path) = temp_socket("hints");
    let d = FakeDaemon::bind(&path);
    let c = client(&path);
    let (_hw, q) = queue(&c);
    c.register(q.clone(), info());
    let target = AgentTarget::Queue(QueueId::from(q.id()));
    assert!(
        c.hint(target, Hint::KEdf { k: 1 }).is_err(),
        "k-EDF is device-wide"
    );
    assert!(
        c.hint(target, Hint::Utilization { percent: 0 }).is_err(),
        "out of range"
    );
    c.hint(target, Hint::Utilization { percent: 40 }).unwrap();
    let mut s = d.accept();
    let _started = next_event(&mut s);
    match next_event(&mut s) {
        AgentMessage::QueueCreated(qc) => {
            assert_eq!(qc.hints, vec![Hint::Utilization { percent: 40 }]);
        }
        m => panic!("{m:?}"),
    }
    c.hint(AgentTarget::Process, Hint::ActiveWindow { active: true })
        .unwrap();
    assert_eq!(
        next_event(&mut s),
        AgentMessage::Hint {
            target: AgentTarget::Process,
            hint: Hint::ActiveWindow { active: true }
        }
    );
}

#[test]
fn a_released_process_runs_unscheduled() {
    let (_scratch, path) = temp_socket("release");
    let d = FakeDaemon::bind(&path);
    let c = client(&path);
    let (_hw, q) = queue(&c);
    c.register(q.clone(), info());
    let mut s = d.accept();
    let _ = next_event(&mut s);
    let _ = next_event(&mut s);
    let ops = DaemonMessage::Operations(Operations {
        seq: 1,
        run: vec![],
        suspend: vec![QueueId::from(q.id())],
    });
    write_frame(&mut s, &ops).unwrap();
    assert_eq!(next_event(&mut s), AgentMessage::Applied { seq: 1 });
    write_frame(
        &mut s,
        &DaemonMessage::Release {
            message: "shutting down".into(),
        },
    )
    .unwrap();
    wait_until("resumed", || !q.status().suspended);
}

#[test]
fn apply_hint_replaces_and_clears() {
    let mut set = vec![Hint::Priority(baton_protocol::WirePriority(1))];
    apply_hint(&mut set, Hint::Priority(baton_protocol::WirePriority(2)));
    apply_hint(&mut set, Hint::Utilization { percent: 5 });
    assert_eq!(set.len(), 2);
    apply_hint(&mut set, Hint::Clear(baton_protocol::HintKind::Priority));
    assert_eq!(set, vec![Hint::Utilization { percent: 5 }]);
}
