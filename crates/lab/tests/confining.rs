//! Confining best-effort kernels while outranked, in virtual time: what `baton run --yield`
//! does under MPS, against holding back (HPF) and against confining for good (`--sms`).
//!
//! The service is the launch-bound one of the isolation tests (60 kernels of 10–30 µs on 24
//! SMs launched 80 µs apart, then 1 ms of think time); the flood keeps four kernels on every
//! SM in flight; both share one context, as under MPS, at Level 1.
//! - **Held back** (HPF): long kernels already launched keep the service waiting, short ones
//!   are starved (the two failure shapes, `isolation.rs`).
//! - **Confined while outranked** to 108 of 132 SMs: the service's kernels always find free
//!   SMs, nothing is held back, so the service keeps its standalone latency and the flood
//!   gets what the service leaves; and alone the flood has the whole device (confined for
//!   good, `--sms 108`, its kernels would keep to 108 SMs alone too).
//! - Its own process's more urgent stream still holds it back: the claim spares it from
//!   other processes' holds only.
//! - Where it does not help: a service whose own kernels need every SM is slowed by a
//!   confined flood at least as much as by a held one.

mod support;

use baton_lab::{ClientSpec, ContextSpec, SpanRange};
use support::{Cell, us};

const SMS: u32 = 108;

/// The flood: `kernel`-long kernels on every SM.
fn flood(kernel: SpanRange) -> ClientSpec {
    support::flood(kernel, 132)
}

fn long() -> SpanRange {
    us(1500, 3000)
}

fn short() -> SpanRange {
    us(300, 500)
}

fn cell(be: ClientSpec) -> Cell {
    support::cell(Some("hpf"), be)
}

#[test]
fn a_flood_of_long_kernels_confined_while_outranked_keeps_the_promise_where_holding_fails() {
    let held = cell(flood(long()));
    let confining = cell(flood(long()).confining(SMS));
    eprintln!("held {held:?}\nconfining {confining:?}");
    assert!(
        held.hp_p99_ratio > 1.10,
        "the failure shape: holding back cannot stop launched kernels (HP p99 ×{:.2})",
        held.hp_p99_ratio
    );
    support::keeps_the_promise(&confining);
}

#[test]
fn a_flood_of_shorter_kernels_confined_while_outranked_is_not_starved() {
    let held = cell(flood(short()));
    let confining = cell(flood(short()).confining(SMS));
    eprintln!("held {held:?}\nconfining {confining:?}");
    support::starved_when_held(&held);
    support::keeps_the_promise(&confining);
}

#[test]
fn alone_a_confining_flood_has_the_whole_device() {
    let alone = |be: ClientSpec| support::lab(Some("hpf"), vec![be]).client("be").work.0 as f64;
    let whole = alone(flood(long()));
    let confining = alone(flood(long()).confining(SMS));
    eprintln!("alone: whole {whole}, confining {confining}");
    assert!(
        confining >= 0.99 * whole,
        "alone, nothing outranks it: {:.1} % of the whole device's work",
        100.0 * confining / whole
    );
}

#[test]
fn a_confining_flood_is_still_held_back_by_its_own_more_urgent_stream() {
    // The claim spares it from other processes' holds only: the service's stream in the
    // flood's own process (one program, two streams) still holds it back.
    let mut hp = support::service();
    hp.pid = 2;
    let held = support::cell_with(Some("hpf"), hp.clone(), flood(short()));
    let confining = support::cell_with(Some("hpf"), hp, flood(short()).confining(SMS));
    eprintln!("held {held:?}\nconfining {confining:?}");
    support::starved_when_held(&held);
    support::starved_when_held(&confining);
}

/// The limit: a service whose kernels need every SM (ResNet-50 inference's, rather than a
/// decoder's) beside a flood of long kernels. Holding the flood back leaves its launched
/// kernels in the service's way; confining it leaves the service the other 24 SMs; neither
/// keeps the service within ×1.10 (natively it is ×30), and confining is the worse of the two
/// for the service, as on the GPU (ResNet-50 beside the GEMM flood under MPS, the flood held
/// or confined: docs/BENCHMARKS.md, "Earlier runs").
#[test]
fn a_service_of_kernels_on_every_sm_is_not_protected_by_either() {
    let mut hp = support::service();
    hp.workload = baton_lab::Workload::Paced {
        kernels: 60,
        kernel: us(20, 60),
        sms: 132,
        gap: baton_core::Nanos::from_micros(80),
        think: baton_core::Nanos::from_millis(1),
    };
    let held = support::cell_with(Some("hpf"), hp.clone(), flood(long()));
    let confining = support::cell_with(Some("hpf"), hp, flood(long()).confining(SMS));
    eprintln!("held {held:?}\nconfining {confining:?}");
    assert!(held.hp_p99_ratio > 1.10, "held: ×{:.2}", held.hp_p99_ratio);
    assert!(
        confining.hp_p99_ratio >= held.hp_p99_ratio,
        "confining ×{:.2} against held ×{:.2}",
        confining.hp_p99_ratio,
        held.hp_p99_ratio
    );
}

/// Held, and kept to part of the SMs while outranked (`BATON_YIELD_SMS` without `--yield`):
/// a graph-replayed service (one kernel on every SM a request, a quarter of the device's time)
/// beside a flood of 1.5 ms kernels held with one in flight (what the in-flight budget lets
/// through), in one context as under MPS. A request that arrives while a flood kernel runs
/// waits for it either way; kept to three quarters of the SMs, the flood leaves the request
/// the rest meanwhile, and is slower for it. The shape the matrix measured on the GPU under
/// MPS beside the flood (docs/BENCHMARKS.md, "How the protection mechanisms were chosen").
#[test]
fn a_held_flood_kept_to_part_of_the_sms_shortens_a_graph_services_wait_and_pays_for_it() {
    let hp = support::graph_service(ContextSpec::Shared(0));
    let one_in_flight = ClientSpec {
        launch: baton_core::LaunchConfig::new(1, 1).unwrap(),
        ..flood(us(1_500, 1_500))
    };
    let held = support::cell_with(Some("hpf"), hp.clone(), one_in_flight.clone());
    let kept = support::cell_with(Some("hpf"), hp, one_in_flight.confined_and_held(99));
    eprintln!("held {held:?}\nheld and kept to 99 SMs {kept:?}");
    assert!(
        held.hp_p99_ratio > 1.25,
        "the limit: a started kernel is not preempted (held ×{:.2})",
        held.hp_p99_ratio
    );
    assert!(
        kept.hp_p99_ratio < held.hp_p99_ratio - 0.05,
        "kept to part of the SMs ×{:.2} against held ×{:.2}",
        kept.hp_p99_ratio,
        held.hp_p99_ratio
    );
    assert!(
        kept.be_share < held.be_share,
        "the flood pays for it: {:.0} % against {:.0} % of alone",
        100.0 * kept.be_share,
        100.0 * held.be_share
    );
}
