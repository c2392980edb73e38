//! Isolation in virtual time: the two failure shapes of "hold lower work whenever the service
//! has a command queued", and what keeping SMs free for the service does instead.
//!
//! The service is launch-bound, as an LLM decoder is: a job is 60 kernels of 10–30 µs on 24
//! SMs, launched 80 µs apart by the host, then 1 ms of think time; its queue has work for most
//! of every job while the device is mostly idle. The flood keeps four kernels in flight. Both
//! processes share one context, as under MPS, at Level 1.
//! - **Long kernels on every SM** (1.5–3 ms, a large GEMM's length): holding the flood back
//!   (HPF) cannot stop the kernels it already launched, so the service stays slow.
//! - **Short kernels** (200–400 µs) on 108 SMs: HPF holds the flood back whenever the service
//!   has work, and starves it for a service that leaves the device mostly idle.
//! - **On 108 of 132 SMs and isolated** (`--sms 108` under MPS: `Hint::Isolated`), in both
//!   cases: the service's kernels always find free SMs and nothing is held back, so the service
//!   keeps its standalone latency and the flood gets what the service leaves.

mod support;

use baton_lab::{ClientSpec, SpanRange};
use baton_policies::Hint;
use support::{Cell, us};

/// The flood: `kernel`-long kernels on `sms` SMs, isolated or not.
fn flood(kernel: SpanRange, sms: u32, isolated: bool) -> ClientSpec {
    let c = support::flood(kernel, sms);
    if isolated {
        c.hint(Hint::Isolated(sms))
    } else {
        c
    }
}

fn long() -> SpanRange {
    us(1500, 3000)
}

fn short() -> SpanRange {
    us(200, 400)
}

/// A cell natively (`scheduled` false) or under HPF.
fn cell(scheduled: bool, be: ClientSpec) -> Cell {
    support::cell(scheduled.then_some("hpf"), be)
}

#[test]
fn holding_back_long_kernels_on_every_sm_does_not_protect_the_service_and_isolation_does() {
    let native = cell(false, flood(long(), 132, false));
    let hpf = cell(true, flood(long(), 132, false));
    let isolated = cell(true, flood(long(), 108, true));
    eprintln!("native {native:?}\nhpf {hpf:?}\nisolated {isolated:?}");
    assert!(
        native.hp_p99_ratio > 1.5,
        "the flood slows the service natively (×{:.2})",
        native.hp_p99_ratio
    );
    assert!(
        hpf.hp_p99_ratio > 1.10,
        "the failure shape: HPF cannot stop launched kernels (HP p99 ×{:.2} of alone)",
        hpf.hp_p99_ratio
    );
    support::keeps_the_promise(&isolated);
}

#[test]
fn holding_back_short_kernels_starves_them_and_isolation_does_not() {
    let held = cell(true, flood(short(), 108, false));
    let isolated = cell(true, flood(short(), 108, true));
    eprintln!("held {held:?}\nisolated {isolated:?}");
    support::starved_when_held(&held);
    support::keeps_the_promise(&isolated);
}
