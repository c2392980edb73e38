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
    let j = report.to_json();
    let alone = j["hp_alone_p99_us"].as_f64().unwrap();
    let baton = j["hp_baton_p99_us"].as_f64().unwrap();
    let native = j["hp_native_p99_us"].as_f64().unwrap();
    let busy = j["hp_busy_fraction"].as_f64().unwrap();
    let be_alone = j["be_alone_tput"].as_f64().unwrap();
    let be_baton = j["be_baton_tput"].as_f64().unwrap();
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
        .to_json();
    let b = run(&sc, TimeMode::Virtual, None, &mut |_| {})
        .unwrap()
        .to_json();
    assert_eq!(a, b);
}
