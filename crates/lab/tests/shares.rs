//! Share policies in virtual time: UP, PUP and CFS deliver the device time they promise, and
//! UP and PUP serve a latency-critical client that uses less than its share when its work
//! arrives.
//!
//! The share tests: three flooding clients, each its own process and context, kernels of
//! 200–400 µs on every SM, suspended at Level 3, for 10 simulated seconds. A client's achieved
//! share is its completed kernel work over everyone's.

use baton_core::Nanos;
use baton_lab::{ClientSpec, LabResult, LabSpec, SpanRange, Workload, run};
use baton_policies::{Hint, ProcessHint, by_name};

const TEN_S: Nanos = Nanos::from_secs(10);

fn flood() -> Workload {
    Workload::Flood {
        depth: 4,
        kernel: SpanRange::new(Nanos::from_micros(200), Nanos::from_micros(400)),
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

/// An open-loop service busy 38 % of the time (a 7.6 ms job every 20 ms) beside a flood of
/// 0.5–1.5 ms kernels, under a share policy giving it 75 % and the flood 25 %.
fn service_beside_a_flood(policy: &str, kernels: u32) -> LabResult {
    let hp = ClientSpec::new(
        "hp",
        1,
        Workload::Periodic {
            period: Nanos::from_millis(20),
            offset: Nanos::ZERO,
            kernels,
            kernel: SpanRange::fixed(Nanos::from_micros(200)),
            sms: 132,
            announce: None,
        },
    );
    let be = ClientSpec::new(
        "be",
        2,
        Workload::Flood {
            depth: 8,
            kernel: SpanRange::new(Nanos::from_micros(500), Nanos::from_micros(1_500)),
            sms: 132,
        },
    );
    let (hp, be) = if policy == "pup" {
        (
            hp.process_hint(ProcessHint::utilization(75.0).unwrap()),
            be.process_hint(ProcessHint::utilization(25.0).unwrap()),
        )
    } else {
        (
            hp.hint(Hint::utilization(75.0).unwrap()),
            be.hint(Hint::utilization(25.0).unwrap()),
        )
    };
    run(LabSpec::new(by_name(policy).unwrap(), Nanos::from_secs(4))
        .client(hp)
        .client(be))
}

#[test]
fn a_service_under_its_share_is_served_on_arrival() {
    // Alone, a job takes 38 × 200 µs plus the simulated launch costs: 7.655 ms. Waiting for
    // the flood's turn (5 ms of its 20 ms period) made it 12.7 ms.
    for policy in ["up", "pup"] {
        let r = service_beside_a_flood(policy, 38);
        let hp = r.client("hp");
        println!(
            "{policy}: HP p50 {} p99 {}; BE work {}",
            hp.latency(0.5),
            hp.latency(0.99),
            r.client("be").work
        );
        assert_eq!(hp.latencies().len(), 200, "{policy}: every job completes");
        assert!(hp.latency(0.99) <= Nanos::from_micros(7_700), "{policy}");
        // The flood keeps nearly all the time the service leaves idle (62 % of 4 s).
        assert!(r.client("be").work >= Nanos::from_millis(2_400), "{policy}");
    }
}

#[test]
fn a_service_over_its_share_is_held_to_it() {
    // 90 kernels every 20 ms would need 90 % of the device; it gets its 75 %.
    for policy in ["up", "pup"] {
        let r = service_beside_a_flood(policy, 90);
        check(&r, &[0.75, 0.25]);
    }
}
