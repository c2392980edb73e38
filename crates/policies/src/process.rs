//! Process-level scheduling: all of a process's queues as one unit.

use std::collections::HashMap;

use crate::{Decision, Policy, QueuePlan, Snapshot};

/// **Process units** — wraps a policy so each process's queues run or stop together.
///
/// The wrapped policy decides per queue; then, per process, if any of its *ready* queues is
/// left running, every queue of the process runs; otherwise every queue of the process is
/// suspended. Streams of one process that wait on each other therefore never end up split
/// between running and suspended (XSched's circular waits under per-stream suspension), and a
/// scheduler across processes can think in processes. A process with no ready queue follows
/// the wrapped policy's choice for its idle queues.
///
/// Reads: whatever the wrapped policy reads. Select it as `process:NAME` in the registry.
pub struct ProcessUnits<P> {
    inner: P,
}

impl<P: Policy> ProcessUnits<P> {
    /// `inner`, applied to whole processes.
    pub fn new(inner: P) -> ProcessUnits<P> {
        ProcessUnits { inner }
    }
}

impl<P: Policy> Policy for ProcessUnits<P> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn decide(&mut self, snap: &Snapshot<'_>) -> Decision {
        let mut d = self.inner.decide(snap);
        let mut pids: Vec<u32> = snap.queues.iter().map(|q| q.pid).collect();
        pids.sort_unstable();
        pids.dedup();
        for pid in pids {
            let mine = || snap.queues.iter().filter(move |q| q.pid == pid);
            if !mine().any(|q| q.ready) {
                continue;
            }
            let runs = mine().any(|q| q.ready && !d.suspends(q.id));
            d.suspend.retain(|id| !mine().any(|q| q.id == *id));
            if !runs {
                d.suspend.extend(mine().map(|q| q.id));
            }
        }
        d.plans = unit_plans(snap, &d);
        d
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.inner.counters()
    }
}

/// The wrapped policy's plans (`inner`'s) for whole processes: a queue's transitions matter if
/// they matter for any queue of its process (they can decide whether the whole process runs),
/// and it may stop when the wrapped policy may stop some queue of its process; holds and
/// re-measuring as the wrapped policy says of the queue itself (were its commands measured
/// long, it, and so its whole process, could stop).
fn unit_plans(snap: &Snapshot<'_>, inner: &Decision) -> Vec<QueuePlan> {
    let mut per_pid: HashMap<u32, (bool, bool)> = HashMap::new();
    for (i, q) in snap.queues.iter().enumerate() {
        let p = inner.plan(i);
        let e = per_pid.entry(q.pid).or_default();
        e.0 |= p.report;
        e.1 |= p.may_suspend;
    }
    snap.queues
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let (report, may_suspend) = per_pid.get(&q.pid).copied().unwrap_or_default();
            QueuePlan {
                report,
                may_suspend,
                ..inner.plan(i)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use baton_core::{Nanos, Priority, XQueueId};

    use super::*;
    use crate::{Hpf, QueueView};

    #[test]
    fn a_process_runs_or_stops_as_a_whole() {
        let mut a1 = QueueView::new(1, 10, 0, true);
        a1.hints.priority = Priority::new(5).unwrap();
        let a2 = QueueView::new(2, 10, 0, true);
        let b = QueueView::new(3, 20, 0, true);
        let mut p = ProcessUnits::new(Hpf);
        let mut d = p.decide(&Snapshot::new(Nanos::ZERO, &[a1, a2, b])).suspend;
        d.sort_unstable();
        // HPF alone would suspend q2 and q3; as units, process 10 runs whole.
        assert_eq!(d, vec![XQueueId(3)]);
    }
}
