use baton_core::{Level, Nanos};
use proptest::prelude::*;

use super::*;

fn us(n: u64) -> Nanos {
    Nanos::from_micros(n)
}

fn device(switch_cost: u64) -> SimDevice {
    let mut d = SimDevice::new(SimConfig {
        sm_count: 100,
        timeslice: us(2_000),
        switch_cost: us(switch_cost),
        idle_switch_cost: None,
        interrupt_latency: us(30),
        max_level: Level::L3,
    });
    d.record_completions(true);
    d
}

fn run_all(d: &mut SimDevice) {
    let mut guard = 0;
    while d.next_event_time() != Nanos::MAX {
        let t = d.next_event_time();
        d.advance_to(t);
        guard += 1;
        assert!(guard < 1_000_000, "the device never settles");
    }
}

fn ends(d: &mut SimDevice) -> Vec<(u64, Nanos)> {
    d.take_completions()
        .iter()
        .map(|c| (c.tag, c.ended_at))
        .collect()
}

#[test]
fn a_kernel_takes_its_duration_and_a_stream_is_fifo() {
    let mut d = device(0);
    let c = d.create_context();
    let s = d.create_stream(c, 0);
    d.launch(s, SimCommand::kernel(us(100), 100).with_tag(1));
    d.launch(s, SimCommand::kernel(us(50), 10).with_tag(2));
    run_all(&mut d);
    assert_eq!(ends(&mut d), vec![(1, us(100)), (2, us(150))]);
    assert_eq!(d.done(s), 2);
    assert_eq!(d.busy(c), us(150));
}

#[test]
fn kernels_of_one_context_share_sms() {
    // Two half-device kernels run side by side.
    let mut d = device(0);
    let c = d.create_context();
    let (a, b) = (d.create_stream(c, 0), d.create_stream(c, 0));
    d.launch(a, SimCommand::kernel(us(100), 50).with_tag(1));
    d.launch(b, SimCommand::kernel(us(100), 50).with_tag(2));
    run_all(&mut d);
    assert_eq!(ends(&mut d), vec![(1, us(100)), (2, us(100))]);

    // A kernel that got 30 of its 70 SMs runs at 3/7 speed until the first one leaves.
    let mut d = device(0);
    let c = d.create_context();
    let (a, b) = (d.create_stream(c, 0), d.create_stream(c, 0));
    d.launch(a, SimCommand::kernel(us(100), 70).with_tag(1));
    d.launch(b, SimCommand::kernel(us(100), 70).with_tag(2));
    run_all(&mut d);
    // B: 100 µs × 30 SMs = 3000 SM·µs done by t=100; 4000 left at 70 SMs → t = 157.14 µs.
    let e = ends(&mut d);
    assert_eq!(e[0], (1, us(100)));
    assert_eq!(e[1].0, 2);
    assert_eq!(e[1].1, Nanos(157_143));
}

#[test]
fn held_sms_are_sticky_and_free_ones_go_by_priority() {
    let mut d = device(0);
    let c = d.create_context();
    let low = d.create_stream(c, 0);
    let low2 = d.create_stream(c, 0);
    let high = d.create_stream(c, 5);
    d.launch(low, SimCommand::kernel(us(100), 100).with_tag(1));
    d.launch(low2, SimCommand::kernel(us(100), 100).with_tag(2));
    d.launch(high, SimCommand::kernel(us(100), 100).with_tag(3));
    run_all(&mut d);
    // The running kernel keeps its SMs; when it finishes the high-priority one goes next,
    // although it was dispatched after the second low one.
    assert_eq!(ends(&mut d), vec![(1, us(100)), (3, us(200)), (2, us(300))]);
}

#[test]
fn contexts_are_time_sliced() {
    let mut d = device(0);
    let (ca, cb) = (d.create_context(), d.create_context());
    let (a, b) = (d.create_stream(ca, 0), d.create_stream(cb, 0));
    d.launch(a, SimCommand::kernel(us(10_000), 100).with_tag(1));
    d.launch(b, SimCommand::kernel(us(10_000), 100).with_tag(2));
    run_all(&mut d);
    // A runs 0–2, 4–6, 8–10, 12–14, 16–18 ms; B fills the gaps and ends at 20 ms.
    assert_eq!(ends(&mut d), vec![(1, us(18_000)), (2, us(20_000))]);
    assert_eq!(d.busy(ca), us(10_000));
    assert_eq!(d.switches(), 10);
}

