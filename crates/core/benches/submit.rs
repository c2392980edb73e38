//! Cost of `XQueue::submit` on the fast path (the buffer is empty and the in-flight window has
//! room, so the caller's thread launches), on hardware queues that do nothing. Target: ≤ 100 ns
//! median per command.
//!
//! - `no_worker`: no launch worker thread ([`Drive::External`]); the XQueue's own work: lock,
//!   counters, launch, a sync point every `batch` commands.
//! - `worker_burst`: a launch worker follows the in-flight tail on a device that lags 50 µs,
//!   so the queue stays Ready through the burst, as it does while real work runs.
//! - `worker_idle_each_time`: the device completes everything at once and the worker notices,
//!   so every submit turns the queue from Idle to Ready, reports it and wakes the worker: the
//!   worst case, a latency-bound application that waits for each command.

use std::hint::black_box;
use std::time::Duration;

use baton_core::testing::{LaggingHwQueue, NoopHwQueue, TestCommand};
use baton_core::{Drive, LaunchConfig, XQueue};
use criterion::{Criterion, criterion_group, criterion_main};

fn submit(c: &mut Criterion) {
    let mut g = c.benchmark_group("submit");
    let mut i = 0u64;

    let q = XQueue::builder(NoopHwQueue)
        .drive(Drive::External)
        .config(LaunchConfig::default())
        .build()
        .unwrap();
    g.bench_function("no_worker", |b| {
        b.iter(|| {
            i += 1;
            black_box(q.submit(TestCommand(i)).unwrap())
        })
    });
    drop(q);

    let q = XQueue::builder(LaggingHwQueue {
        wait: Duration::from_micros(50),
    })
    .config(LaunchConfig::default())
    .build()
    .unwrap();
    g.bench_function("worker_burst", |b| {
        b.iter(|| {
            i += 1;
            black_box(q.submit(TestCommand(i)).unwrap())
        })
    });
    drop(q);

    let q = XQueue::builder(NoopHwQueue)
        .config(LaunchConfig::default())
        .build()
        .unwrap();
    g.bench_function("worker_idle_each_time", |b| {
        b.iter(|| {
            i += 1;
            black_box(q.submit(TestCommand(i)).unwrap())
        })
    });
    g.finish();
}

criterion_group!(benches, submit);
criterion_main!(benches);
