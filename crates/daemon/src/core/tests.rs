//! The core without sockets or a runtime: agents are inboxes, events are handed in directly,
//! and time is a manual clock, so timer rounds and accounting are checked in virtual time.

use std::path::PathBuf;
use std::sync::Mutex;

use baton_core::ManualClock;
use baton_protocol::{
    AgentMessage, Backend, ClientId, DaemonMessage, DeviceRef, ErrorKind, Hello, HelloReply,
    LaunchWindow, ProcessStarted, QueueCreated, QueueId, QueueRef, QueueStateChange, Reply,
    Request, Role, Target, WireLevel, WirePriority,
};
use tokio::sync::oneshot;

use super::sight::Sight;
use super::*;
use crate::event::Event;

const ME: u32 = 1000;

/// A core and the clock it reads.
struct Rig {
    core: Core,
    clock: Arc<ManualClock>,
}

impl std::ops::Deref for Rig {
    type Target = Core;
    fn deref(&self) -> &Core {
        &self.core
    }
}

impl std::ops::DerefMut for Rig {
    fn deref_mut(&mut self) -> &mut Core {
        &mut self.core
    }
}

impl Rig {
    fn handle(&mut self, ev: Event) {
        ev.apply(&mut self.core);
    }

    /// Moves virtual time to `t`.
    fn at(&self, t: Nanos) {
        self.clock.set(t);
    }
}

fn core() -> Rig {
    core_with("hpf", Nanos::ZERO)
}

fn core_with(policy: &str, start: Nanos) -> Rig {
    let clock = Arc::new(ManualClock::new(start));
    let core = Core::new(
        Identity {
            pid: 1,
            software: "test".into(),
            socket: PathBuf::from("/tmp/x"),
            metrics: None,
            metrics_commands: true,
            stats_interval_ms: 0,
            auth: Authority {
                daemon_uid: ME,
                system: false,
            },
            lease: None,
            stall: None,
            max_priority: None,
            gang: crate::config::GangMode::Independent,
        },
        baton_policies::by_name(policy).unwrap(),
        Arc::clone(&clock) as Arc<dyn Clock>,
    );
    Rig { core, clock }
}

/// What the core sent one agent.
#[derive(Clone, Default)]
struct Inbox(Arc<Mutex<Vec<DaemonMessage>>>);

impl AgentLink for Inbox {
    fn send(&self, m: DaemonMessage) -> bool {
        self.0.lock().unwrap().push(m);
        true
    }
}

struct Agent {
    id: ClientId,
    inbox: Inbox,
}

impl Agent {
    fn take(&self) -> Vec<DaemonMessage> {
        std::mem::take(&mut *self.inbox.0.lock().unwrap())
    }
}

fn connect(c: &mut Rig, id: u64, pid: u32, uid: u32, priority: i32) -> Agent {
    let inbox = Inbox::default();
    let (rtx, mut rrx) = oneshot::channel();
    let id = ClientId(id);
    c.handle(Event::AgentHello {
        client: id,
        peer: Peer { pid, uid, gid: uid },
        hello: Hello::new(Role::Agent, pid, "t"),
        tx: Box::new(inbox.clone()),
        reply: rtx,
    });
    assert!(matches!(rrx.try_recv(), Ok(HelloReply::Welcome(_))));
    send(
        c,
        id,
        AgentMessage::ProcessStarted(ProcessStarted::new(
            pid,
            "app",
            &["app"],
            vec![baton_protocol::Hint::Priority(WirePriority(priority))],
        )),
    );
    send(c, id, created(1, false));
    c.end_round();
    Agent { id, inbox }
}

fn created(q: u64, ready: bool) -> AgentMessage {
    AgentMessage::QueueCreated(QueueCreated {
        queue: QueueId(q),
        label: String::new(),
        device: DeviceRef {
            backend: Backend::Sim,
            id: "sim-0".into(),
            ordinal: 0,
        },
        level: WireLevel(1),
        max_level: WireLevel(1),
        launch: LaunchWindow {
            threshold: 16,
            batch: 8,
        },
        hints: vec![],
        ready,
        transition: u64::from(ready),
        at_ns: 0,
    })
}

/// One message from `client`, arriving now.
fn send(c: &mut Rig, client: ClientId, m: AgentMessage) {
    let arrived = c.clock.now();
    c.handle(Event::Agent {
        client,
        msgs: vec![m],
        arrived,
    });
}

/// The process behind `client` claims `priority` for itself after its hello (as
/// `baton_set_process_priority` does), and the round ends.
fn claim(c: &mut Rig, client: ClientId, priority: i32) {
    send(
        c,
        client,
        AgentMessage::Hint {
            target: baton_protocol::AgentTarget::Process,
            hint: baton_protocol::Hint::Priority(WirePriority(priority)),
        },
    );
    c.end_round();
}

