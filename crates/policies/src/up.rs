//! Utilization partition per queue.

use std::collections::{BTreeMap, BTreeSet};

use baton_core::{Nanos, XQueueId};

use crate::{Decision, DeviceId, Policy, QueueView, Snapshot};

/// The period over which UP enforces shares unless a time-slice hint says otherwise.
pub const UP_DEFAULT_PERIOD: Nanos = Nanos::from_millis(20);

/// Budget differences below this many nanoseconds count as none.
const SLACK_NS: f64 = 1_000.0;

/// **UP** — utilization partition per queue (XSched's UP).
///
/// Time on each device is cut into periods of one time slice `P`. Each queue's normalized
/// share `s` (its [`Hint::Utilization`](crate::Hint::Utilization); queues without one split
/// what the hinted ones leave, at least 1 % each; shares summing past 100 % are scaled down)
/// gives it a budget of `s × P` device time per period. One queue runs at a time: the current
/// holder keeps the device while it is ready and under budget; then the ready queue furthest
/// under its budget (smallest used/budget) takes over. A queue that has just become ready and
/// is at least as far under its budget as the holder takes over at once: a latency-critical
/// service that uses less than its share is served on arrival, not after the holder's turn,
/// while two queues that stay ready still take turns of a whole budget. A queue that goes idle
/// loses the rest of its budget for the period. When every ready queue has spent its budget,
/// the one least over it runs (work conservation). Device time is the scheduler's served-time
/// accounting.
///
/// Reads: `Utilization` (0.1..=100 %), [`GlobalHint::Timeslice`](crate::GlobalHint::Timeslice)
/// as `P` (100 µs..=1 s, default 20 ms). Work-conserving per device; no ready queue starves.
#[derive(Clone, Debug, Default)]
pub struct Up {
    devices: BTreeMap<DeviceId, Period>,
}

#[derive(Clone, Debug, Default)]
struct Period {
    end: Nanos,
    start_served: BTreeMap<XQueueId, Nanos>,
    holder: Option<XQueueId>,
    /// The queues that were ready at the last decision (a ready queue not among them has just
    /// arrived).
    ready: BTreeSet<XQueueId>,
}

/// Each item's share of the device, normalized to sum to 1: hinted shares as given (scaled
/// down if they exceed 1), the rest split evenly among unhinted items, at least 1 % each.
pub(crate) fn normalized_shares(hints: &[Option<f64>]) -> Vec<f64> {
    let hinted: f64 = hints.iter().flatten().sum();
    let unhinted = hints.iter().filter(|h| h.is_none()).count();
    let rest = if unhinted > 0 {
        ((1.0 - hinted) / unhinted as f64).max(0.01)
    } else {
        0.0
    };
    let raw: Vec<f64> = hints.iter().map(|h| h.unwrap_or(rest)).collect();
    let total: f64 = raw.iter().sum();
    raw.iter()
        .map(|s| if total > 1.0 { s / total } else { *s })
        .collect()
}

