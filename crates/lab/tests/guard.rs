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

mod support;

use support::{Cell, us};

/// The flood of 200–400 µs kernels on `sms` SMs.
fn flood(sms: u32) -> baton_lab::ClientSpec {
    support::flood(us(200, 400), sms)
}

/// A cell under `policy` (natively with `None`) with the flood on `be_sms` SMs.
fn cell(policy: Option<&str>, be_sms: u32) -> Cell {
    let c = support::cell(policy, flood(be_sms));
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
    support::keeps_the_promise(&cell(Some("guard"), 100));
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