fn state(c: &mut Rig, a: &Agent, ready: bool, transition: u64) {
    send(
        c,
        a.id,
        AgentMessage::QueueState(QueueStateChange {
            queue: QueueId(1),
            ready,
            transition,
            at_ns: 0,
        }),
    );
    c.end_round();
}

/// The run and suspend lists of every operations frame the agent got since the last look.
fn ops(a: &mut Agent) -> Vec<(Vec<u64>, Vec<u64>)> {
    let mut v = Vec::new();
    for m in a.take() {
        if let DaemonMessage::Operations(o) = m {
            v.push((
                o.run.iter().map(|q| q.0).collect(),
                o.suspend.iter().map(|q| q.0).collect(),
            ));
        }
    }
    v
}

fn request(c: &mut Rig, uid: u32, r: Request) -> Reply {
    let (tx, mut rx) = oneshot::channel();
    c.handle(Event::Request {
        peer: Peer {
            pid: 99,
            uid,
            gid: uid,
        },
        request: r,
        reply: tx,
    });
    c.end_round();
    rx.try_recv().unwrap()
}

#[test]
fn hpf_across_processes_sends_only_changes() {
    let mut c = core();
    let mut hp = connect(&mut c, 1, 100, ME, 10);
    let mut be = connect(&mut c, 2, 200, ME, 0);
    state(&mut c, &be, true, 1);
    assert!(ops(&mut be).is_empty(), "BE alone runs");
    state(&mut c, &hp, true, 1);
    assert_eq!(ops(&mut be), vec![(vec![], vec![1])]);
    assert!(
        ops(&mut hp).is_empty(),
        "HP was never suspended: nothing to send"
    );
    // A stale event changes nothing.
    state(&mut c, &hp, false, 1);
    assert!(ops(&mut be).is_empty());
    state(&mut c, &hp, false, 2);
    assert_eq!(ops(&mut be), vec![(vec![1], vec![])]);
}

#[test]
fn a_gone_client_frees_its_queues_and_releases_its_hold() {
    let mut c = core();
    let hp = connect(&mut c, 1, 100, ME, 10);
    let mut be = connect(&mut c, 2, 200, ME, 0);
    state(&mut c, &hp, true, 1);
    assert_eq!(ops(&mut be), vec![(vec![], vec![1])]);
    c.handle(Event::AgentGone {
        client: hp.id,
        why: "test",
    });
    c.end_round();
    assert_eq!(ops(&mut be), vec![(vec![1], vec![])]);
    assert_eq!(c.status().queues, 1);
    assert!(c.list(Some(100), &Sight::All).processes.is_empty());
}

#[test]
fn only_owners_and_root_change_a_process() {
    let mut c = core();
    let _a = connect(&mut c, 1, 100, ME, 0);
    let target = Target::Process { pid: 100 };
    let set = |p| Request::SetPriority {
        target: target.clone(),
        priority: WirePriority(p),
    };
    match request(&mut c, 1234, set(5)) {
        Reply::Error(e) => {
            assert_eq!(e.kind, ErrorKind::Unauthorized);
            assert!(e.message.contains("uid 1234"), "{}", e.message);
        }
        r => panic!("{r:?}"),
    }
    assert_eq!(request(&mut c, ME, set(5)), Reply::Done);
    assert_eq!(request(&mut c, 0, set(6)), Reply::Done);
    let q = Target::Queue(QueueRef {
        pid: 100,
        queue: QueueId(9),
    });
    match request(
        &mut c,
        ME,
        Request::SetPriority {
            target: q,
            priority: WirePriority(1),
        },
    ) {
        Reply::Error(e) => assert_eq!(e.kind, ErrorKind::UnknownQueue),
        r => panic!("{r:?}"),
    }
    match request(
        &mut c,
        1234,
        Request::SetPolicy {
            name: "hpf".into(),
            params: vec![],
        },
    ) {
        Reply::Error(e) => assert_eq!(e.kind, ErrorKind::Unauthorized),
        r => panic!("{r:?}"),
    }
}

