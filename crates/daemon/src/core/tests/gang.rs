//! Gangs across devices, in the core: two ranks of one job on two GPUs and a service on the
//! first, with the gang held together or left to each device.

use super::*;

/// An agent of process `pid` at `priority` in gang `gang` (if any), with queue 1 on `device`.
fn rank(c: &mut Rig, id: u64, pid: u32, priority: i32, gang: Option<u64>, device: &str) -> Agent {
    let inbox = Inbox::default();
    let (rtx, mut rrx) = oneshot::channel();
    let id = ClientId(id);
    c.handle(Event::AgentHello {
        client: id,
        peer: Peer {
            pid,
            uid: ME,
            gid: ME,
        },
        hello: Hello::new(Role::Agent, pid, "t"),
        tx: Box::new(inbox.clone()),
        reply: rtx,
    });
    assert!(matches!(rrx.try_recv(), Ok(HelloReply::Welcome(_))));
    let mut hints = vec![baton_protocol::Hint::Priority(WirePriority(priority))];
    hints.extend(gang.map(|id| baton_protocol::Hint::Gang { id }));
    send(
        c,
        id,
        AgentMessage::ProcessStarted(ProcessStarted::new(pid, "app", &["app"], hints)),
    );
    let AgentMessage::QueueCreated(mut q) = created(1, false) else {
        unreachable!("created makes a QueueCreated")
    };
    q.device = DeviceRef {
        backend: Backend::Cuda,
        id: device.into(),
        ordinal: 0,
    };
    send(c, id, AgentMessage::QueueCreated(q));
    c.end_round();
    Agent { id, inbox }
}

const GPU0: &str = "GPU-00ba704e-0000-4000-8000-000000000000";
const GPU1: &str = "GPU-01ba704e-0000-4000-8000-000000000001";

/// Both ranks ready, then the service: which ranks' agents are told to suspend.
fn held_when_the_service_runs(c: &mut Rig) -> (bool, bool) {
    let hp = rank(c, 1, 100, 10, None, GPU0);
    let mut r0 = rank(c, 2, 200, 0, Some(7), GPU0);
    let mut r1 = rank(c, 3, 201, 0, Some(7), GPU1);
    state(c, &r0, true, 1);
    state(c, &r1, true, 1);
    assert!(ops(&mut r0).is_empty() && ops(&mut r1).is_empty());
    state(c, &hp, true, 1);
    let suspended = |a: &mut Agent| ops(a).iter().any(|(_, s)| s == &[1]);
    let held = (suspended(&mut r0), suspended(&mut r1));
    // When the service is done, every held rank resumes in the same round.
    state(c, &hp, false, 2);
    let resumed = |a: &mut Agent| ops(a).iter().any(|(r, _)| r == &[1]);
    assert_eq!((resumed(&mut r0), resumed(&mut r1)), held);
    held
}

#[test]
fn a_gang_is_held_on_every_device_only_when_the_daemon_holds_gangs_together() {
    let mut c = core();
    assert_eq!(held_when_the_service_runs(&mut c), (true, false));
    let mut c = core();
    c.core.ident.gang = crate::config::GangMode::Together;
    let r = request(
        &mut c,
        ME,
        Request::SetPolicy {
            name: "hpf".into(),
            params: vec![],
        },
    );
    assert_eq!(r, Reply::Done);
    assert_eq!(held_when_the_service_runs(&mut c), (true, true));
}

#[test]
fn the_gang_mode_is_a_policy_parameter() {
    let mut c = core();
    let set = |c: &mut Rig, value: &str| {
        request(
            c,
            ME,
            Request::SetPolicy {
                name: "hpf".into(),
                params: vec![PolicyParam {
                    key: "gang".into(),
                    value: value.into(),
                }],
            },
        )
    };
    assert_eq!(set(&mut c, "together"), Reply::Done);
    assert_eq!(c.core.ident.gang, crate::config::GangMode::Together);
    assert_eq!(held_when_the_service_runs(&mut c), (true, true));
    match set(&mut c, "sometimes") {
        Reply::Error(e) => assert_eq!(e.kind, ErrorKind::InvalidArgument),
        r => panic!("{r:?}"),
    }
    assert_eq!(c.core.ident.gang, crate::config::GangMode::Together);
    assert_eq!(set(&mut c, "independent"), Reply::Done);
    assert_eq!(c.core.ident.gang, crate::config::GangMode::Independent);
}