#[test]
fn switches_cost_time_and_an_idle_context_yields_at_once() {
    let mut d = device(25);
    let (ca, cb) = (d.create_context(), d.create_context());
    let (a, b) = (d.create_stream(ca, 0), d.create_stream(cb, 0));
    d.launch(a, SimCommand::kernel(us(100), 100).with_tag(1));
    d.launch(b, SimCommand::kernel(us(100), 100).with_tag(2));
    run_all(&mut d);
    // 25 µs to enter A, 100 µs of A, 25 µs to switch, 100 µs of B.
    assert_eq!(ends(&mut d), vec![(1, us(125)), (2, us(250))]);
}

#[test]
fn a_switch_away_from_a_context_with_nothing_running_costs_what_the_device_says() {
    let mut d = SimDevice::new(SimConfig {
        sm_count: 100,
        timeslice: us(100),
        switch_cost: us(200),
        idle_switch_cost: Some(us(10)),
        ..SimConfig::default()
    });
    d.record_completions(true);
    let (ca, cb) = (d.create_context(), d.create_context());
    let (a, b) = (d.create_stream(ca, 0), d.create_stream(cb, 0));
    // A's kernel outlasts its slice: the switch to B saves it (200 µs), and the switch back
    // from B, whose kernel is done, saves nothing (10 µs).
    d.launch(a, SimCommand::kernel(us(300), 100).with_tag(1));
    d.launch(b, SimCommand::kernel(us(50), 100).with_tag(2));
    run_all(&mut d);
    // Entering A from no context costs 10 µs: A runs 10–110, the switch to B 110–310, B
    // 310–360, back to A 360–370, A's last 200 µs 370–570.
    assert_eq!(ends(&mut d), vec![(2, us(360)), (1, us(570))]);
}

#[test]
fn per_context_time_slices_split_the_device() {
    let mut d = device(0);
    let (ca, cb) = (d.create_context(), d.create_context());
    d.set_timeslice(ca, Some(us(3_000)));
    d.set_timeslice(cb, Some(us(1_000)));
    let (a, b) = (d.create_stream(ca, 0), d.create_stream(cb, 0));
    for i in 0..100 {
        d.launch(a, SimCommand::kernel(us(1_000), 100).with_tag(i));
        d.launch(b, SimCommand::kernel(us(1_000), 100).with_tag(1_000 + i));
    }
    d.advance_to(us(40_000));
    let (ba, bb) = (d.busy(ca).0 as f64, d.busy(cb).0 as f64);
    assert!((ba / (ba + bb) - 0.75).abs() < 0.01, "{ba} {bb}");
}

#[test]
fn deactivation_stops_starts_but_not_the_running_command() {
    let mut d = device(0);
    let c = d.create_context();
    let s = d.create_stream(c, 0);
    d.launch(s, SimCommand::kernel(us(100), 100).with_tag(1));
    d.launch(s, SimCommand::kernel(us(100), 100).with_tag(2));
    d.advance_to(us(50));
    d.deactivate(s);
    d.advance_to(us(1_000));
    assert_eq!(ends(&mut d), vec![(1, us(100))]);
    d.reactivate(s);
    run_all(&mut d);
    assert_eq!(ends(&mut d), vec![(2, us(1_100))]);
}

#[test]
fn interruption_stops_the_running_kernel_and_keeps_its_progress() {
    let mut d = device(0);
    let c = d.create_context();
    let s = d.create_stream(c, 0);
    d.launch(s, SimCommand::kernel(us(1_000), 100).with_tag(1));
    d.advance_to(us(200));
    d.interrupt(s);
    d.advance_to(us(5_000));
    // It ran 230 µs (30 µs interrupt latency), then stopped.
    assert_eq!(d.done(s), 0);
    assert_eq!(d.busy(c), us(230));
    d.restore(s);
    run_all(&mut d);
    assert_eq!(ends(&mut d), vec![(1, us(5_770))]);
}