impl Policy for Up {
    fn name(&self) -> &'static str {
        "up"
    }

    fn decide(&mut self, snap: &Snapshot<'_>) -> Decision {
        let now = snap.now;
        let period = snap.global.timeslice.unwrap_or(UP_DEFAULT_PERIOD);
        let mut d = Decision::default();
        self.devices
            .retain(|dev, _| snap.on_device(*dev).next().is_some());
        for dev in snap.devices() {
            let qs: Vec<&QueueView> = snap.on_device(dev).collect();
            let st = self.devices.entry(dev).or_default();
            if now >= st.end {
                st.end = now + period;
                st.start_served = qs.iter().map(|q| (q.id, q.served)).collect();
            }
            let shares = normalized_shares(
                &qs.iter()
                    .map(|q| q.hints.utilization.map(crate::Share::fraction))
                    .collect::<Vec<_>>(),
            );
            let budget = |i: usize| period.0 as f64 * shares[i];
            let used: Vec<f64> = qs
                .iter()
                .map(|q| {
                    let start = *st.start_served.entry(q.id).or_insert(q.served);
                    (q.served - start).0 as f64
                })
                .collect();
            let ratio = |i: usize| used[i] / budget(i).max(1.0);
            let arrived = |q: &QueueView| q.ready && !st.ready.contains(&q.id);
            let holder_ok = st
                .holder
                .and_then(|h| qs.iter().position(|q| q.id == h && q.ready));
            // A holder within a microsecond of its budget has spent it (rounding must not
            // leave it holding the device with no wake-up left to end its turn).
            let keep = holder_ok.filter(|&h| {
                used[h] + SLACK_NS < budget(h)
                    && !(0..qs.len()).any(|j| j != h && arrived(qs[j]) && ratio(j) <= ratio(h))
            });
            // Furthest under budget first; on a tie, a queue that has just arrived.
            let chosen = keep.or_else(|| {
                (0..qs.len()).filter(|&i| qs[i].ready).min_by(|&a, &b| {
                    ratio(a)
                        .total_cmp(&ratio(b))
                        .then(arrived(qs[b]).cmp(&arrived(qs[a])))
                })
            });
            st.ready = qs.iter().filter(|q| q.ready).map(|q| q.id).collect();
            st.holder = chosen.map(|i| qs[i].id);
            d.wake(st.end);
            if let Some(i) = chosen {
                let left = budget(i) - used[i];
                if left >= SLACK_NS {
                    d.wake(now + crate::nanos_f64(left));
                }
                d.suspend
                    .extend(qs.iter().filter(|q| q.id != qs[i].id).map(|q| q.id));
            }
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Hint;

    fn q(id: u64, share: f64, served_ms: u64) -> QueueView {
        let mut v = QueueView::new(id, u32::try_from(id).unwrap(), 0, true);
        v.hints
            .apply(Hint::utilization(share).unwrap(), Nanos::ZERO);
        v.served = Nanos::from_millis(served_ms);
        v
    }

    #[test]
    fn shares_normalize() {
        assert_eq!(
            normalized_shares(&[Some(0.5), None, None]),
            vec![0.5, 0.25, 0.25]
        );
        assert_eq!(normalized_shares(&[Some(0.8), Some(0.8)]), vec![0.5, 0.5]);
        let s = normalized_shares(&[Some(1.0), None]);
        assert!((s[1] - 0.01 / 1.01).abs() < 1e-9);
    }

    #[test]
    fn the_holder_keeps_the_device_until_its_budget_is_spent() {
        let mut p = Up::default();
        let d = p.decide(&Snapshot::new(Nanos::ZERO, &[q(1, 75.0, 0), q(2, 25.0, 0)]));
        // Both at 0 % used: the first (lowest id) takes the device for 15 ms of its 20 ms.
        assert_eq!(d.suspend, vec![XQueueId(2)]);
        assert_eq!(d.wake_at, Some(Nanos::from_millis(15)));
        let t = Nanos::from_millis(15);
        let d = p.decide(&Snapshot::new(t, &[q(1, 75.0, 15), q(2, 25.0, 0)]));
        assert_eq!(d.suspend, vec![XQueueId(1)]);
        assert_eq!(d.wake_at, Some(Nanos::from_millis(20)));
        // New period: budgets refill; the holder goes on with its fresh budget.
        let t = Nanos::from_millis(20);
        let d = p.decide(&Snapshot::new(t, &[q(1, 75.0, 15), q(2, 25.0, 5)]));
        assert_eq!(d.suspend, vec![XQueueId(1)]);
        assert_eq!(d.wake_at, Some(Nanos::from_millis(25)));
    }

    #[test]
    fn a_holder_a_nanosecond_short_of_its_budget_hands_over() {
        // Found by the lab's starvation property: rounding left the holder 1 ns under budget
        // with no wake-up to end its turn, and the next period let it keep the device.
        let mut p = Up::default();
        p.decide(&Snapshot::new(Nanos::ZERO, &[q(1, 75.0, 0), q(2, 25.0, 0)]));
        let mut a = q(1, 75.0, 0);
        a.served = Nanos(15_000_000 - 1);
        let t = Nanos(15_000_000 - 1);
        let d = p.decide(&Snapshot::new(t, &[a, q(2, 25.0, 0)]));
        assert_eq!(d.suspend, vec![XQueueId(1)]);
    }

    #[test]
    fn an_arrival_further_under_budget_takes_over_at_once() {
        let mut p = Up::default();
        let mut hp = q(1, 75.0, 0);
        hp.ready = false;
        // The best-effort queue holds the device alone.
        let d = p.decide(&Snapshot::new(Nanos::ZERO, &[hp, q(2, 25.0, 0)]));
        assert_eq!(d.suspend, vec![XQueueId(1)]);
        // 2 ms later the service arrives, 0 % into its budget against 40 %: it runs at once.
        let t = Nanos::from_millis(2);
        let d = p.decide(&Snapshot::new(t, &[q(1, 75.0, 0), q(2, 25.0, 2)]));
        assert_eq!(d.suspend, vec![XQueueId(2)]);
        // Both stay ready: the service keeps its turn while under its budget.
        let t = Nanos::from_millis(3);
        let d = p.decide(&Snapshot::new(t, &[q(1, 75.0, 1), q(2, 25.0, 2)]));
        assert_eq!(d.suspend, vec![XQueueId(2)]);
    }

    #[test]
    fn an_arrival_further_over_budget_waits_for_the_holders_turn() {
        let mut p = Up::default();
        let mut a = q(1, 75.0, 0);
        a.ready = false;
        p.decide(&Snapshot::new(Nanos::ZERO, &[q(1, 75.0, 0), q(2, 25.0, 0)]));
        p.decide(&Snapshot::new(Nanos::from_millis(12), &[a, q(2, 25.0, 0)]));
        // Queue 1 used 12 of 15 ms (80 %) and comes back while queue 2 is 20 % into its 5 ms.
        let t = Nanos::from_millis(13);
        let d = p.decide(&Snapshot::new(t, &[q(1, 75.0, 12), q(2, 25.0, 1)]));
        assert_eq!(d.suspend, vec![XQueueId(1)]);
        assert_eq!(d.wake_at, Some(Nanos::from_millis(17)));
    }
}
