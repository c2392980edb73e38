//! The core without sockets: agents are channels, events are handed in directly.

use std::path::PathBuf;
use std::time::Instant;

use baton_protocol::{
    AgentMessage, Backend, ClientId, DaemonMessage, DeviceRef, ErrorKind, Hello, HelloReply,
    LaunchWindow, ProcessStarted, QueueCreated, QueueId, QueueRef, QueueStateChange, Reply,
    Request, Role, Target, WireLevel, WirePriority,
};
use tokio::sync::{mpsc, oneshot};

use super::*;

const ME: u32 = 1000;

fn core() -> Core {
    Core::new(
        Identity {
            pid: 1,
            software: "test".into(),
            socket: PathBuf::from("/tmp/x"),
            metrics: None,
            stats_interval_ms: 0,
            auth: Authority {
                daemon_uid: ME,
                system: false,
            },
        },
        baton_policies::by_name("hpf").unwrap(),
    )
}

struct Agent {
    id: ClientId,
    rx: mpsc::UnboundedReceiver<DaemonMessage>,
}

fn connect(c: &mut Core, id: u64, pid: u32, uid: u32, priority: i32) -> Agent {
    let (tx, rx) = mpsc::unbounded_channel();
    let (rtx, mut rrx) = oneshot::channel();
    let id = ClientId(id);
    c.handle(Event::AgentHello {
        client: id,
        peer: Peer { pid, uid, gid: uid },
        hello: Hello::new(Role::Agent, pid, "t"),
        tx,
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
    Agent { id, rx }
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

fn send(c: &mut Core, client: ClientId, m: AgentMessage) {
    c.handle(Event::Agent {
        client,
        msgs: vec![m],
        arrived: Instant::now(),
    });
}

fn state(c: &mut Core, a: &Agent, ready: bool, transition: u64) {
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

fn ops(a: &mut Agent) -> Vec<(Vec<u64>, Vec<u64>)> {
    let mut v = Vec::new();
    while let Ok(m) = a.rx.try_recv() {
        if let DaemonMessage::Operations(o) = m {
            v.push((
                o.run.iter().map(|q| q.0).collect(),
                o.suspend.iter().map(|q| q.0).collect(),
            ));
        }
    }
    v
}

fn request(c: &mut Core, uid: u32, r: Request) -> Reply {
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
    assert!(c.status().decision_latency.max_ns > 0);
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
    assert!(c.list(Some(100)).processes.is_empty());
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
    let l = c.list(None);
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
    let mut a = connect(&mut c, 1, 100, ME, 0);
    send(
        &mut c,
        a.id,
        AgentMessage::QueueDestroyed { queue: QueueId(7) },
    );
    let got: Vec<_> = std::iter::from_fn(|| a.rx.try_recv().ok()).collect();
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
