//! SLO in virtual time, on the demo's scenario: HP p99 stays under the target while BE gets at
//! least 90 % of the throughput the target allows.
//!
//! The demo's scenario (`baton demo`'s defaults): HP releases 40 kernels of 20–80 µs on 66 SMs
//! every 5 ms; BE keeps 32 kernels of 1–5 ms on all 132 SMs queued; separate processes and
//! contexts, Level 3, 10 simulated seconds, target 1.3 × HP's standalone p99. "What the target
//! allows" is measured, not assumed: the BE work of the best fixed BE share (0, ¼, ½, ¾, 1)
//! whose HP p99 meets the target.
//!
//! Measured (see docs/POLICIES.md): alone p99 2245 µs, target 2918 µs; fixed shares give HP
//! p99 2285/2550/2800/3050/6097 µs for BE work 5.90/5.86/5.86/5.86/5.87 s — in this scenario
//! BE already uses all the time HP leaves idle, and running it beside HP buys it nothing;
//! feedback: HP p99 2399 µs, BE 100.1 % of the allowed work.

use baton_core::Nanos;
use baton_lab::{ClientSpec, LabResult, LabSpec, Span, Workload, run};
use baton_policies::{Hint, Policy, Slo};

const TEN_S: Nanos = Nanos::from_secs(10);

fn hp(target: Nanos) -> ClientSpec {
    ClientSpec::new(
        "hp",
        1,
        Workload::Periodic {
            period: Nanos::from_millis(5),
            offset: Nanos::ZERO,
            kernels: 40,
            kernel: Span::between(Nanos::from_micros(20), Nanos::from_micros(80)),
            sms: 66,
            announce: None,
        },
    )
    .hint(Hint::slo_target(target).unwrap())
    .hint(Hint::priority(10).unwrap())
}

fn be() -> ClientSpec {
    ClientSpec::new(
        "be",
        2,
        Workload::Flood {
            depth: 32,
            kernel: Span::between(Nanos::from_millis(1), Nanos::from_millis(5)),
            sms: 132,
        },
    )
}

fn lab(policy: Box<dyn Policy>, target: Nanos, with_be: bool) -> LabResult {
    let mut spec = LabSpec::new(policy, TEN_S);
    spec.clients.push(hp(target));
    if with_be {
        spec.clients.push(be());
    }
    run(spec)
}

#[test]
fn slo_hp_p99_2399_under_2918_target_be_100_percent_of_allowed() {
    let alone = lab(Box::new(Slo::new()), Nanos::from_millis(10), false)
        .client("hp")
        .latency(0.99);
    let target = Nanos(alone.0 * 13 / 10);
    let mut best: Option<(f64, Nanos)> = None;
    for step in 0..=4 {
        let share = f64::from(step) / 4.0;
        let r = lab(Box::new(Slo::fixed(share)), target, true);
        let (p99, work) = (r.client("hp").latency(0.99), r.client("be").work);
        println!("fixed share {share:.2}: HP p99 {p99}, BE work {work}");
        if p99 <= target {
            best = Some((share, work));
        }
    }
    let (best_share, allowed) = best.expect("share 0 (HPF) meets a target of 1.3x alone");
    let r = lab(Box::new(Slo::new()), target, true);
    let (p99, work) = (r.client("hp").latency(0.99), r.client("be").work);
    println!(
        "alone p99 {alone}, target {target}; best fixed share {best_share:.2} gives BE {allowed}; \
         feedback: HP p99 {p99}, BE {work} ({:.1} %), final share {:?}",
        100.0 * work.0 as f64 / allowed.0 as f64,
        r.counter("be_share_permille")
    );
    assert!(p99 <= target, "HP p99 {p99} over the target {target}");
    assert!(
        work.0 as f64 >= 0.9 * allowed.0 as f64,
        "BE {work} < 90 % of {allowed}"
    );
}
