//! SLO in virtual time: HP p99 stays under the target while BE gets at least 90 % of the
//! throughput the target allows.
//!
//! "What the target allows" is measured, not assumed: the BE work of the best fixed BE share
//! (swept in steps) whose HP p99 meets the target. Two setups of the demo's workload (HP
//! releases 40 kernels of 20–80 µs every 5 ms; BE keeps 32 kernels of 1–5 ms queued), Level 3,
//! 10 simulated seconds:
//! - **the demo's scenario** (`baton demo`'s defaults: separate processes and contexts, HP on
//!   66 SMs, BE on 132), target 1.3 × HP's standalone p99. Here BE already uses all the time
//!   HP leaves idle and running it beside HP buys it nothing: every share gives BE the same
//!   work, and the feedback's job is to stay under the target;
//! - **one process, two streams** (one context; HP kernels on 100 SMs, BE on 66): BE running
//!   beside HP takes SMs HP wanted, so each share trades HP latency for BE work — the case
//!   the feedback is for. Target 2.8 ms (1.25 × standalone).

use baton_core::Nanos;
use baton_lab::{ClientSpec, ContextSpec, LabResult, LabSpec, SpanRange, Workload, run};
use baton_policies::{Hint, Policy, Slo};

const TEN_S: Nanos = Nanos::from_secs(10);

#[derive(Clone, Copy)]
struct Setup {
    context: ContextSpec,
    hp_sms: u32,
    be_sms: u32,
}

const DEMO: Setup = Setup {
    context: ContextSpec::Own,
    hp_sms: 66,
    be_sms: 132,
};

const ONE_PROCESS: Setup = Setup {
    context: ContextSpec::Shared(0),
    hp_sms: 100,
    be_sms: 66,
};

fn lab(setup: Setup, policy: Box<dyn Policy>, target: Nanos, with_be: bool) -> LabResult {
    let mut spec = LabSpec::new(policy, TEN_S);
    let hp = ClientSpec::new(
        "hp",
        1,
        Workload::Periodic {
            period: Nanos::from_millis(5),
            offset: Nanos::ZERO,
            kernels: 40,
            kernel: SpanRange::new(Nanos::from_micros(20), Nanos::from_micros(80)),
            sms: setup.hp_sms,
            announce: None,
        },
    )
    .hint(Hint::slo_target(target).unwrap());
    spec.clients.push(ClientSpec {
        context: setup.context,
        ..hp
    });
    if with_be {
        let be = ClientSpec::new(
            "be",
            2,
            Workload::Flood {
                depth: 32,
                kernel: SpanRange::new(Nanos::from_millis(1), Nanos::from_millis(5)),
                sms: setup.be_sms,
            },
        );
        spec.clients.push(ClientSpec {
            context: setup.context,
            ..be
        });
    }
    run(spec)
}

/// Returns (HP p99, BE work, BE work allowed by the target, the best fixed share).
fn measure(setup: Setup, target: Nanos, steps: u32) -> (Nanos, Nanos, Nanos, f64) {
    let mut best: Option<(f64, Nanos)> = None;
    for step in 0..=steps {
        let share = f64::from(step) / f64::from(steps);
        let r = lab(setup, Box::new(Slo::fixed(share)), target, true);
        let (p99, work) = (r.client("hp").latency(0.99), r.client("be").work);
        println!("fixed share {share:.3}: HP p99 {p99}, BE work {work}");
        if p99 <= target && best.is_none_or(|(_, w)| work > w) {
            best = Some((share, work));
        }
    }
    let (share, allowed) = best.expect("share 0 (HPF) meets the target");
    let r = lab(setup, Box::new(Slo::new()), target, true);
    let (p99, work) = (r.client("hp").latency(0.99), r.client("be").work);
    println!(
        "target {target}: best fixed share {share:.3} gives BE {allowed}; feedback: HP p99 \
         {p99}, BE {work} ({:.1} %), final share {:?} permille",
        100.0 * work.0 as f64 / allowed.0 as f64,
        r.counter("be_share_permille")
    );
    (p99, work, allowed, share)
}

#[test]
fn slo_demo_scenario_hp_p99_2771_us_under_2918_target_be_99_percent_of_allowed() {
    let alone = lab(DEMO, Box::new(Slo::new()), Nanos::from_millis(10), false)
        .client("hp")
        .latency(0.99);
    let target = Nanos(alone.0 * 13 / 10);
    let (p99, work, allowed, _) = measure(DEMO, target, 4);
    assert!(p99 <= target, "HP p99 {p99} over the target {target}");
    assert!(
        work.0 as f64 >= 0.9 * allowed.0 as f64,
        "BE {work} < 90 % of {allowed}"
    );
}

#[test]
fn slo_one_process_hp_p99_2664_us_under_2800_target_be_93_percent_of_allowed() {
    let target = Nanos::from_micros(2_800);
    let (p99, work, allowed, share) = measure(ONE_PROCESS, target, 8);
    assert!(p99 <= target, "HP p99 {p99} over the target {target}");
    assert!(
        work.0 as f64 >= 0.9 * allowed.0 as f64,
        "BE {work} < 90 % of {allowed}"
    );
    // Here the share matters: the target allows BE well beyond what HPF (share 0) gives it.
    assert!(share >= 0.25);
}
