//! Yielding by time slice in virtual time: between processes that the device time-slices (each
//! its own context, no MPS), the two failure shapes of "hold lower work whenever the service has
//! a command queued", and what shortening the lower context's slice does instead.
//!
//! The service is a launch-bound decoder step: 200 kernels of 5–15 µs launched 80 µs apart by
//! the host (16 ms), then 1 ms of think time; its queue has work for the whole step while the
//! device is busy with it an eighth of the time. The flood keeps four kernels in flight. The
//! device gives each context 2 ms slices and a switch costs 25 µs.
//! - **Long kernels** (1.5–3 ms) and **short kernels** (200–400 µs): HPF holds the flood back
//!   whenever the service has work, and starves it beside a service that leaves the device
//!   mostly idle (long kernels: about half of alone; short ones: a tenth).
//! - **Yielding** (`Hint::Yielding`, the flood's context slice 500 µs while the service
//!   outranks it, never held back; `baton run` does this by default with a 100 µs slice), in
//!   both cases: the service waits at most one short slice and a switch for the device, and
//!   the flood keeps the gaps.
//! - **Only saying it is time-sliced** (`Hint::TimeSliced` through the hint API, the driver's
//!   slices): held back as any other flood. HPF once left such a flood to the slices beside a
//!   launch-bound service; yielding, the one way a time-sliced program gives way, does that
//!   and more, so the exemption is gone.

mod support;

use baton_core::{Level, Nanos};
use baton_lab::{ClientSpec, ContextSpec, SpanRange, Workload};
use support::{Cell, us};

/// The flood's slice while outranked: long against the two switches each hand-over costs.
const YIELD_SLICE: Nanos = Nanos::from_micros(500);

fn decoder() -> ClientSpec {
    ClientSpec {
        context: ContextSpec::Own,
        workload: Workload::Paced {
            kernels: 200,
            kernel: us(5, 15),
            sms: 24,
            gap: Nanos::from_micros(80),
            think: Nanos::from_millis(1),
        },
        level: Some(Level::L1),
        ..support::service()
    }
}

fn flood(kernel: SpanRange, yields: bool) -> ClientSpec {
    let c = ClientSpec {
        context: ContextSpec::Own,
        ..support::flood(kernel, 132)
    };
    if yields { c.yielding(YIELD_SLICE) } else { c }
}

fn long() -> SpanRange {
    us(1500, 3000)
}

fn short() -> SpanRange {
    us(200, 400)
}

fn cell(scheduled: bool, be: ClientSpec) -> Cell {
    support::cell_with(scheduled.then_some("hpf"), decoder(), be)
}

#[test]
fn holding_back_long_kernels_halves_them_beside_a_decoder_and_yielding_does_not() {
    let native = cell(false, flood(long(), false));
    let held = cell(true, flood(long(), false));
    let yielding = cell(true, flood(long(), true));
    eprintln!("native {native:?}\nheld {held:?}\nyielding {yielding:?}");
    assert!(
        held.be_share < 0.6,
        "the failure shape: the flood is held back for the decoder's whole step ({:.0} % of \
         alone)",
        held.be_share * 100.0
    );
    support::keeps_the_promise(&yielding);
}

#[test]
fn holding_back_short_kernels_starves_them_and_yielding_does_not() {
    let held = cell(true, flood(short(), false));
    let yielding = cell(true, flood(short(), true));
    eprintln!("held {held:?}\nyielding {yielding:?}");
    support::starved_when_held(&held);
    support::keeps_the_promise(&yielding);
}

#[test]
fn a_hand_over_costs_the_flood_two_switches_so_a_shorter_slice_gives_it_less() {
    // The measured limit behind the slice's length (docs/BENCHMARKS.md, "Earlier runs"):
    // each time the decoder's next kernel takes the device, the flood loses the switch away
    // and the switch back, so its share while the decoder runs is at most
    // slice ÷ (slice + two switches).
    let share = |slice_us: u64| {
        let be = ClientSpec {
            context: ContextSpec::Own,
            ..support::flood(short(), 132)
        }
        .yielding(Nanos::from_micros(slice_us));
        cell(true, be).be_share
    };
    let (short_slice, long_slice) = (share(100), share(500));
    eprintln!("100 µs: {short_slice:.3}, 500 µs: {long_slice:.3}");
    assert!(short_slice + 0.1 < long_slice);
    // 25 µs per switch: at most 100 / 150 of the decoder's steps, plus its think time.
    assert!(short_slice < 0.75, "{short_slice}");
}

/// The flood with the hint API's `Hint::TimeSliced` and nothing else: its context
/// time-sliced against the service's, neither yielding nor asking to be held.
fn time_sliced(kernel: SpanRange) -> ClientSpec {
    flood(kernel, false).hint(baton_policies::Hint::TimeSliced)
}

#[test]
fn a_flood_that_only_says_it_is_time_sliced_is_held_as_any_other_and_yielding_keeps_the_promise() {
    // Beside the launch-bound decoder, which tells its readiness twice a second.
    let held = cell(true, flood(long(), false));
    let sliced = cell(true, time_sliced(long()));
    let yielding = cell(true, flood(long(), true));
    eprintln!("held {held:?}\ntime-sliced {sliced:?}\nyielding {yielding:?}");
    assert_eq!(
        (sliced.hp_p99_ratio, sliced.be_share),
        (held.hp_p99_ratio, held.be_share),
        "the hint changes nothing"
    );
    support::keeps_the_promise(&yielding);
}
