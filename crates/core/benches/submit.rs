//! Cost of `XQueue::submit` on the fast path, measured on a hardware queue that does nothing.
//! Target: ≤ 100 ns median per command.

use std::hint::black_box;

use baton_core::testing::{NoopHwQueue, TestCommand};
use baton_core::{Drive, LaunchConfig, XQueue};
use criterion::{Criterion, criterion_group, criterion_main};

fn submit(c: &mut Criterion) {
    let mut g = c.benchmark_group("submit");
    for (name, drive) in [("worker", Drive::Worker), ("external", Drive::External)] {
        let q = XQueue::builder(NoopHwQueue)
            .drive(drive)
            .config(LaunchConfig::default())
            .build()
            .unwrap();
        let mut i = 0u64;
        g.bench_function(format!("fast_path_{name}"), |b| {
            b.iter(|| {
                i += 1;
                black_box(q.submit(TestCommand(i)).unwrap())
            })
        });
    }
    g.finish();
}

criterion_group!(benches, submit);
criterion_main!(benches);
