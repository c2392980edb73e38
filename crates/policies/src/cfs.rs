//! Completely-fair-scheduler-like weighted fair share.

use std::collections::BTreeMap;

use baton_core::{Nanos, Priority, XQueueId};

use crate::{Decision, DeviceId, Policy, QueueView, Snapshot};

/// The scheduling period CFS divides between ready queues unless a time-slice hint says
/// otherwise.
pub const CFS_DEFAULT_PERIOD: Nanos = Nanos::from_millis(20);
/// The shortest slice CFS hands out.
pub const CFS_MIN_SLICE: Nanos = Nanos::from_millis(1);

/// Linux's `sched_prio_to_weight`: the weight of nice −20..=19; each step is ×1.25.
const NICE_WEIGHT: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

/// A queue's CFS weight: priority `p` maps to nice `−p/5` (clamped to −20..=19), weighted as
/// Linux weights nice. Priority 0 weighs 1024; every 5 priority points weigh ×1.25.
pub fn weight(p: Priority) -> u32 {
    let nice = (-p.get()).div_euclid(5).clamp(-20, 19);
    NICE_WEIGHT[usize::try_from(nice + 20).unwrap_or(20)]
}

/// **CFS** — weighted fair share like Linux's completely fair scheduler.
///
/// Each queue accumulates *virtual runtime*: the device time it is served, scaled by
/// `1024 / weight`, its weight following its priority (see [`cfs_weight`](crate::cfs_weight)). Per device, the ready
/// queue with the least virtual runtime runs alone for a slice of the period `P` proportional
/// to its weight among the ready queues (at least 1 ms), then the choice is made again. A
/// queue that wakes up starts no further back than `P/2` behind the least virtual runtime, so
/// sleeping does not bank unlimited credit. Over time each continuously ready queue gets
/// device time in proportion to its weight.
///
/// Reads: `Priority` (as weight), [`GlobalHint::Timeslice`](crate::GlobalHint::Timeslice) as
/// `P` (100 µs..=1 s, default 20 ms). Work-conserving per device; no ready queue starves.
#[derive(Clone, Debug, Default)]
pub struct Cfs {
    devices: BTreeMap<DeviceId, RunQueue>,
}

#[derive(Clone, Debug, Default)]
struct RunQueue {
    /// Per queue: virtual runtime (ns), served time last seen, whether it was ready then.
    entities: BTreeMap<XQueueId, (f64, Nanos, bool)>,
    holder: Option<(XQueueId, Nanos)>,
}

impl Policy for Cfs {
    fn name(&self) -> &'static str {
        "cfs"
    }

    fn decide(&mut self, snap: &Snapshot<'_>) -> Decision {
        let now = snap.now;
        let period = snap.global.timeslice.unwrap_or(CFS_DEFAULT_PERIOD);
        let mut d = Decision::default();
        self.devices
            .retain(|dev, _| snap.on_device(*dev).next().is_some());
        for dev in snap.devices() {
            let qs: Vec<&QueueView> = snap.on_device(dev).collect();
            let rq = self.devices.entry(dev).or_default();
            rq.entities.retain(|id, _| qs.iter().any(|q| q.id == *id));
            for q in &qs {
                let w = f64::from(weight(q.hints.priority));
                let e = rq.entities.entry(q.id).or_insert((0.0, q.served, false));
                e.0 += (q.served - e.1).0 as f64 * 1024.0 / w;
                e.1 = q.served;
            }
            let floor = qs
                .iter()
                .filter(|q| q.ready && rq.entities[&q.id].2)
                .map(|q| rq.entities[&q.id].0)
                .fold(f64::INFINITY, f64::min);
            for q in &qs {
                let e = rq.entities.get_mut(&q.id).expect("inserted above");
                if q.ready && !e.2 && floor.is_finite() {
                    e.0 = e.0.max(floor - period.0 as f64 / 2.0);
                }
                e.2 = q.ready;
            }
            let keep = rq
                .holder
                .filter(|(h, until)| now < *until && qs.iter().any(|q| q.id == *h && q.ready))
                .map(|(h, _)| h);
            let chosen = keep.or_else(|| {
                qs.iter()
                    .filter(|q| q.ready)
                    .min_by(|a, b| {
                        rq.entities[&a.id]
                            .0
                            .total_cmp(&rq.entities[&b.id].0)
                            .then(a.id.cmp(&b.id))
                    })
                    .map(|q| q.id)
            });
            let Some(id) = chosen else {
                rq.holder = None;
                continue;
            };
            if keep.is_none() {
                let total: f64 = qs
                    .iter()
                    .filter(|q| q.ready)
                    .map(|q| f64::from(weight(q.hints.priority)))
                    .sum();
                let mine = qs
                    .iter()
                    .find(|q| q.id == id)
                    .map_or(1024.0, |q| f64::from(weight(q.hints.priority)));
                let slice = crate::nanos_f64(period.0 as f64 * mine / total).max(CFS_MIN_SLICE);
                rq.holder = Some((id, now + slice));
            }
            if let Some((_, until)) = rq.holder {
                d.wake(until);
            }
            d.suspend
                .extend(qs.iter().filter(|q| q.id != id).map(|q| q.id));
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_follow_linux_nice_weights() {
        assert_eq!(weight(Priority::DEFAULT), 1024);
        assert_eq!(weight(Priority::new(5).unwrap()), 1277);
        assert_eq!(weight(Priority::new(-5).unwrap()), 820);
        assert_eq!(weight(Priority::MAX), 88761);
        assert_eq!(weight(Priority::MIN), 15);
    }

    #[test]
    fn least_virtual_runtime_runs_for_a_weighted_slice() {
        let mut a = QueueView::new(1, 1, 0, true);
        a.hints.priority = Priority::new(15).unwrap(); // weight 1991
        let b = QueueView::new(2, 2, 0, true); // weight 1024
        let mut p = Cfs::default();
        let d = p.decide(&Snapshot::new(Nanos::ZERO, &[a, b]));
        assert_eq!(d.suspend, vec![XQueueId(2)]);
        // a's slice: 20 ms × 1991 / 3015.
        assert_eq!(d.wake_at, Some(Nanos(13_207_296)));
        let t = Nanos(13_207_296);
        let a2 = QueueView { served: t, ..a };
        let d = p.decide(&Snapshot::new(t, &[a2, b]));
        assert_eq!(d.suspend, vec![XQueueId(1)]);
    }
}
