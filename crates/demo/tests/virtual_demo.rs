//! The demo in virtual time: deterministic, and Baton meets its targets on the default scenario.

use baton_demo::{Phase, Scenario, Trace, run};
use baton_sim::TimeMode;

fn quick() -> Scenario {
    Scenario {
        duration: baton_core::Nanos::from_secs(3),
        ..Scenario::default()
    }
}

#[test]
fn baton_keeps_hp_p99_at_standalone_and_gives_be_the_idle_time() {
    let mut trace = Trace::new();
    let report = run(&quick(), TimeMode::Virtual, Some(&mut trace), &mut |_| {}).unwrap();
    println!("{}", report.table());
    let f = report.summary().figures;
    let alone = f.hp_alone_p99_us;
    let baton = f.hp_baton_p99_us;
    let native = f.hp_native_p99_us;
    let busy = f.hp_busy_fraction;
    let be_alone = f.be_alone_tput;
    let be_baton = f.be_baton_tput;
    assert!(baton / alone <= 1.05, "HP p99 ×{}", baton / alone);
    assert!(
        native / alone > 1.3,
        "native shows no interference: ×{}",
        native / alone
    );
    assert!(
        be_baton >= 0.9 * be_alone * (1.0 - busy),
        "BE {be_baton} < 0.9 × {be_alone} × (1 − {busy})"
    );
    assert!(report.meets_targets());
    assert!(!trace.is_empty());
    assert!(report.phase(Phase::Baton).decisions > 0);
}

#[test]
fn virtual_runs_are_deterministic() {
    let sc = Scenario {
        duration: baton_core::Nanos::from_millis(500),
        ..Scenario::default()
    };
    let a = run(&sc, TimeMode::Virtual, None, &mut |_| {})
        .unwrap()
        .summary();
    let b = run(&sc, TimeMode::Virtual, None, &mut |_| {})
        .unwrap()
        .summary();
    assert_eq!(a, b);
}

#[test]
fn the_summary_keeps_its_keys_and_reads_back() {
    let sc = Scenario {
        duration: baton_core::Nanos::from_millis(100),
        ..Scenario::default()
    };
    let summary = run(&sc, TimeMode::Virtual, None, &mut |_| {})
        .unwrap()
        .summary();
    let v = serde_json::to_value(&summary).unwrap();
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort_unstable();
        k
    };
    assert_eq!(
        keys(&v),
        [
            "baton_decisions",
            "baton_switches",
            "be_alone_switches",
            "be_alone_tput",
            "be_baton_idle_share",
            "be_baton_tput",
            "be_native_tput",
            "device",
            "duration_s",
            "hp_alone_p50_us",
            "hp_alone_p99_us",
            "hp_alone_requests",
            "hp_alone_switches",
            "hp_baton_p50_us",
            "hp_baton_p99_ratio",
            "hp_baton_p99_us",
            "hp_baton_requests",
            "hp_busy_fraction",
            "hp_native_p50_us",
            "hp_native_p99_ratio",
            "hp_native_p99_us",
            "hp_native_requests",
            "level",
            "meets_targets",
            "native_switches",
            "policy",
            "scenario",
            "schema",
            "time",
        ]
    );
    assert_eq!(
        keys(&v["scenario"]),
        [
            "batch",
            "be_depth",
            "be_kernel_us",
            "be_sms",
            "hp_kernel_us",
            "hp_kernels",
            "hp_period_us",
            "hp_sms",
            "interrupt_us",
            "seed",
            "sm_count",
            "switch_us",
            "threshold",
            "timeslice_us",
        ]
    );
    assert_eq!(v["schema"], "baton.demo/1");
    assert_eq!(v["device"], "simulated");
    assert_eq!(v["time"], "virtual");
    assert_eq!(v["policy"], "hpf");
    assert_eq!(v["level"], 3);
    assert_eq!(
        v["scenario"]["hp_kernel_us"],
        serde_json::json!([20.0, 80.0])
    );
    let back: baton_demo::DemoSummary = serde_json::from_value(v).unwrap();
    assert_eq!(back, summary);
}
