//! Every policy the registry marks work-conserving leaves some ready queue running on every
//! device that has one, whatever the snapshot; and every policy answers within the snapshot's
//! queues and asks for wake-ups in the future only. Its plans are one per queue (or none) and
//! sound: a queue it says it cannot suspend, it does not suspend.

use baton_core::{Nanos, Priority};
use baton_policies::{
    GlobalHints, Hint, ProcessHints, ProcessView, QueueView, Readiness, Share, Snapshot, catalog,
};
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Q {
    pid: u32,
    device: u32,
    ready: bool,
    suspended: bool,
    priority: i64,
    share: Option<u16>,
    deadline_us: Option<u64>,
    laxity_us: Option<u64>,
    slo: bool,
    since_us: u64,
    served_us: u64,
}

fn q() -> impl Strategy<Value = Q> {
    (
        (
            1u32..4,
            0u32..2,
            any::<bool>(),
            any::<bool>(),
            -100i64..=100,
        ),
        (
            proptest::option::of(1u16..=1000),
            proptest::option::of(10u64..100_000),
            proptest::option::of(0u64..100_000),
            any::<bool>(),
            0u64..1_000_000,
            0u64..1_000_000,
        ),
    )
        .prop_map(
            |((pid, device, ready, suspended, priority), (share, d, l, slo, since, served))| Q {
                pid,
                device,
                ready,
                suspended,
                priority,
                share,
                deadline_us: d,
                laxity_us: l,
                slo,
                since_us: since,
                served_us: served,
            },
        )
}

fn view(i: usize, q: &Q) -> QueueView {
    let mut v = QueueView::new(i as u64, q.pid, q.device, q.ready);
    v.suspended = q.suspended;
    v.since = Nanos::from_micros(q.since_us);
    v.served = Nanos::from_micros(q.served_us);
    // Some queues have had work before, some never (HPF tells them apart); some have a
    // measured command time, short or long (HPF spares short ones from other processes).
    v.jobs = q.served_us % 3;
    if q.since_us % 3 == 1 {
        v.hints.command_time = Some(Nanos::from_micros(q.served_us % 1_000 + 1));
    }
    // Some yield by their time slice (HPF lets those outranked take turns); some report how
    // their program uses them, busy or bound by its launching (HPF holds a yielding queue
    // back only for the first).
    if q.since_us % 4 == 2 {
        v.hints.yielding = Some(Nanos::from_micros(100));
    }
    if q.served_us % 5 < 2 {
        let busy = q.served_us % 5 == 0;
        v.hints.readiness = Some(Readiness {
            ready: if busy { 300 } else { 990 },
            waiting: if busy { 280 } else { 50 },
        });
    }
    v.hints.priority = Priority::new(q.priority).unwrap();
    v.hints.utilization = q
        .share
        .map(|p| Share::percent(f64::from(p) / 10.0).unwrap());
    for h in [
        q.deadline_us
            .map(|d| Hint::deadline(Nanos::from_micros(d)).unwrap()),
        q.laxity_us
            .map(|l| Hint::laxity(Nanos::from_micros(l), 80).unwrap()),
        q.slo
            .then(|| Hint::slo_target(Nanos::from_millis(2)).unwrap()),
    ]
    .into_iter()
    .flatten()
    {
        v.hints.apply(h, Nanos::ZERO);
    }
    v
}

proptest! {
    #[test]
    fn work_conserving_policies_keep_a_ready_queue_running_per_device(
        steps in proptest::collection::vec(proptest::collection::vec(q(), 1..10), 1..6),
        nice in proptest::collection::vec(-20i32..=19, 3),
        k in 1u32..4,
        active in 0u32..4,
        short_us in proptest::option::of(0u64..1_000),
    ) {
        let processes: Vec<ProcessView> = (1u32..4)
            .map(|pid| ProcessView {
                pid,
                uid: 0,
                nice: nice[(pid - 1) as usize],
                hints: ProcessHints::default(),
            })
            .collect();
        let policies = catalog().iter().flat_map(|info| {
            [
                (info, info.instantiate()),
                (info, baton_policies::by_name(&format!("process:{}", info.name)).unwrap()),
            ]
        });
        for (info, mut p) in policies {
            // Several decisions in a row, time moving forward, queues changing.
            for (step, qs) in steps.iter().enumerate() {
                let views: Vec<QueueView> = qs.iter().enumerate().map(|(i, q)| view(i, q)).collect();
                let now = Nanos::from_millis(1 + 3 * step as u64);
                let snap = Snapshot {
                    processes: &processes,
                    global: GlobalHints {
                        timeslice: None,
                        k: Some(k),
                        active_window: (active > 0).then_some(active),
                        short_command: short_us.map(Nanos::from_micros),
                        // A linger holds lower work in a service's gaps on purpose, for a
                        // bounded time (`PrePreempt`'s own test).
                        linger: None,
                    },
                    ..Snapshot::new(now, &views)
                };
                let d = p.decide(&snap);
                prop_assert!(
                    d.plans.is_empty() || d.plans.len() == views.len(),
                    "{}: {} plans for {} queues", info.name, d.plans.len(), views.len()
                );
                for (i, v) in views.iter().enumerate() {
                    prop_assert!(
                        d.plan(i).may_suspend || !d.suspends(v.id),
                        "{} suspended {} after saying it could not", info.name, v.id
                    );
                }
                for id in &d.suspend {
                    prop_assert!(views.iter().any(|v| v.id == *id), "{}: unknown {id}", info.name);
                }
                if let Some(w) = d.wake_at {
                    prop_assert!(w > now, "{}: wake {w} not after {now}", info.name);
                }
                if info.work_conserving {
                    for dev in snap.devices() {
                        let ready: Vec<&QueueView> =
                            views.iter().filter(|v| v.device == dev && v.ready).collect();
                        if !ready.is_empty() {
                            prop_assert!(
                                ready.iter().any(|v| !d.suspends(v.id)),
                                "{} suspended every ready queue on {:?}", info.name, dev
                            );
                        }
                    }
                }
            }
        }
    }
}
