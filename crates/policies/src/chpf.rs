//! Highest priority first, priority taken from the OS scheduler.

use crate::hpf::{Scope, rank_first};
use crate::{Decision, Policy, Snapshot};

/// **CHPF** — highest priority first, with each queue's priority taken from its process's OS
/// scheduling priority (XSched's CFS-coupled HPF).
///
/// A queue's rank is the negated niceness of its process (nice −20 ranks highest, 19 lowest),
/// so `nice`/`renice` steer the GPU as they steer the CPU, with no Baton hint. Per device, the
/// queues of the least-nice process with ready work run; every queue of a nicer process is
/// suspended. Equal niceness runs together. Processes the scheduler knows nothing of count as
/// nice 0. The agent reads niceness (from `/proc/PID/stat`); the policy only sees the number.
///
/// Reads: [`ProcessView::nice`](crate::ProcessView::nice) (−20..=19); no hint.
/// Work-conserving per device.
#[derive(Clone, Copy, Debug, Default)]
pub struct Chpf;

impl Policy for Chpf {
    fn name(&self) -> &'static str {
        "chpf"
    }

    fn decide(&mut self, snap: &Snapshot<'_>) -> Decision {
        rank_first(snap, Scope::PerDevice, |q| {
            -snap.process(q.pid).map_or(0, |p| p.nice)
        })
    }
}

#[cfg(test)]
mod tests {
    use baton_core::{Nanos, XQueueId};

    use super::*;
    use crate::{ProcessView, QueueView};

    #[test]
    fn the_least_nice_process_runs_first() {
        let qs = [
            QueueView::new(1, 100, 0, true),
            QueueView::new(2, 200, 0, true),
            QueueView::new(3, 300, 0, true),
        ];
        let procs = [
            ProcessView {
                pid: 100,
                nice: 5,
                ..ProcessView::default()
            },
            ProcessView {
                pid: 200,
                nice: -5,
                ..ProcessView::default()
            },
        ];
        let snap = Snapshot {
            processes: &procs,
            ..Snapshot::new(Nanos::ZERO, &qs)
        };
        let mut d = Chpf.decide(&snap).suspend;
        d.sort_unstable();
        assert_eq!(d, vec![XQueueId(1), XQueueId(3)]);
    }
}
