//! AWF in virtual time: the focused application keeps its standalone latency beside two
//! background floods, and yields to the newly focused flood when focus moves away.
//!
//! "app": a 3 ms frame (30 kernels × 100 µs) every 16 ms; two background processes flooding
//! 1 ms kernels; each its own process and context, Level 3, 10 simulated seconds; focus on the
//! app for the first 5 s, on a background process for the last 5.

use baton_core::Nanos;
use baton_lab::{Action, ClientSpec, LabSpec, SpanRange, Workload, run};
use baton_policies::{GlobalHint, by_name};

fn app() -> ClientSpec {
    ClientSpec::new(
        "app",
        42,
        Workload::Periodic {
            period: Nanos::from_millis(16),
            offset: Nanos::ZERO,
            kernels: 30,
            kernel: SpanRange::fixed(Nanos::from_micros(100)),
            sms: 132,
            announce: None,
        },
    )
}

fn background(name: &str, pid: u32) -> ClientSpec {
    ClientSpec::new(
        name,
        pid,
        Workload::Flood {
            depth: 8,
            kernel: SpanRange::fixed(Nanos::from_millis(1)),
            sms: 132,
        },
    )
}

#[test]
fn awf_focused_app_p99_3055_us_vs_3000_alone() {
    let ten = Nanos::from_secs(10);
    let mut alone = LabSpec::new(by_name("awf").unwrap(), ten);
    alone.clients = vec![app()];
    let alone = run(alone).client("app").latency(0.99);

    let mut spec = LabSpec::new(by_name("awf").unwrap(), ten);
    spec.clients = vec![app(), background("bg1", 7), background("bg2", 8)];
    spec.global = vec![GlobalHint::active_window(Some(42)).unwrap()];
    spec.actions = vec![(
        Nanos::from_secs(5),
        Action::Global(GlobalHint::active_window(Some(7)).unwrap()),
    )];
    let r = run(spec);
    let jobs = &r.client("app").jobs;
    let p99 = |from: Nanos, to: Nanos| {
        let mut l: Vec<Nanos> = jobs
            .iter()
            .filter(|j| j.release >= from && j.release < to)
            .map(|j| j.latency())
            .collect();
        l.sort_unstable();
        baton_core::percentile(&l, 0.99)
    };
    let focused = p99(Nanos::ZERO, Nanos::from_secs(5));
    let unfocused = jobs
        .iter()
        .filter(|j| j.release >= Nanos::from_secs(5))
        .count();
    println!("app p99 alone {alone}, focused {focused}; frames completed unfocused: {unfocused}");
    assert!(focused.0 as f64 <= 1.05 * alone.0 as f64);
    // Unfocused, it waits for the focused flood: no frame completes.
    assert!(unfocused < 10);
    // The background got the rest of the device while the app was focused.
    assert!(r.client("bg1").work + r.client("bg2").work > Nanos::from_secs(7));
}
