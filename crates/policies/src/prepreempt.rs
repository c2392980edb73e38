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
/// A queue that has just finished a job counts as ready for a while too, when the scheduler
/// gives a linger ([`GlobalHint::Linger`](crate::GlobalHint::Linger)): a service's next request
/// or token usually follows within microseconds (a decoder's next step, the next request of a
/// burst), and lower work let run in that gap is what the next one waits behind.
///
/// Reads: [`Hint::Upcoming`](crate::Hint::Upcoming) (arrives in 0..=10 s, grace 0..=10 s) and
/// [`GlobalHints::linger`](crate::GlobalHints::linger). The registry wraps every policy in it.
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
        let mut seen = std::mem::take(&mut self.scratch);
        let (mut d, lapse) = match announced(snap, &mut seen) {
            Some(lapse) => {
                let d = self.inner.decide(&Snapshot {
                    queues: &seen,
                    ..*snap
                });
                (d, Some(lapse))
            }
            None => (self.inner.decide(snap), None),
        };
        self.scratch = seen;
        if let Some(l) = lapse {
            d.wake(l);
        }
        d
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.inner.counters()
    }
}

/// The queues as the wrapped policy is shown them: those with a live announcement count as
/// ready. Fills `seen` and returns the earliest lapse when any announcement is live; returns
/// `None` (and leaves `seen` alone) when there is none, so the snapshot can be used as is.
fn announced(snap: &Snapshot<'_>, seen: &mut Vec<QueueView>) -> Option<baton_core::Nanos> {
    let now = snap.now;
    // Until when `q` counts as ready though it is not: its announcement's lapse, or the end
    // of its linger after its last job; the later of the two.
    let until = |q: &QueueView| {
        if q.ready {
            return None;
        }
        let announced = q.hints.upcoming.filter(|u| u.live(now)).map(|u| u.expires);
        let lingers = snap
            .global
            .linger
            .filter(|l| q.jobs > 0 && now < q.since + *l)
            .map(|l| q.since + l);
        announced.max(lingers)
    };
    if !snap.queues.iter().any(|q| until(q).is_some()) {
        return None;
    }
    seen.clear();
    seen.extend_from_slice(snap.queues);
    let mut lapse: Option<baton_core::Nanos> = None;
    for q in seen.iter_mut() {
        if let Some(e) = until(q) {
            q.ready = true;
            lapse = Some(lapse.map_or(e, |l| l.min(e)));
        }
    }
    lapse
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

    #[test]
    fn a_queue_that_just_finished_work_holds_lower_ones_for_its_linger() {
        let mut hp = QueueView::new(1, 1, 0, false);
        hp.hints.priority = Priority::new(10).unwrap();
        hp.jobs = 3;
        hp.since = Nanos::from_millis(10);
        let be = QueueView::new(2, 2, 0, true);
        let qs = [hp, be];
        let mut p = PrePreempt::new(Hpf);
        let at = |ms: u64, linger: Option<u64>| {
            let mut snap = Snapshot::new(Nanos::from_micros(ms), &qs);
            snap.global.linger = linger.map(Nanos::from_micros);
            snap
        };
        // No linger: idle is idle.
        assert!(p.decide(&at(10_100, None)).suspend.is_empty());
        // 100 µs into a 500 µs linger: BE held, and a wake-up asked at its end.
        let d = p.decide(&at(10_100, Some(500)));
        assert_eq!(d.suspend, vec![XQueueId(2)]);
        assert_eq!(d.wake_at, Some(Nanos::from_micros(10_500)));
        // Over: BE runs again; a queue that never had a job does not linger.
        assert!(p.decide(&at(10_500, Some(500))).suspend.is_empty());
        let mut fresh = qs;
        fresh[0].jobs = 0;
        let mut snap = Snapshot::new(Nanos::from_micros(10_100), &fresh);
        snap.global.linger = Some(Nanos::from_micros(500));
        assert!(p.decide(&snap).suspend.is_empty());
    }

    #[test]
    fn asks_the_wrapped_policy_what_it_may_suspend() {
        let lone = [QueueView::new(1, 1, 0, true)];
        let mut p = PrePreempt::new(Hpf);
        let plan = p.decide(&Snapshot::new(Nanos::ZERO, &lone)).plan(0);
        assert!(!plan.may_suspend && !plan.report, "{plan:?}");
        let mut hp = QueueView::new(1, 1, 0, false);
        hp.hints.priority = Priority::new(10).unwrap();
        hp.jobs = 1;
        let be = QueueView::new(2, 2, 0, true);
        let d = p.decide(&Snapshot::new(Nanos::ZERO, &[hp, be]));
        assert!(d.plan(1).may_suspend);
        assert!(!d.plan(0).may_suspend);
        // Announced, the service is shown ready: the plan is for the situation as shown.
        hp.jobs = 0;
        hp.hints.apply(
            Hint::upcoming(Nanos::from_millis(2), Nanos::from_millis(1)).unwrap(),
            Nanos::ZERO,
        );
        let d = p.decide(&Snapshot::new(Nanos::from_millis(1), &[hp, be]));
        assert!(d.plan(1).may_suspend && d.suspends(be.id), "{d:?}");
    }
}
