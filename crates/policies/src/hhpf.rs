//! Highest priority first, one order across every device.

use crate::hpf::{Scope, rank_first};
use crate::{Decision, Policy, Snapshot};

/// **HHPF** — highest priority first across all devices (XSched's heterogeneous HPF).
///
/// The highest priority among *ready* queues on any device is found, and every queue on every
/// device with a lower priority is suspended. On a system whose devices share memory bandwidth
/// or power (an SoC's GPU and NPU, GPUs behind one host link), a high-priority task on one
/// device so also stops low-priority work on the others. Queues sharing the top priority run
/// together wherever they are; when nothing is ready, everything runs.
///
/// Reads: [`Hint::Priority`](crate::Hint::Priority) (−100..=100, default 0).
/// Work-conserving across the machine (some ready queue always runs), *not* per device: a
/// device holding only lower-priority work idles while a higher priority is ready elsewhere.
#[derive(Clone, Copy, Debug, Default)]
pub struct Hhpf;

impl Policy for Hhpf {
    fn name(&self) -> &'static str {
        "hhpf"
    }

    fn decide(&mut self, snap: &Snapshot<'_>) -> Decision {
        rank_first(snap, Scope::Global, |q| q.hints.priority)
    }
}

#[cfg(test)]
mod tests {
    use baton_core::{Nanos, Priority, XQueueId};

    use super::*;
    use crate::QueueView;

    #[test]
    fn a_ready_high_priority_anywhere_stops_lower_work_everywhere() {
        let mut hp = QueueView::new(1, 1, 0, true);
        hp.hints.priority = Priority::new(9).unwrap();
        let be0 = QueueView::new(2, 2, 0, true);
        let be1 = QueueView::new(3, 2, 1, true);
        let d = Hhpf.decide(&Snapshot::new(Nanos::ZERO, &[hp, be0, be1]));
        assert_eq!(d.suspend, vec![XQueueId(2), XQueueId(3)]);
        let idle_hp = QueueView { ready: false, ..hp };
        let d = Hhpf.decide(&Snapshot::new(Nanos::ZERO, &[idle_hp, be0, be1]));
        assert!(d.suspend.is_empty());
    }
}
