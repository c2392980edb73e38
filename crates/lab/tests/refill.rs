//! A held-back job's work in flight bounded by device time, and where its sync points fall.
//!
//! Beside a graph-replayed service in one context (as under MPS), a training-like job of
//! ~110 µs kernels that runs far ahead of the GPU is held while the service has work and its
//! window bounded by `BATON_INFLIGHT_US`; its host looks at its queue 40 µs after a completion
//! (a thread woken from a sync point's wait, then launching). With one sync point behind the
//! window, the job learns of its kernels' completion only when the last is done, and the device
//! waits for the host once per window; with early refill (`BATON_EARLY_REFILL`) it learns of
//! the first half while the second runs. What the matrix measured on the GPU at smaller
//! budgets without early refill (docs/BENCHMARKS.md, "How the protection mechanisms were
//! chosen") is this cost.

mod support;

use baton_core::Nanos;
use baton_lab::ContextSpec;
use support::Cell;

fn cell(budget_us: u64, early_refill: bool) -> Cell {
    support::cell_with(
        Some("hpf"),
        support::graph_service(ContextSpec::Shared(0)),
        support::training().budgeted(Nanos::from_micros(budget_us), early_refill),
    )
}

#[test]
fn early_refill_gives_a_budgeted_job_back_what_its_drains_cost() {
    // (budget µs, the least the job gains): at 500 µs the window drains every ~4.5 kernels, at
    // 250 µs every ~2.3; at 100 µs one kernel is in flight either way.
    let mut drains = Vec::new();
    for (budget, gain) in [(500, 0.04), (250, 0.08), (100, 0.0)] {
        let (drain, early) = (cell(budget, false), cell(budget, true));
        eprintln!("{budget} µs: drain {drain:?}\n{budget} µs: early {early:?}");
        assert!(
            early.be_share >= drain.be_share + gain,
            "{budget} µs: the job {:.1} % with early refill against {:.1} % without",
            100.0 * early.be_share,
            100.0 * drain.be_share
        );
        // The hold bounds what is in flight when a request arrives either way.
        assert!(
            (early.hp_p99_ratio - drain.hp_p99_ratio).abs() < 0.01,
            "{budget} µs: the service ×{:.3} with early refill against ×{:.3} without",
            early.hp_p99_ratio,
            drain.hp_p99_ratio
        );
        drains.push(drain.be_share);
    }
    // Without early refill, a smaller budget costs the job, as on the GPU.
    assert!(
        drains[1] < drains[0] - 0.03,
        "the job at 500 and 250 µs: {drains:?}"
    );
}
