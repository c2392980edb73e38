//! Measured command times in virtual time: the failure shape of "hold lower work whenever the
//! service has a command queued" beside a launch-bound service, what HPF does once it knows
//! how long the lower work's commands take, and where a fixed bound on "short" stops holding.
//!
//! The service is the launch-bound one of the isolation tests (jobs of 60 kernels of 10–30 µs
//! on 24 SMs launched 80 µs apart, then 1 ms of think time), sharing one context with the
//! flood, as under MPS, at Level 1. The flood runs ahead of the device as a training loop's
//! host does: 64 kernels submitted at a time on every SM, more than its launch window, so its
//! queue is busy with commands waiting behind the window, which is when a queue is measured.
//! Short commands are an operator's choice (`baton daemon --short-command-us`; by default
//! none is short: [`SHORT_COMMAND`](baton_policies::SHORT_COMMAND)); these runs use a bound of
//! 250 µs.
//! - **Short kernels** (20–100 µs, a training step's): held back whenever the service has
//!   work, the flood starves. Measured short (`Hint::CommandTime` under the bound), it is
//!   neither held back nor kept in a launch window: each of
//!   the service's kernels waits for at most one of them, within the host's 80 µs before its
//!   next launch, and the flood gets what the service leaves.
//! - **Long kernels** (1.5–3 ms, a large GEMM's): measured long, the flood is held back exactly
//!   as when nothing is measured.
//! - **Kernels longer than the service's gaps** (100–200 µs) are still under the bound: not
//!   held back, they make every kernel of the service wait past its host's next launch, and
//!   the waits add up (×2 in this model). A bound under the gap
//!   (`GlobalHint::ShortCommand`, `baton daemon --short-command-us 80`) holds them back again.
//!   The bound is fixed because a service's gaps are not measured; on the GPU, beside a
//!   training step's short commands, the decoder's p99 stayed near native co-location's
//!   (docs/BENCHMARKS.md, "Earlier runs").

mod support;

use baton_core::Nanos;
use baton_lab::{ClientSpec, SpanRange, Workload};
use baton_policies::GlobalHint;
use support::{Cell, us};

fn flood(kernel: SpanRange, measures: bool) -> ClientSpec {
    let mut c = support::flood(kernel, 132);
    c.workload = Workload::Flood {
        depth: 64,
        kernel,
        sms: 132,
    };
    ClientSpec { measures, ..c }
}

/// Under HPF with the operator's short-command bound of 250 µs (`baton daemon
/// --short-command-us 250`; none is short by default).
fn hpf(be: ClientSpec) -> Cell {
    support::cell_global(Some("hpf"), bound(250), support::service(), be)
}

fn bound(us: u64) -> Vec<GlobalHint> {
    vec![GlobalHint::short_command(Nanos::from_micros(us)).unwrap()]
}

#[test]
fn a_flood_of_short_commands_starves_when_held_and_is_not_held_once_measured() {
    let held = hpf(flood(us(20, 100), false));
    let measured = hpf(flood(us(20, 100), true));
    eprintln!("held {held:?}\nmeasured {measured:?}");
    support::starved_when_held(&held);
    support::keeps_the_promise(&measured);
}

#[test]
fn a_flood_of_long_commands_is_held_back_as_before_once_measured() {
    let unmeasured = hpf(flood(us(1500, 3000), false));
    let measured = hpf(flood(us(1500, 3000), true));
    eprintln!("unmeasured {unmeasured:?}\nmeasured {measured:?}");
    assert!(
        (measured.be_share - unmeasured.be_share).abs() < 0.01
            && (measured.hp_p99_ratio - unmeasured.hp_p99_ratio).abs() < 0.01,
        "measured long, the flood is treated as before"
    );
}

#[test]
fn commands_longer_than_the_services_gaps_slow_it_unless_the_bound_is_lowered() {
    let spared = hpf(flood(us(100, 200), true));
    let lowered = support::cell_global(
        Some("hpf"),
        bound(80),
        support::service(),
        flood(us(100, 200), true),
    );
    eprintln!("spared {spared:?}\nlowered bound {lowered:?}");
    assert!(
        spared.hp_p99_ratio > 1.5,
        "the limit: commands longer than the service's gaps slow it (×{:.2})",
        spared.hp_p99_ratio
    );
    assert!(
        lowered.hp_p99_ratio <= 1.10,
        "under a bound below the gaps the flood is held back again (×{:.2})",
        lowered.hp_p99_ratio
    );
}
