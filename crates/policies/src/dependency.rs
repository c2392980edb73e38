//! Dependencies between queues, and the priority inheritance that keeps them from becoming
//! circular waits.
//!
//! A queue that waits on an event recorded on another queue (a CUDA `cuStreamWaitEvent`, or
//! one stream of a process waiting on another of its streams) cannot progress until that
//! queue has launched, or completed, the recording command. If a policy suspends the
//! waited-on queue while the waiter runs, the waiter holds the device doing nothing, and the
//! policy — seeing the waiter ready — may never resume the other: a circular wait.
//!
//! [`inherit`] fixes any decision after the fact: a queue that some running queue waits on is
//! run too, transitively (it *inherits* the waiter's right to run) until the dependency is
//! satisfied. The scheduler applies it to every policy's decision, so no policy can produce a
//! circular wait, and a policy needs no code for it.

use baton_core::XQueueId;

use crate::{Decision, Dependency, QueueView};

/// Removes from `decision` every suspension of a queue that a running queue waits on, directly
/// or through other waited-on queues; returns the queues so resumed.
///
/// A queue counts as running when it is not in `decision.suspend`. Dependencies naming queues
/// that are not in `queues` are ignored.
pub fn inherit(
    decision: &mut Decision,
    queues: &[QueueView],
    deps: &[Dependency],
) -> Vec<XQueueId> {
    let mut inherited = Vec::new();
    if deps.is_empty() || decision.suspend.is_empty() {
        return inherited;
    }
    let known = |q: XQueueId| queues.iter().any(|v| v.id == q);
    loop {
        let mut changed = false;
        for d in deps {
            if !known(d.waiter) || !known(d.on) {
                continue;
            }
            if !decision.suspends(d.waiter) && decision.suspends(d.on) {
                decision.suspend.retain(|q| *q != d.on);
                inherited.push(d.on);
                changed = true;
            }
        }
        if !changed {
            return inherited;
        }
    }
}

#[cfg(test)]
mod tests {
    use baton_core::CommandSeq;
    use proptest::prelude::*;

    use super::*;
    use crate::Until;

    fn dep(w: u64, on: u64) -> Dependency {
        Dependency {
            waiter: XQueueId(w),
            on: XQueueId(on),
            until: Until::Completed(CommandSeq(0)),
        }
    }

    #[test]
    fn waited_on_queues_run_transitively_and_others_stay_suspended() {
        let qs: Vec<QueueView> = (1..=5).map(|i| QueueView::new(i, 1, 0, true)).collect();
        let mut d = Decision {
            suspend: vec![XQueueId(2), XQueueId(3), XQueueId(4), XQueueId(5)],
            wake_at: None,
            plans: Vec::new(),
        };
        // 1 runs and waits on 2, which waits on 3; 5 waits on 4 but 5 is suspended itself.
        let deps = [dep(1, 2), dep(2, 3), dep(5, 4), dep(9, 4)];
        let mut got = inherit(&mut d, &qs, &deps);
        got.sort_unstable();
        assert_eq!(got, vec![XQueueId(2), XQueueId(3)]);
        assert_eq!(d.suspend, vec![XQueueId(4), XQueueId(5)]);
    }

    #[test]
    fn satisfaction_follows_launch_and_completion_counts() {
        let l = Dependency {
            until: Until::Launched(CommandSeq(4)),
            ..dep(1, 2)
        };
        assert!(!l.satisfied_by(4, 0) && l.satisfied_by(5, 0));
        let c = dep(1, 2);
        assert!(!c.satisfied_by(9, 0) && c.satisfied_by(9, 1));
    }

    proptest! {
        /// After inheritance no running queue waits on a suspended one, and only waited-on
        /// queues were resumed.
        #[test]
        fn no_running_queue_waits_on_a_suspended_one(
            suspended in proptest::collection::vec(any::<bool>(), 1..12),
            edges in proptest::collection::vec((0u64..12, 0u64..12), 0..30),
        ) {
            let n = suspended.len() as u64;
            let qs: Vec<QueueView> = (0..n).map(|i| QueueView::new(i, 1, 0, true)).collect();
            let mut d = Decision {
                suspend: (0..n).filter(|i| suspended[usize::try_from(*i).unwrap()]).map(XQueueId).collect(),
                wake_at: None,
                plans: Vec::new(),
            };
            let deps: Vec<Dependency> = edges.iter().map(|(w, o)| dep(*w % n, *o % n)).collect();
            let before = d.suspend.clone();
            let resumed = inherit(&mut d, &qs, &deps);
            for e in &deps {
                prop_assert!(d.suspends(e.waiter) || !d.suspends(e.on));
            }
            for r in &resumed {
                prop_assert!(before.contains(r));
                prop_assert!(deps.iter().any(|e| e.on == *r && !d.suspends(e.waiter)));
            }
        }
    }
}
