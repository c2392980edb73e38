//! Leases and the priority cap, in virtual time.

use super::*;

const LEASE: Nanos = Nanos(1_000_000_000);

fn leased_core() -> Rig {
    let mut c = core();
    c.core.ident.lease = Some(LEASE);
    c
}

/// Moves time to `t` and runs the timer round, as the daemon's loop does when it is due.
fn tick(c: &mut Rig, t: Nanos) {
    c.at(t);
    assert!(
        c.next_wake().is_some_and(|w| w <= t),
        "a wake-up is due by {t:?}"
    );
    c.on_timer();
    c.end_round();
}

fn pings(a: &Agent) -> usize {
    a.take()
        .iter()
        .filter(|m| matches!(m, DaemonMessage::Ping { .. }))
        .count()
}

#[test]
fn a_silent_high_priority_process_stops_holding_others_back_after_its_lease() {
    let mut c = leased_core();
    let mut hp = connect(&mut c, 1, 100, ME, 10);
    let mut be = connect(&mut c, 2, 200, ME, 0);
    state(&mut c, &be, true, 1);
    state(&mut c, &hp, true, 1);
    assert_eq!(ops(&mut be), vec![(vec![], vec![1])]);
    let _ = hp.take();
    // Half a lease of silence: a ping.
    assert_eq!(c.next_wake(), Some(Nanos(LEASE.0 / 2)));
    tick(&mut c, Nanos(LEASE.0 / 2));
    assert_eq!(pings(&hp), 1);
    assert!(ops(&mut be).is_empty(), "still within the lease");
    // No answer for the whole lease: BE runs.
    assert_eq!(c.next_wake(), Some(LEASE));
    tick(&mut c, LEASE);
    assert_eq!(ops(&mut be), vec![(vec![1], vec![])]);
    assert_eq!(
        c.next_wake(),
        None,
        "nobody is held back: no lease to watch"
    );
    // The process continues and answers: it holds BE back again, with its queue still ready.
    c.at(Nanos(3 * LEASE.0));
    send(&mut c, hp.id, AgentMessage::Pong { nonce: 1 });
    c.end_round();
    assert_eq!(ops(&mut be), vec![(vec![], vec![1])]);
    assert!(ops(&mut hp).is_empty());
    // Its later transitions count as before.
    state(&mut c, &hp, false, 2);
    assert_eq!(ops(&mut be), vec![(vec![1], vec![])]);
}

#[test]
fn an_answering_process_keeps_its_lease() {
    let mut c = leased_core();
    let hp = connect(&mut c, 1, 100, ME, 10);
    let mut be = connect(&mut c, 2, 200, ME, 0);
    state(&mut c, &be, true, 1);
    state(&mut c, &hp, true, 1);
    assert_eq!(ops(&mut be), vec![(vec![], vec![1])]);
    let mut t = 0;
    for _ in 0..10 {
        t += LEASE.0 / 2;
        tick(&mut c, Nanos(t));
        assert_eq!(pings(&hp), 1);
        send(&mut c, hp.id, AgentMessage::Pong { nonce: t });
        c.end_round();
    }
    assert!(ops(&mut be).is_empty(), "BE stayed held for 5 leases");
}

#[test]
fn a_lapsed_process_that_was_held_back_is_resumed() {
    // A stopped BE process holds nobody back, but an equal-priority pair under HPF does not
    // suspend; use a lower queue held by a ready middle one that stops.
    let mut c = leased_core();
    let mut mid = connect(&mut c, 1, 100, ME, 5);
    let mut low = connect(&mut c, 2, 200, ME, 0);
    state(&mut c, &low, true, 1);
    state(&mut c, &mid, true, 1);
    assert_eq!(ops(&mut low), vec![(vec![], vec![1])]);
    // A higher one arrives and holds mid back; then mid and hp both fall silent.
    let mut hp = connect(&mut c, 3, 300, ME, 10);
    state(&mut c, &hp, true, 1);
    assert_eq!(ops(&mut mid), vec![(vec![], vec![1])]);
    tick(&mut c, Nanos(LEASE.0 / 2));
    assert_eq!(pings(&hp), 1);
    assert_eq!(pings(&mid), 0, "a held-back process is on no lease");
    tick(&mut c, LEASE);
    // HP lapsed: mid runs, low is still held by mid.
    assert_eq!(ops(&mut mid), vec![(vec![1], vec![])]);
    assert!(ops(&mut low).is_empty());
    assert!(
        ops(&mut hp).is_empty(),
        "HP was running: nothing to send it"
    );
}

#[test]
fn agent_priorities_are_capped_unless_root() {
    let mut c = core();
    c.core.ident.max_priority = Some(10);
    let _user = connect(&mut c, 1, 100, ME, 50);
    let _root = connect(&mut c, 2, 200, 0, 50);
    let prio = |c: &Rig, pid| {
        c.list(Some(pid), &Sight::All).processes[0]
            .hints
            .iter()
            .find_map(|h| match h {
                baton_protocol::Hint::Priority(p) => Some(p.0),
                _ => None,
            })
    };
    assert_eq!(prio(&c, 100), Some(10), "lowered to the cap");
    assert_eq!(prio(&c, 200), Some(50), "root is not capped");
    claim(&mut c, ClientId(1), 90);
    assert_eq!(prio(&c, 100), Some(10));
    // The CLI: refused above the cap, saying why; nothing changes.
    let set = |p| Request::SetPriority {
        target: Target::Process { pid: 100 },
        priority: WirePriority(p),
    };
    match request(&mut c, ME, set(11)) {
        Reply::Error(e) => {
            assert_eq!(e.kind, ErrorKind::Unauthorized);
            assert!(e.message.contains("above 10"), "{}", e.message);
        }
        r => panic!("{r:?}"),
    }
    assert_eq!(prio(&c, 100), Some(10));
    assert_eq!(request(&mut c, ME, set(3)), Reply::Done);
    assert_eq!(prio(&c, 100), Some(3));
    assert_eq!(request(&mut c, 0, set(80)), Reply::Done, "root may");
    assert_eq!(prio(&c, 100), Some(80));
}
