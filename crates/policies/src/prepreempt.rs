//! Hint-based pre-preemption (GPreempt), for every policy.

use crate::{Decision, Policy, QueueView, Snapshot};

/// **Pre-preemption** — wraps a policy so that announced work evicts lower work *before* it
/// arrives.
///
/// A latency-critical client announces "work arrives in T" ([`Hint::upcoming`]). From that
/// moment until the work arrives (the queue turns ready, and the scheduler drops the
/// announcement) or the announcement lapses (`grace` after the expected arrival), the wrapped
/// policy sees the queue as ready. Under a priority policy, lower queues are suspended ahead of
/// time: their in-flight work drains while nothing needs the device, and the announced work
/// finds it free instead of waiting for the drain. A wake-up is requested at the lapse so
/// stale announcements release the device.
///
/// Reads: [`Hint::Upcoming`](crate::Hint::Upcoming) (arrives in 0..=10 s, grace 0..=10 s).
/// The registry wraps every policy in it.
///
/// [`Hint::upcoming`]: crate::Hint::upcoming
pub struct PrePreempt<P> {
    inner: P,
    scratch: Vec<QueueView>,
}

impl<P: Policy> PrePreempt<P> {
    /// `inner`, honouring announced work.
    pub fn new(inner: P) -> PrePreempt<P> {
        PrePreempt {
            inner,
            scratch: Vec::new(),
        }
    }
}

impl<P: Policy> Policy for PrePreempt<P> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn decide(&mut self, snap: &Snapshot<'_>) -> Decision {
        let now = snap.now;
        let live = |q: &QueueView| !q.ready && q.hints.upcoming.is_some_and(|u| u.live(now));
        if !snap.queues.iter().any(live) {
            return self.inner.decide(snap);
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(snap.queues);
        let mut lapse = None;
        for q in &mut self.scratch {
            if live(q) {
                q.ready = true;
                let e = q.hints.upcoming.map_or(now, |u| u.expires);
                lapse = Some(lapse.map_or(e, |l: baton_core::Nanos| l.min(e)));
            }
        }
        let queues = std::mem::take(&mut self.scratch);
        let mut d = self.inner.decide(&Snapshot {
            queues: &queues,
            ..*snap
        });
        self.scratch = queues;
        if let Some(l) = lapse {
            d.wake(l);
        }
        d
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.inner.counters()
    }
}

#[cfg(test)]
mod tests {
    use baton_core::{Nanos, Priority, XQueueId};

    use super::*;
    use crate::{Hint, Hpf};

    #[test]
    fn announced_work_suspends_lower_queues_until_it_lapses() {
        let mut hp = QueueView::new(1, 1, 0, false);
        hp.hints.priority = Priority::new(10).unwrap();
        hp.hints.apply(
            Hint::upcoming(Nanos::from_millis(2), Nanos::from_millis(1)).unwrap(),
            Nanos::ZERO,
        );
        let be = QueueView::new(2, 2, 0, true);
        let qs = [hp, be];
        let mut p = PrePreempt::new(Hpf);
        let d = p.decide(&Snapshot::new(Nanos::from_millis(1), &qs));
        assert_eq!(d.suspend, vec![XQueueId(2)]);
        assert_eq!(d.wake_at, Some(Nanos::from_millis(3)));
        // Lapsed: BE runs again.
        let d = p.decide(&Snapshot::new(Nanos::from_millis(3), &qs));
        assert!(d.suspend.is_empty() && d.wake_at.is_none());
    }
}
