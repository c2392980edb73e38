//! One scheduling decision of the `LocalScheduler` (the daemon's core runs the same code):
//! 100 processes × 4 queues on one device, priorities 0–3, policies HPF (the default) and guard
//! as the registry builds them;
//! each iteration is one queue turning ready or idle, which re-decides over all 400 queues and
//! re-evaluates what each queue must report and whether it may skip its window. HPF again with
//! every process yielding by its time slice and every queue below the probe's priority ready
//! (the most work HPF's turns between yielding processes can find).
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
        decide_with(c, policy, false);
    }
    decide_with(c, "hpf", true);
}

fn decide_with(c: &mut Criterion, policy: &str, yielding: bool) {
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
            let mut hints = QueueHints::with_priority(Priority::new(p).unwrap());
            if yielding {
                hints.yielding = Some(Nanos::from_micros(100));
            }
            s.register(
                Arc::new(q),
                QueueMeta {
                    pid: 1000 + pid,
                    device: DeviceId(0),
                    hints,
                },
                Nanos(0),
            );
        }
    }
    if yielding {
        for (_, &id) in ids.iter().enumerate().filter(|(i, _)| i % 4 != 3) {
            s.on_event(
                QueueEvent {
                    queue: id,
                    state: QueueState::Ready,
                    at: Nanos(0),
                    transition: 1,
                },
                Nanos(0),
            );
        }
    }
    // The probe: a priority-3 queue flipping between ready and idle.
    let probe = ids[ids.len() - 1];
    let mut n = 0u64;
    let name = if yielding {
        format!("{policy}: decision over 400 yielding queues, 300 ready (one queue changes state)")
    } else {
        format!("{policy}: decision over 400 queues (one queue changes state)")
    };
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
