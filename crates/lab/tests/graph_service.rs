//! A service that replays one CUDA graph per request beside a GEMM flood, between time-sliced
//! contexts (separate processes, no MPS), in virtual time: the shape of the co-location
//! matrix's graph-replayed ResNet-50 on a GPU, where Baton's earlier defaults changed nothing.
//!
//! The service releases a request every 6.3 ms, each one command (the graph) of 1.4–1.6 ms on
//! every SM: the device is busy with it a quarter of the time and idle otherwise, and its queue
//! holds a command only while a request runs. The flood keeps four 1.5 ms GEMMs in flight. The
//! device gives each context 2 ms slices.
//! - **Natively** a request arriving while the flood runs waits for the rest of the flood's
//!   slice, and the two alternate slices until it ends: p99 about twice alone.
//! - **Held back** (the earlier default: the flood at Level 1, held whenever the service has a
//!   command): the hold comes after the graph reached the device, and what the flood already
//!   launched keeps its slices: as natively.
//! - **The default now**: every program under Baton controls its context's slice; the flood,
//!   outranked by a registered service, runs with a 100 µs slice and is never held back, and
//!   the service, outranking it, keeps the device for 10 ms once it has it. A request waits for
//!   at most the flood's short slice and a switch, and the flood keeps everything the service
//!   leaves.

mod support;

use baton_lab::{ClientSpec, ContextSpec};
use support::{Cell, graph_service, us};

fn gemm_flood() -> ClientSpec {
    ClientSpec {
        context: ContextSpec::Own,
        ..support::flood(us(1_500, 1_500), 132)
    }
}

/// Both as `baton run` sets them up with no flags (`by_default`), or held back at Level 1.
fn cell(policy: Option<&str>, by_default: bool) -> Cell {
    let (hp, be) = if by_default {
        (
            graph_service(ContextSpec::Own).as_by_default(),
            gemm_flood().as_by_default(),
        )
    } else {
        (graph_service(ContextSpec::Own), gemm_flood())
    };
    support::cell_with(policy, hp, be)
}

#[test]
fn a_graph_replayed_service_waits_for_the_floods_slices_natively_and_when_the_flood_is_held() {
    let native = cell(None, false);
    let held = cell(Some("hpf"), false);
    eprintln!("native {native:?}\nheld {held:?}");
    assert!(
        native.hp_p99_ratio > 1.3,
        "native: ×{:.2}",
        native.hp_p99_ratio
    );
    assert!(
        held.hp_p99_ratio > 1.3,
        "the failure shape: the hold trails the service's launch (×{:.2})",
        held.hp_p99_ratio
    );
}

#[test]
fn by_default_the_flood_yields_by_its_slice_and_the_service_keeps_the_device() {
    let default = cell(Some("hpf"), true);
    eprintln!("default {default:?}");
    support::keeps_the_promise(&default);
}