#[test]
fn an_interrupted_context_gives_the_device_to_another() {
    let mut d = device(0);
    let (ca, cb) = (d.create_context(), d.create_context());
    let (a, b) = (d.create_stream(ca, 0), d.create_stream(cb, 0));
    d.launch(a, SimCommand::kernel(us(10_000), 100).with_tag(1));
    d.advance_to(us(100));
    d.launch(b, SimCommand::kernel(us(100), 100).with_tag(2));
    d.interrupt(a);
    d.advance_to(us(1_000));
    // B waited only for the interrupt latency, not for A's slice.
    assert_eq!(ends(&mut d), vec![(2, us(230))]);
}

#[test]
fn events_order_streams_and_copies_and_host_functions_run() {
    let mut d = device(0);
    let c = d.create_context();
    let (a, b) = (d.create_stream(c, 0), d.create_stream(c, 0));
    let e = d.create_event();
    d.launch(a, SimCommand::kernel(us(100), 10).with_tag(1));
    d.launch(a, SimCommand::record(e).with_tag(2));
    d.launch(b, SimCommand::wait_event(e).with_tag(3));
    d.launch(b, SimCommand::memcpy(us(40)).with_tag(4));
    d.launch(b, SimCommand::host_func(us(10)).with_tag(5));
    d.launch(a, SimCommand::memset(us(5)).with_tag(6));
    run_all(&mut d);
    assert_eq!(
        ends(&mut d),
        vec![
            (1, us(100)),
            (2, us(100)),
            (3, us(100)),
            // Both copies become ready at 100 µs; the engine takes them in stream order.
            (6, us(105)),
            (4, us(145)),
            (5, us(155)),
        ]
    );
}

#[test]
fn a_wait_for_an_event_never_recorded_passes() {
    let mut d = device(0);
    let c = d.create_context();
    let s = d.create_stream(c, 0);
    let e = d.create_event();
    d.launch(s, SimCommand::wait_event(e).with_tag(1));
    assert_eq!(d.done(s), 1);
}

fn workload() -> impl Strategy<Value = Vec<(u8, u8, u16, u8)>> {
    // (context, stream-in-context, duration µs, kind selector)
    proptest::collection::vec((0u8..3, 0u8..2, 0u16..3_000, 0u8..10), 1..60)
}

fn replay(cmds: &[(u8, u8, u16, u8)], cost: u64) -> (Vec<Completion>, Vec<u64>) {
    let mut d = device(cost);
    let ctxs: Vec<_> = (0..3).map(|_| d.create_context()).collect();
    let streams: Vec<Vec<StreamId>> = ctxs
        .iter()
        .map(|c| (0..2).map(|p| d.create_stream(*c, p)).collect())
        .collect();
    let ev = d.create_event();
    let mut per_stream = vec![0u64; 6];
    for (i, (c, s, dur, k)) in cmds.iter().enumerate() {
        let sid = streams[*c as usize][*s as usize];
        let gap = us(u64::from(*dur) / 3);
        let dur = us(u64::from(*dur));
        let cmd = match k {
            0 => SimCommand::memcpy(dur),
            1 => SimCommand::host_func(dur),
            2 => SimCommand::record(ev),
            3 => SimCommand::wait_event(ev),
            _ => SimCommand::kernel(dur, u32::from(*k) * 12),
        };
        d.launch(sid, cmd.with_tag(i as u64));
        per_stream[sid.0 as usize] += 1;
        d.advance_to(d.now() + gap);
    }
    run_all(&mut d);
    let done: Vec<u64> = (0..6).map(|s| d.done(StreamId(s))).collect();
    assert_eq!(done, per_stream);
    (d.take_completions(), done)
}

proptest! {
    /// Any workload completes every command exactly once, in stream order, and replays
    /// identically.
    #[test]
    fn everything_completes_in_order_and_deterministically(cmds in workload(), cost in 0u64..50) {
        let (first, _) = replay(&cmds, cost);
        let (second, _) = replay(&cmds, cost);
        prop_assert_eq!(&first, &second);
        prop_assert_eq!(first.len(), cmds.len());
        for s in 0..6 {
            let idx: Vec<u64> = first.iter().filter(|c| c.stream == StreamId(s)).map(|c| c.index).collect();
            prop_assert_eq!(idx.clone(), (0..idx.len() as u64).collect::<Vec<_>>());
        }
        for c in &first {
            prop_assert!(c.launched_at <= c.started_at && c.started_at <= c.ended_at);
        }
    }
}