#[test]
fn an_operator_priority_reorders_processes_and_policy_switch_keeps_state() {
    let mut c = core();
    let mut a = connect(&mut c, 1, 100, ME, 10);
    let mut b = connect(&mut c, 2, 200, ME, 0);
    state(&mut c, &a, true, 1);
    state(&mut c, &b, true, 1);
    assert_eq!(ops(&mut b), vec![(vec![], vec![1])]);
    let r = request(
        &mut c,
        ME,
        Request::SetPriority {
            target: Target::Process { pid: 200 },
            priority: WirePriority(50),
        },
    );
    assert_eq!(r, Reply::Done);
    // Suspensions first: A's frame is sent before B's.
    assert_eq!(ops(&mut a), vec![(vec![], vec![1])]);
    assert_eq!(ops(&mut b), vec![(vec![1], vec![])]);
    let r = request(
        &mut c,
        ME,
        Request::SetPolicy {
            name: "hpf".into(),
            params: vec![],
        },
    );
    assert_eq!(r, Reply::Done);
    assert!(
        ops(&mut a).is_empty() && ops(&mut b).is_empty(),
        "same decision"
    );
    let l = c.list(None, &Sight::All);
    assert_eq!(l.processes.len(), 2);
    assert!(l.processes[0].queues[0].suspended);
    match request(
        &mut c,
        ME,
        Request::SetPolicy {
            name: "nope".into(),
            params: vec![],
        },
    ) {
        Reply::Error(e) => assert_eq!(e.kind, ErrorKind::UnknownPolicy),
        r => panic!("{r:?}"),
    }
}

#[test]
fn unknown_queues_are_rejected_to_the_agent() {
    let mut c = core();
    let a = connect(&mut c, 1, 100, ME, 0);
    send(
        &mut c,
        a.id,
        AgentMessage::QueueDestroyed { queue: QueueId(7) },
    );
    let got = a.take();
    assert!(
        got.iter().any(|m| matches!(
            m,
            DaemonMessage::Rejected {
                queue: Some(QueueId(7)),
                ..
            }
        )),
        "{got:?}"
    );
}

#[test]
fn traces_record_spans_and_decisions() {
    let mut c = core();
    let hp = connect(&mut c, 1, 100, ME, 10);
    let _be = connect(&mut c, 2, 200, ME, 0);
    assert_eq!(
        request(&mut c, ME, Request::TraceStart { capacity: 1000 }),
        Reply::Done
    );
    state(&mut c, &hp, true, 1);
    state(&mut c, &hp, false, 2);
    match request(&mut c, ME, Request::TraceStop) {
        Reply::TraceStopped { records, dropped } => assert!(records > 4 && dropped == 0),
        r => panic!("{r:?}"),
    }
    match request(&mut c, ME, Request::TraceRead { cursor: 0 }) {
        Reply::Trace(t) => {
            assert!(t.complete);
            use baton_protocol::{SpanState, TraceRecord};
            assert!(t.records.iter().any(|r| matches!(
                r,
                TraceRecord::Span {
                    pid: 200,
                    state: SpanState::Suspended,
                    ..
                }
            )));
            assert!(
                t.records
                    .iter()
                    .any(|r| matches!(r, TraceRecord::Decision { .. }))
            );
        }
        r => panic!("{r:?}"),
    }
}

#[test]
fn decision_latency_is_read_on_the_core_clock() {
    let mut c = core_with("hpf", Nanos::from_secs(1));
    let hp = connect(&mut c, 1, 100, ME, 10);
    let mut be = connect(&mut c, 2, 200, ME, 0);
    state(&mut c, &be, true, 1);
    // HP's frame arrives at 2 s; the round ends 7 µs later.
    c.at(Nanos::from_secs(2));
    send(
        &mut c,
        hp.id,
        AgentMessage::QueueState(QueueStateChange {
            queue: QueueId(1),
            ready: true,
            transition: 1,
            at_ns: 0,
        }),
    );
    c.at(Nanos::from_secs(2) + Nanos::from_micros(7));
    c.end_round();
    assert_eq!(ops(&mut be), vec![(vec![], vec![1])]);
    assert_eq!(c.status().decision_latency.max_ns, 7_000);
    assert_eq!(c.status().uptime_ns, 1_000_007_000);
}

