//! Pre-preemption in virtual time: announcing HP work ahead of time evicts BE before it
//! arrives, so HP no longer waits for BE's in-flight work to drain.
//!
//! Level 1 (suspension waits for in-flight work, as on GPUs without L2/L3), BE keeps 1 ms
//! kernels flooding with up to 4 in flight (threshold 4, batch 2): when HP arrives its drain
//! takes up to 4 ms. Device time slices of 50 ms, so the device's own time-slicing does not
//! cut the drain short. HP releases 20 kernels of 50 µs every 20 ms under HPF; with the hint
//! it announces each release 5 ms ahead (lapsing 1 ms after the expected arrival).

use baton_core::{LaunchConfig, Level, Nanos};
use baton_lab::{Action, Announce, ClientSpec, LabResult, LabSpec, SpanRange, Workload, run};
use baton_policies::{Hint, by_name};
use baton_scheduler::OpKind;
use baton_sim::SimConfig;

fn spec(announce: Option<Announce>, with_be: bool, hp_until: Option<Nanos>) -> LabSpec {
    let mut spec = LabSpec::new(by_name("hpf").unwrap(), Nanos::from_secs(10));
    spec.device = SimConfig {
        timeslice: Nanos::from_millis(50),
        ..SimConfig::default()
    };
    let launch = LaunchConfig::new(4, 2).unwrap();
    let mut hp = ClientSpec::new(
        "hp",
        1,
        Workload::Periodic {
            period: Nanos::from_millis(20),
            offset: Nanos::from_millis(10),
            kernels: 20,
            kernel: SpanRange::fixed(Nanos::from_micros(50)),
            sms: 132,
            announce,
        },
    )
    .hint(Hint::priority(10).unwrap());
    hp.level = Some(Level::L1);
    hp.launch = launch;
    hp.until = hp_until;
    spec.clients.push(hp);
    if with_be {
        let mut be = ClientSpec::new(
            "be",
            2,
            Workload::Flood {
                depth: 16,
                kernel: SpanRange::fixed(Nanos::from_millis(1)),
                sms: 132,
            },
        );
        be.level = Some(Level::L1);
        be.launch = launch;
        spec.clients.push(be);
    }
    spec
}

fn lab(announce: Option<Announce>, with_be: bool) -> LabResult {
    run(spec(announce, with_be, None))
}

const HINT: Announce = Announce {
    lead: Nanos::from_millis(5),
    grace: Nanos::from_millis(1),
};

#[test]
fn pre_preemption_cuts_hp_mean_latency_from_4025_to_1025_us_the_3_ms_be_drain() {
    let alone = lab(None, false).client("hp").mean_latency();
    let without = lab(None, true);
    let with = lab(Some(HINT), true);
    let (w, h) = (without.client("hp"), with.client("hp"));
    println!(
        "HP mean latency: alone {alone}, without hint {} (p99 {}), with hint {} (p99 {}); \
         BE work without {} with {}",
        w.mean_latency(),
        w.latency(0.99),
        h.mean_latency(),
        h.latency(0.99),
        without.client("be").work,
        with.client("be").work,
    );
    // BE's in-flight drain: 3 full kernels behind the running one (threshold 4).
    let drain = Nanos::from_millis(3);
    assert!(w.mean_latency() - h.mean_latency() >= drain);
    assert!(h.latency(0.99).0 as f64 <= 1.1 * alone.0 as f64);
    // The device is handed over early, not wasted: BE keeps ≥ 70 % of its work.
    assert!(with.client("be").work.0 as f64 >= 0.7 * without.client("be").work.0 as f64);
}

#[test]
fn an_announcement_without_work_lapses_after_its_grace_and_be_runs_again() {
    // HP stops releasing at 1 s; at 1.5 s it announces work in 5 ms that never comes.
    let mut spec = spec(Some(HINT), true, Some(Nanos::from_secs(1)));
    let false_alarm = Hint::upcoming(Nanos::from_millis(5), Nanos::from_millis(1)).unwrap();
    spec.actions = vec![(Nanos::from_millis(1_500), Action::Hint(0, false_alarm))];
    let r = run(spec);
    let be = r.client("be").queue.unwrap();
    let ops: Vec<(Nanos, OpKind)> = r
        .ops
        .iter()
        .filter(|o| o.queue == be && o.at >= Nanos::from_secs(1))
        .map(|o| (o.at, o.kind))
        .collect();
    println!("BE operations after 1 s: {ops:?}");
    assert_eq!(
        ops,
        vec![
            (Nanos::from_millis(1_500), OpKind::Suspend),
            (Nanos::from_millis(1_506), OpKind::Resume)
        ]
    );
}
