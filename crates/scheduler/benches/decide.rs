//! One scheduling decision of the `LocalScheduler` (the daemon's core runs the same code):
//! 100 processes × 4 queues on one device, priorities 0–3, policies HPF and guard (the default)
//! as the registry builds them;
//! each iteration is one queue turning ready or idle, which re-decides over all 400 queues and
//! re-evaluates what each queue must report and whether it may skip its window.
//!
//!   cargo bench -p baton-scheduler --bench decide
use std::hint::black_box;
use std::sync::Arc;

use baton_core::testing::ScriptedHwQueue;
use baton_core::{Drive, Level, Nanos, Priority, QueueEvent, QueueState, XQueue};
use baton_policies::{DeviceId, QueueHints};
use baton_scheduler::{LocalScheduler, QueueMeta, StaticProcessInfo};
use criterion::{Criterion, criterion_group, criterion_main};

fn decide(c: &mut Criterion) {
    for policy in ["hpf", "guard"] {
        decide_with(c, policy);
    }
}

fn decide_with(c: &mut Criterion, policy: &str) {
    let mut s = LocalScheduler::new(baton_policies::by_name(policy).unwrap());
    s.set_process_info_source(Box::new(StaticProcessInfo::default()));
    let mut ids = Vec::new();
    for pid in 0..100u32 {
        for p in 0..4i64 {
            let q = XQueue::builder(ScriptedHwQueue::new(Level::L1))
                .drive(Drive::External)
                .build()
                .unwrap();
            ids.push(q.id());
            s.register(
                Arc::new(q),
                QueueMeta {
                    pid: 1000 + pid,
                    device: DeviceId(0),
                    hints: QueueHints::with_priority(Priority::new(p).unwrap()),
                },
                Nanos(0),
            );
        }
    }
    // The probe: a priority-3 queue flipping between ready and idle.
    let probe = ids[ids.len() - 1];
    let mut n = 0u64;
    let name = format!("{policy}: decision over 400 queues (one queue changes state)");
    c.bench_function(&name, |b| {
        b.iter(|| {
            n += 1;
            let state = if n % 2 == 1 {
                QueueState::Ready
            } else {
                QueueState::Idle
            };
            s.on_event(
                QueueEvent {
                    queue: probe,
                    state,
                    at: Nanos(n * 1000),
                    transition: n,
                },
                Nanos(n * 1000),
            );
            black_box(&s);
        });
    });
}

criterion_group!(benches, decide);
criterion_main!(benches);