#[test]
fn policy_timers_fire_in_virtual_time_and_suspended_time_is_exact() {
    // MLFQ with a 2 ms quantum: A runs alone from 0, B joins at 1 ms and they share the
    // device; A has been served its 2 ms at about 3 ms and drops below B.
    let mut c = core_with("mlfq", Nanos::ZERO);
    let mut a = connect(&mut c, 1, 100, ME, 0);
    let mut b = connect(&mut c, 2, 200, ME, 0);
    state(&mut c, &a, true, 1);
    c.at(Nanos::from_millis(1));
    state(&mut c, &b, true, 1);
    assert!(ops(&mut a).is_empty() && ops(&mut b).is_empty());
    let run_timer = |c: &mut Rig| {
        let wake = c.next_wake().expect("MLFQ always has a timer");
        assert!(wake > c.clock.now(), "a wake-up in the past: {wake}");
        c.at(wake);
        c.on_timer();
        c.end_round();
        wake
    };
    let mut timers = 0;
    let suspended_at = loop {
        let t = run_timer(&mut c);
        timers += 1;
        if !ops(&mut a).is_empty() {
            break t;
        }
        assert!(timers < 20, "A never dropped a level");
    };
    assert!(
        suspended_at >= Nanos::from_millis(3) && suspended_at <= Nanos::from_micros(3_100),
        "A dropped at {suspended_at}"
    );
    assert!(ops(&mut b).is_empty(), "B ran all along");
    // B is served alone until it drops too; then both share level 1 and A resumes.
    let resumed_at = loop {
        let t = run_timer(&mut c);
        timers += 1;
        let got = ops(&mut a);
        if !got.is_empty() {
            assert_eq!(got, vec![(vec![1], vec![])]);
            break t;
        }
        assert!(timers < 40, "A was never resumed");
    };
    assert!(resumed_at > suspended_at);
    c.at(resumed_at + Nanos::from_millis(5));
    let secs = c
        .snapshot()
        .queues
        .iter()
        .find(|q| q.pid == 100)
        .map(|q| q.counts.suspended_secs)
        .unwrap();
    let want = (resumed_at - suspended_at).as_secs_f64();
    assert!(
        (secs - want).abs() < 1e-12,
        "{secs} s suspended, want {want}"
    );
    // Ages in the list are read on the same clock.
    let l = c.list(Some(100), &Sight::All);
    assert!(!l.processes[0].queues[0].suspended);
    assert_eq!(l.processes[0].connected_ns, (c.clock.now()).0);
}

#[test]
fn idleness_is_measured_on_the_core_clock() {
    let mut c = core_with("hpf", Nanos::from_secs(5));
    assert_eq!(c.idle_since, Some(Nanos::from_secs(5)));
    c.at(Nanos::from_secs(6));
    let a = connect(&mut c, 1, 100, ME, 0);
    assert_eq!(c.idle_since, None);
    c.at(Nanos::from_secs(9));
    c.handle(Event::AgentGone {
        client: a.id,
        why: "test",
    });
    c.end_round();
    assert_eq!(c.idle_since, Some(Nanos::from_secs(9)));
}

/// The priority in force for process `pid`, as the list shows it.
fn prio(c: &Rig, pid: u32) -> Option<i32> {
    c.list(Some(pid), &Sight::All)
        .processes
        .first()?
        .hints
        .iter()
        .find_map(|h| match h {
            baton_protocol::Hint::Priority(p) => Some(p.0),
            _ => None,
        })
}

/// An agent's hello, as process `pid` of `uid`.
fn hello(c: &mut Rig, id: u64, pid: u32, uid: u32) -> HelloReply {
    let (rtx, mut rrx) = oneshot::channel();
    c.handle(Event::AgentHello {
        client: ClientId(id),
        peer: Peer { pid, uid, gid: uid },
        hello: Hello::new(Role::Agent, pid, "t"),
        tx: Box::new(Inbox::default()),
        reply: rtx,
    });
    rrx.try_recv().unwrap()
}

/// A CLI request from process `pid` of `uid`.
fn request_from(c: &mut Rig, pid: u32, uid: u32, r: Request) -> Reply {
    let (tx, mut rx) = oneshot::channel();
    c.handle(Event::Request {
        peer: Peer { pid, uid, gid: uid },
        request: r,
        reply: tx,
    });
    c.end_round();
    rx.try_recv().unwrap()
}

/// Setting process `pid`'s priority to `p`.
fn set(pid: u32, p: i32) -> Request {
    Request::SetPriority {
        target: Target::Process { pid },
        priority: WirePriority(p),
    }
}

/// `r` is a refusal that says `says`.
fn refused(r: Reply, says: &str) {
    match r {
        Reply::Error(e) => {
            assert_eq!(e.kind, ErrorKind::Unauthorized);
            assert!(e.message.contains(says), "{}", e.message);
        }
        r => panic!("not refused: {r:?}"),
    }
}

mod cluster;
mod gang;
mod lease;
mod service;
mod sight;
mod slurm;
mod stall;

#[test]
fn a_machine_wide_k_reaches_the_policy_and_its_clear_restores_the_default() {
    let mut c = core();
    let hint = |h| Request::Hint {
        target: Target::All,
        hint: h,
    };
    assert_eq!(
        request(&mut c, 0, hint(baton_protocol::Hint::KEdf { k: 3 })),
        Reply::Done
    );
    assert_eq!(c.sched.global_hints().k, Some(3));
    let clear = baton_protocol::Hint::Clear(baton_protocol::HintKind::KEdf);
    assert_eq!(request(&mut c, 0, hint(clear)), Reply::Done);
    assert_eq!(c.sched.global_hints().k, Some(1));
}
