//! Guard in virtual time: the failure shape of "hold lower work whenever the service has a
//! command queued", and the measured choice that replaces it.
//!
//! The service is launch-bound, as an LLM decoder or small-batch inference is: a job is 60
//! kernels of 10–30 µs launched 80 µs apart by the host, then 2 ms of think time. Its queue has
//! work from the first launch to the last completion, ~5 ms of every ~7, while the device is
//! mostly idle. Both programs share one context (MPS, or one process), Level 1.
//! - **Spare SMs** (service kernels on 24 SMs, the flood's on 100 of 132): the flood beside the
//!   service costs it nothing. HPF holds the flood back whenever the service has work and
//!   leaves it under a third of what it gets alone; Guard measures that holding buys nothing and
//!   lets it run, keeping the service within ×1.10 of alone.
//! - **No spare SMs** (the flood's kernels on all 132): every service kernel waits for the
//!   flood's. Guard measures that and holds the flood back as HPF does, at the cost of its
//!   probes only.

use baton_core::{Level, Nanos, Priority};
use baton_lab::{ClientSpec, ContextSpec, LabResult, LabSpec, SpanRange, Workload, run};
use baton_policies::{Hint, by_name};

const RUN: Nanos = Nanos::from_secs(10);

fn us(a: u64, b: u64) -> SpanRange {
    SpanRange::new(Nanos::from_micros(a), Nanos::from_micros(b))
}

fn service() -> ClientSpec {
    ClientSpec {
        context: ContextSpec::Shared(0),
        level: Some(Level::L1),
        ..ClientSpec::new(
            "hp",
            1,
            Workload::Paced {
                kernels: 60,
                kernel: us(10, 30),
                sms: 24,
                gap: Nanos::from_micros(80),
                think: Nanos::from_millis(1),
            },
        )
        .hint(Hint::Priority(Priority::new(10).unwrap()))
    }
}

fn flood(sms: u32) -> ClientSpec {
    ClientSpec {
        context: ContextSpec::Shared(0),
        level: Some(Level::L1),
        ..ClientSpec::new(
            "be",
            2,
            Workload::Flood {
                depth: 4,
                kernel: us(200, 400),
                sms,
            },
        )
    }
}

/// Runs `clients` under `policy`, or natively (no XQueues) with `None`.
fn lab(policy: Option<&str>, clients: Vec<ClientSpec>) -> LabResult {
    let mut spec = LabSpec::new(by_name(policy.unwrap_or("hpf")).unwrap(), RUN);
    spec.idle_linger = Some(Nanos::from_micros(300));
    spec.clients = clients
        .into_iter()
        .map(|c| ClientSpec {
            scheduled: policy.is_some(),
            ..c
        })
        .collect();
    run(spec)
}

#[derive(Debug)]
struct Cell {
    hp_p99_ratio: f64,
    be_share: f64,
    hp_busy: f64,
}

/// HP p99 ÷ HP alone, BE work ÷ BE alone, and HP's device-busy fraction alone.
fn cell(policy: Option<&str>, be_sms: u32) -> Cell {
    let alone = lab(policy, vec![service()]);
    let be_alone = lab(policy, vec![flood(be_sms)]);
    let both = lab(policy, vec![service(), flood(be_sms)]);
    let hp_alone = alone.client("hp");
    let c = Cell {
        hp_p99_ratio: both.client("hp").latency(0.99).0 as f64 / hp_alone.latency(0.99).0 as f64,
        be_share: both.client("be").work.0 as f64 / be_alone.client("be").work.0 as f64,
        hp_busy: hp_alone.context_busy.0 as f64 / RUN.0 as f64,
    };
    eprintln!("{} BE on {be_sms} SMs: {c:?}", policy.unwrap_or("native"));
    c
}

#[test]
fn hpf_starves_the_flood_beside_a_launch_bound_service_and_guard_does_not() {
    let hpf = cell(Some("hpf"), 100);
    assert!(
        hpf.be_share < 0.35,
        "the failure shape: HPF holds the flood back for a service that leaves the device \
         idle (BE {:.0} % of alone)",
        hpf.be_share * 100.0
    );
    let guard = cell(Some("guard"), 100);
    let target = 0.9 * (1.0 - guard.hp_busy);
    assert!(
        guard.be_share >= target,
        "work-conserving: BE {:.0} % of alone, target {:.0} %",
        guard.be_share * 100.0,
        target * 100.0
    );
    assert!(
        guard.hp_p99_ratio <= 1.10,
        "protect: HP p99 ×{:.3} of alone",
        guard.hp_p99_ratio
    );
}

#[test]
fn guard_holds_a_flood_that_slows_the_service_as_hpf_does() {
    let native = cell(None, 132);
    assert!(
        native.hp_p99_ratio > 1.5,
        "the flood beside the service slows it (HP p99 ×{:.2} of alone)",
        native.hp_p99_ratio
    );
    let hpf = cell(Some("hpf"), 132);
    let guard = cell(Some("guard"), 132);
    assert!(
        guard.hp_p99_ratio <= hpf.hp_p99_ratio * 1.05,
        "HP p99 ×{:.3} of alone under guard, ×{:.3} under HPF",
        guard.hp_p99_ratio,
        hpf.hp_p99_ratio
    );
    assert!(
        guard.be_share >= hpf.be_share * 0.9,
        "BE {:.0} % of alone under guard, {:.0} % under HPF",
        guard.be_share * 100.0,
        hpf.be_share * 100.0
    );
}
