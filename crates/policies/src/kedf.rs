//! k earliest deadlines first.

use std::collections::BTreeMap;

use baton_core::{Nanos, XQueueId};

use crate::{Decision, Policy, QueueView, Snapshot};

/// **KEDF** — the k ready queues with the earliest deadlines run (XSched's k-EDF).
///
/// A queue with a [`Hint::Deadline`](crate::Hint::Deadline) `D` releases a job each time it
/// turns ready, at `since`; the job's absolute deadline is `since + D`. Per device, ready
/// queues are ordered by absolute deadline (queues without a deadline hint last, then by id)
/// and the first `k` run; the other ready queues are suspended, and idle queues too while `k`
/// queues already run (so a new job cannot slip in before it is ordered). With `k = 1` this is
/// EDF, optimal on one device: a task set of utilization ≤ 1 (less switching overhead) meets
/// every deadline. `k > 1` suits devices that run several queues concurrently.
///
/// Reads: `Deadline` (10 µs..=1 h), [`GlobalHint::K`](crate::GlobalHint::K) (1..=1024,
/// default 1). Reports `deadline_misses`: jobs (readiness periods) that overran their deadline.
/// Work-conserving per device.
#[derive(Clone, Debug, Default)]
pub struct Kedf {
    misses: MissCounter,
}

impl Policy for Kedf {
    fn name(&self) -> &'static str {
        "kedf"
    }

    fn decide(&mut self, snap: &Snapshot<'_>) -> Decision {
        self.misses.observe(snap.queues, snap.now);
        let k = snap.global.k.unwrap_or(1).max(1) as usize;
        let mut d = Decision::default();
        for dev in snap.devices() {
            let mut ready: Vec<&QueueView> = snap.on_device(dev).filter(|q| q.ready).collect();
            ready.sort_by_key(|q| (absolute_deadline(q), q.id));
            d.suspend.extend(ready.iter().skip(k).map(|q| q.id));
            // Wake at the next deadline, to notice overruns as they happen.
            for q in &ready {
                let due = absolute_deadline(q);
                if due >= snap.now && due < Nanos::MAX {
                    d.wake(due + Nanos(1));
                }
            }
            if ready.len() >= k {
                d.suspend
                    .extend(snap.on_device(dev).filter(|q| !q.ready).map(|q| q.id));
            }
        }
        d
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("deadline_misses", self.misses.misses)]
    }
}

/// When a ready queue's current job is due; never for queues without a deadline hint.
pub(crate) fn absolute_deadline(q: &QueueView) -> Nanos {
    q.hints.deadline.map_or(Nanos::MAX, |d| q.since + d)
}

/// Counts jobs (readiness periods) that overran their queue's deadline hint: once when a
/// ready queue passes its deadline, or when a job completes late without having been seen
/// overdue. A queue that stays ready across several application jobs (overload) counts as one
/// job, so under overload the count is a lower bound. If several jobs of a queue complete
/// between two decisions, only the last one is judged.
#[derive(Clone, Debug, Default)]
pub(crate) struct MissCounter {
    /// Per queue: jobs seen, and the release of the last job counted as overdue.
    seen: BTreeMap<XQueueId, (u64, Option<Nanos>)>,
    pub(crate) misses: u64,
}

impl MissCounter {
    pub(crate) fn observe(&mut self, queues: &[QueueView], now: Nanos) {
        for q in queues {
            let Some(d) = q.hints.deadline else {
                continue;
            };
            let (seen, flagged) = self.seen.entry(q.id).or_insert((q.jobs, None));
            if q.jobs > *seen {
                *seen = q.jobs;
                if let Some(l) = q.last_job {
                    let release = q.since.saturating_sub(l);
                    if l > d && *flagged != Some(release) {
                        self.misses += 1;
                    }
                }
            }
            if q.ready && now > q.since + d && *flagged != Some(q.since) {
                *flagged = Some(q.since);
                self.misses += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GlobalHints;

    fn q(id: u64, since_ms: u64, deadline_ms: Option<u64>, ready: bool) -> QueueView {
        let mut v = QueueView::new(id, 1, 0, ready);
        v.since = Nanos::from_millis(since_ms);
        v.hints.deadline = deadline_ms.map(Nanos::from_millis);
        v
    }

    #[test]
    fn the_k_earliest_absolute_deadlines_run() {
        // Absolute deadlines: q1 at 12, q2 at 8, q3 none, q4 idle.
        let qs = [
            q(1, 2, Some(10), true),
            q(2, 5, Some(3), true),
            q(3, 0, None, true),
            q(4, 0, Some(1), false),
        ];
        let mut p = Kedf::default();
        let mut s = p.decide(&Snapshot::new(Nanos::ZERO, &qs)).suspend;
        s.sort_unstable();
        assert_eq!(s, vec![XQueueId(1), XQueueId(3), XQueueId(4)]);
        let snap = Snapshot {
            global: GlobalHints {
                k: Some(3),
                ..GlobalHints::default()
            },
            ..Snapshot::new(Nanos::ZERO, &qs)
        };
        assert_eq!(p.decide(&snap).suspend, vec![XQueueId(4)]);
    }

    #[test]
    fn late_jobs_are_counted() {
        let mut p = Kedf::default();
        let mut a = q(1, 0, Some(5), false);
        p.decide(&Snapshot::new(Nanos::ZERO, &[a]));
        a.jobs = 1;
        a.since = Nanos::from_millis(4);
        a.last_job = Some(Nanos::from_millis(4));
        p.decide(&Snapshot::new(Nanos::ZERO, &[a]));
        a.jobs = 2;
        a.since = Nanos::from_millis(16);
        a.last_job = Some(Nanos::from_millis(6));
        p.decide(&Snapshot::new(Nanos::ZERO, &[a]));
        p.decide(&Snapshot::new(Nanos::ZERO, &[a]));
        assert_eq!(p.counters(), vec![("deadline_misses", 1)]);
        // Seen overdue while still running, then completing late: one miss, not two.
        a.ready = true;
        a.since = Nanos::from_millis(20);
        p.decide(&Snapshot::new(Nanos::from_millis(26), &[a]));
        assert_eq!(p.counters(), vec![("deadline_misses", 2)]);
        a.ready = false;
        a.jobs = 3;
        a.since = Nanos::from_millis(27);
        a.last_job = Some(Nanos::from_millis(7));
        p.decide(&Snapshot::new(Nanos::from_millis(27), &[a]));
        assert_eq!(p.counters(), vec![("deadline_misses", 2)]);
    }
}
