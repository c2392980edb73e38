//! Stalls, in virtual time: a queue whose work in flight completes nothing stops holding
//! others back after the stall limit, and is back as soon as it completes something.

use baton_protocol::{QueueStats, StatsReport};

use super::*;

const STALL: Nanos = Nanos(10_000_000_000);

fn stalling_core() -> Rig {
    let mut c = core();
    c.core.ident.stall = Some(STALL);
    c
}

const fn secs(s: u64) -> Nanos {
    Nanos(s * 1_000_000_000)
}

/// The agent reports, at `t`, its queue 1 with `completed` commands done and `in_flight` in
/// flight.
fn report(c: &mut Rig, a: &Agent, t: Nanos, completed: u64, in_flight: u32) {
    c.at(t);
    send(
        c,
        a.id,
        AgentMessage::Stats(StatsReport {
            at_ns: t.0,
            queues: vec![QueueStats {
                queue: QueueId(1),
                launched: completed + u64::from(in_flight),
                completed,
                in_flight,
                buffered: 0,
                busy_ns: 0,
            }],
        }),
    );
    c.end_round();
}

/// HP (priority 10) and BE (0), both ready: BE is held back.
fn hp_holding_be(c: &mut Rig) -> (Agent, Agent) {
    let mut hp = connect(c, 1, 100, ME, 10);
    let mut be = connect(c, 2, 200, ME, 0);
    state(c, &be, true, 1);
    state(c, &hp, true, 1);
    assert_eq!(ops(&mut be), vec![(vec![], vec![1])]);
    assert!(ops(&mut hp).is_empty());
    (hp, be)
}

#[test]
fn a_queue_whose_work_completes_nothing_stops_holding_others_back_until_it_does() {
    let mut c = stalling_core();
    let (mut hp, mut be) = hp_holding_be(&mut c);
    report(&mut c, &hp, secs(1), 4, 1);
    // Nothing completes, the kernel stays in flight: within the limit, BE stays held.
    report(&mut c, &hp, secs(6), 4, 1);
    report(&mut c, &hp, secs(10), 4, 1);
    assert!(ops(&mut be).is_empty(), "within the stall limit");
    assert_eq!((c.stalled_queues(), c.stalls), (0, 0));
    // The limit after its last progress (the first report, at 1 s): BE runs.
    report(&mut c, &hp, secs(11), 4, 1);
    assert_eq!(ops(&mut be), vec![(vec![1], vec![])]);
    assert!(ops(&mut hp).is_empty(), "its own work is left running");
    assert_eq!((c.stalled_queues(), c.stalls), (1, 1));
    // Further reports without progress change nothing.
    report(&mut c, &hp, secs(12), 4, 1);
    assert!(ops(&mut be).is_empty());
    // It completes a command: it holds BE back again.
    report(&mut c, &hp, secs(13), 5, 1);
    assert_eq!(ops(&mut be), vec![(vec![], vec![1])]);
    assert_eq!((c.stalled_queues(), c.stalls), (0, 1));
    // Its later transitions count as before: idle, BE runs.
    state(&mut c, &hp, false, 2);
    assert_eq!(ops(&mut be), vec![(vec![1], vec![])]);
}

#[test]
fn slow_but_progressing_work_and_queues_with_nothing_in_flight_never_stall() {
    let mut c = stalling_core();
    let (hp, mut be) = hp_holding_be(&mut c);
    // One command completes every 9 s: slow, but progress.
    for (i, t) in (1..=6).map(|i| (i, secs(9 * i))) {
        report(&mut c, &hp, t, i, 1);
    }
    // Then nothing in flight (its work waits on the host, say) for a long time.
    for t in 6..12 {
        report(&mut c, &hp, secs(9 * t), 6, 0);
    }
    assert!(ops(&mut be).is_empty(), "BE held throughout");
    assert_eq!(c.stalls, 0);
}

#[test]
fn a_queue_that_holds_nobody_back_is_not_stalled() {
    let mut c = stalling_core();
    let hp = connect(&mut c, 1, 100, ME, 10);
    state(&mut c, &hp, true, 1);
    report(&mut c, &hp, secs(1), 0, 1);
    report(&mut c, &hp, secs(30), 0, 1);
    assert_eq!(c.stalls, 0, "alone, a hung queue holds nobody back");
    // A BE queue arrives and is held: at the next report, the queue is found stalled.
    let mut be = connect(&mut c, 2, 200, ME, 0);
    state(&mut c, &be, true, 1);
    assert_eq!(ops(&mut be), vec![(vec![], vec![1])]);
    report(&mut c, &hp, secs(31), 0, 1);
    assert_eq!(ops(&mut be), vec![(vec![1], vec![])]);
    assert_eq!(c.stalls, 1);
}

#[test]
fn without_a_limit_a_hung_queue_holds_others_back() {
    let mut c = core();
    let (hp, mut be) = hp_holding_be(&mut c);
    report(&mut c, &hp, secs(1), 0, 1);
    report(&mut c, &hp, secs(100), 0, 1);
    assert!(ops(&mut be).is_empty());
    assert_eq!(c.stalls, 0);
}

#[test]
fn a_stalled_queue_stays_out_when_its_lapsed_lease_is_renewed() {
    let mut c = stalling_core();
    c.core.ident.lease = Some(secs(2));
    let (hp, mut be) = hp_holding_be(&mut c);
    // A lower queue, held back by BE once HP stalls: someone is held, so leases run.
    let mut low = connect(&mut c, 3, 300, ME, -5);
    state(&mut c, &low, true, 1);
    assert_eq!(ops(&mut low), vec![(vec![], vec![1])]);
    report(&mut c, &hp, secs(1), 0, 1);
    report(&mut c, &hp, secs(11), 0, 1);
    assert_eq!(ops(&mut be), vec![(vec![1], vec![])]);
    assert!(ops(&mut low).is_empty());
    // The process then falls silent for a lease (pinged at 12 s, lapsed at 13 s) while BE,
    // which holds the lower queue back, keeps speaking…
    for t in [12, 13] {
        c.at(secs(t));
        send(&mut c, be.id, AgentMessage::Pong { nonce: t });
        c.on_timer();
        c.end_round();
    }
    assert!(c.clients[&hp.id].lapsed, "silent for a lease");
    // …and speaks again: its lease is renewed, but its queue is still stalled and stays out.
    c.at(secs(14));
    send(&mut c, hp.id, AgentMessage::Pong { nonce: 1 });
    c.end_round();
    assert!(!c.clients[&hp.id].lapsed);
    assert!(ops(&mut be).is_empty(), "BE keeps running");
    assert_eq!(c.stalled_queues(), 1);
    // Progress puts it back.
    report(&mut c, &hp, secs(15), 1, 0);
    assert_eq!(ops(&mut be), vec![(vec![], vec![1])]);
}
