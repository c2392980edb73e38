//! Share policies in virtual time: UP, PUP and CFS deliver the device time they promise.
//!
//! Three flooding clients, each its own process and context, kernels of 200–400 µs on every
//! SM, suspended at Level 3, for 10 simulated seconds. A client's achieved share is its
//! completed kernel work over everyone's.

use baton_core::Nanos;
use baton_lab::{ClientSpec, LabResult, LabSpec, Span, Workload, run};
use baton_policies::{Hint, ProcessHint, by_name};

const TEN_S: Nanos = Nanos::from_secs(10);

fn flood() -> Workload {
    Workload::Flood {
        depth: 4,
        kernel: Span::between(Nanos::from_micros(200), Nanos::from_micros(400)),
        sms: 132,
    }
}

fn check(r: &LabResult, targets: &[f64]) -> Vec<f64> {
    let got = r.work_shares();
    for (i, (g, t)) in got.iter().zip(targets).enumerate() {
        println!("client {i}: share {:.4} target {t:.4}", g);
        assert!((g - t).abs() <= 0.03, "client {i}: {g:.4} vs target {t:.4}");
    }
    got
}

#[test]
fn up_shares_50_30_20_within_3_percent_over_10_s() {
    let mut spec = LabSpec::new(by_name("up").unwrap(), TEN_S);
    for (pid, s) in (100u32..).zip([50.0, 30.0, 20.0]) {
        spec = spec.client(
            ClientSpec::new(&format!("q{s}"), pid, flood()).hint(Hint::utilization(s).unwrap()),
        );
    }
    check(&run(spec), &[0.5, 0.3, 0.2]);
}

#[test]
fn pup_process_shares_60_25_15_within_3_percent_over_10_s() {
    // Process 100 has two queues; its share covers both.
    let mut spec = LabSpec::new(by_name("pup").unwrap(), TEN_S);
    let shares = [(100, 60.0), (100, 60.0), (200, 25.0), (300, 15.0)];
    for (i, (pid, s)) in shares.into_iter().enumerate() {
        spec = spec.client(
            ClientSpec::new(&format!("c{i}"), pid, flood())
                .process_hint(ProcessHint::utilization(s).unwrap()),
        );
    }
    let r = run(spec);
    let w = r.work_shares();
    let per_process = [w[0] + w[1], w[2], w[3]];
    for (g, t) in per_process.iter().zip([0.6, 0.25, 0.15]) {
        println!("process share {g:.4} target {t:.4}");
        assert!((g - t).abs() <= 0.03, "{g:.4} vs {t:.4}");
    }
}

#[test]
fn cfs_shares_proportional_to_weights_within_3_percent_over_10_s() {
    // Priorities 0, 15, 30 weigh 1024, 1991, 3906.
    let mut spec = LabSpec::new(by_name("cfs").unwrap(), TEN_S);
    for (pid, p) in (100u32..).zip([0, 15, 30]) {
        spec = spec.client(
            ClientSpec::new(&format!("p{p}"), pid, flood()).hint(Hint::priority(p).unwrap()),
        );
    }
    let total = 1024.0 + 1991.0 + 3906.0;
    check(
        &run(spec),
        &[1024.0 / total, 1991.0 / total, 3906.0 / total],
    );
}
