//! Laxity: priority switches to critical when a job's laxity expires.

use baton_core::Priority;

use crate::hpf::{Scope, rank_first};
use crate::kedf::MissCounter;
use crate::{Decision, Policy, QueueView, Snapshot};

/// **LAX** — priorities that turn critical when a job's laxity runs out (XSched's laxity
/// policy).
///
/// A queue with a [`Hint::Laxity`](crate::Hint::Laxity) `(L, critical)` releases a job each
/// time it turns ready, at `since`. Until `since + L` the job competes at its normal
/// [`Hint::Priority`](crate::Hint::Priority); from then until it completes, at `critical`.
/// Per device, the highest effective priority among ready queues runs (as HPF). A wake-up is
/// requested at the next laxity expiry. Set `L` to the job's deadline minus its execution time
/// (plus margin) and a low-priority real-time job runs only when it must, leaving the device to
/// more important work until then.
///
/// Reads: `Priority`, `Laxity` (0..=1 h; critical −100..=100), and `Deadline` only to report
/// `deadline_misses` (jobs completed later than their deadline). Work-conserving per device.
#[derive(Clone, Debug, Default)]
pub struct Lax {
    misses: MissCounter,
}

/// The priority `q`'s current job competes at, at `now`.
fn effective(q: &QueueView, now: baton_core::Nanos) -> Priority {
    match q.hints.laxity {
        Some(l) if q.ready && now >= q.since + l.laxity => l.critical.max(q.hints.priority),
        _ => q.hints.priority,
    }
}

impl Policy for Lax {
    fn name(&self) -> &'static str {
        "lax"
    }

    fn decide(&mut self, snap: &Snapshot<'_>) -> Decision {
        self.misses.observe(snap.queues, snap.now);
        let now = snap.now;
        let mut d = rank_first(snap, Scope::PerDevice, |q| effective(q, now));
        for q in snap.queues.iter().filter(|q| q.ready) {
            if let Some(l) = q.hints.laxity {
                let expiry = q.since + l.laxity;
                if expiry > now {
                    d.wake(expiry);
                }
            }
        }
        d
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("deadline_misses", self.misses.misses)]
    }
}

#[cfg(test)]
mod tests {
    use baton_core::{Nanos, XQueueId};

    use super::*;
    use crate::Hint;

    #[test]
    fn a_low_priority_job_turns_critical_when_its_laxity_expires() {
        let mut flood = QueueView::new(1, 1, 0, true);
        flood.hints.priority = Priority::new(5).unwrap();
        let mut rt = QueueView::new(2, 2, 0, true);
        rt.since = Nanos::from_millis(10);
        rt.hints.apply(
            Hint::laxity(Nanos::from_millis(3), 50).unwrap(),
            Nanos::ZERO,
        );
        let qs = [flood, rt];
        let mut p = Lax::default();
        let d = p.decide(&Snapshot::new(Nanos::from_millis(11), &qs));
        assert_eq!(d.suspend, vec![XQueueId(2)]);
        assert_eq!(d.wake_at, Some(Nanos::from_millis(13)));
        let d = p.decide(&Snapshot::new(Nanos::from_millis(13), &qs));
        assert_eq!(d.suspend, vec![XQueueId(1)]);
        assert_eq!(d.wake_at, None);
    }
}
