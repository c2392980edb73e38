//! MLFQ in virtual time: short jobs keep near-standalone latency beside a long job, and the
//! long job never starves.
//!
//! "short": closed loop of 1 ms jobs (10 kernels × 100 µs) with 4 ms pauses; "long": closed
//! loop of 100 ms jobs (200 kernels × 500 µs) with no pause; each its own process and context,
//! Level 3, 10 simulated seconds.

use baton_core::Nanos;
use baton_lab::{ClientSpec, LabResult, LabSpec, SpanRange, Workload, run};
use baton_policies::by_name;

fn short() -> ClientSpec {
    ClientSpec::new(
        "short",
        1,
        Workload::ClosedLoop {
            kernels: 10,
            kernel: SpanRange::fixed(Nanos::from_micros(100)),
            sms: 132,
            think: Nanos::from_millis(4),
        },
    )
}

fn long() -> ClientSpec {
    ClientSpec::new(
        "long",
        2,
        Workload::ClosedLoop {
            kernels: 200,
            kernel: SpanRange::fixed(Nanos::from_micros(500)),
            sms: 132,
            think: Nanos::ZERO,
        },
    )
}

fn lab(policy: &str, clients: Vec<ClientSpec>) -> LabResult {
    let mut spec = LabSpec::new(by_name(policy).unwrap(), Nanos::from_secs(10));
    spec.clients = clients;
    run(spec)
}

#[test]
fn mlfq_short_jobs_at_1_05x_alone_long_jobs_keep_80_percent() {
    let alone = lab("mlfq", vec![short()]).client("short").mean_latency();
    let r = lab("mlfq", vec![short(), long()]);
    let (s, l) = (r.client("short"), r.client("long"));
    println!(
        "short alone {alone}, mlfq {}; long mlfq {} over {} jobs; work shares {:?}",
        s.mean_latency(),
        l.mean_latency(),
        l.jobs.len(),
        r.work_shares()
    );
    assert!(s.mean_latency() < l.mean_latency());
    assert!(s.mean_latency().0 as f64 <= 1.2 * alone.0 as f64);
    // The long job keeps most of the device the short one leaves (short uses ≈ 1/5).
    assert!(l.jobs.len() >= 60, "long finished {} jobs", l.jobs.len());
}

#[test]
fn mlfq_long_job_gets_50_percent_behind_two_saturating_short_clients() {
    // Two short clients that together keep the device busy all the time at level 0 unless
    // demoted: the boost must still give the long client device time every boost period.
    let busy_short = |name: &str, pid| ClientSpec {
        name: name.to_string(),
        pid,
        workload: Workload::ClosedLoop {
            kernels: 10,
            kernel: SpanRange::fixed(Nanos::from_micros(100)),
            sms: 132,
            think: Nanos::ZERO,
        },
        ..short()
    };
    let r = lab("mlfq", vec![busy_short("a", 1), busy_short("b", 3), long()]);
    let l = r.client("long");
    let shares = r.work_shares();
    println!("shares {shares:?}, long jobs {}", l.jobs.len());
    // Sampled every 100 ms: the long client progresses in every 200 ms window.
    for w in l.work_series.windows(3) {
        assert!(w[2] > w[0], "long starved: {:?}", l.work_series);
    }
    assert!(shares[2] > 0.05);
}
