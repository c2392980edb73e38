//! Multi-level feedback queue.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use baton_core::{Nanos, XQueueId};

use crate::hpf::{Scope, rank_first};
use crate::{Decision, Policy, Snapshot};

/// Levels MLFQ has.
pub const MLFQ_LEVELS: u8 = 4;
/// The top level's quantum unless a time-slice hint says otherwise; each level below doubles it.
pub const MLFQ_DEFAULT_QUANTUM: Nanos = Nanos::from_millis(2);
/// How many top-level quanta pass between two boosts of every queue back to the top.
pub const MLFQ_BOOST_QUANTA: u64 = 50;

/// The shortest time MLFQ asks to sleep before checking quanta again.
const MLFQ_MIN_WAKE: Nanos = Nanos::from_micros(50);

/// **MLFQ** — multi-level feedback queue: short jobs first without knowing job lengths.
///
/// Every queue starts at level 0. Per device, the ready queues at the best (lowest) level run
/// together; queues at worse levels are suspended. A queue that has been served its level's
/// quantum (`Q × 2^level`, summed over its jobs) drops one level, down to level 3. Every
/// `50 Q` every queue goes back to level 0, so a long-running queue behind a stream of short
/// ones still runs (no starvation). Short jobs finish at the top before long ones are demoted
/// below them; long jobs soak up the rest.
///
/// Reads: [`GlobalHint::Timeslice`](crate::GlobalHint::Timeslice) as `Q` (100 µs..=1 s,
/// default 2 ms). Work-conserving per device; no ready queue waits more than a boost period
/// plus the time the queues above it take.
#[derive(Clone, Debug, Default)]
pub struct Mlfq {
    /// Per queue: level, and served time when it entered the level.
    levels: BTreeMap<XQueueId, (u8, Nanos)>,
    next_boost: Option<Nanos>,
}

impl Policy for Mlfq {
    fn name(&self) -> &'static str {
        "mlfq"
    }

    fn decide(&mut self, snap: &Snapshot<'_>) -> Decision {
        let now = snap.now;
        let q0 = snap.global.timeslice.unwrap_or(MLFQ_DEFAULT_QUANTUM);
        let quantum = |level: u8| Nanos(q0.0 << level);
        let boost_every = Nanos(q0.0.saturating_mul(MLFQ_BOOST_QUANTA));
        self.levels
            .retain(|id, _| snap.queues.iter().any(|q| q.id == *id));
        let boost = self.next_boost.is_none_or(|b| now >= b);
        if boost {
            self.next_boost = Some(now + boost_every);
        }
        for q in snap.queues {
            let e = self.levels.entry(q.id).or_insert((0, q.served));
            if boost {
                *e = (0, q.served);
            }
            while e.0 + 1 < MLFQ_LEVELS && q.served - e.1 >= quantum(e.0) {
                e.1 += quantum(e.0);
                e.0 += 1;
            }
        }
        let levels = &self.levels;
        let mut d = rank_first(snap, Scope::PerDevice, |q| {
            Reverse(levels.get(&q.id).map_or(0, |e| e.0))
        });
        if let Some(b) = self.next_boost {
            d.wake(b);
        }
        // Wake when a running queue may have used up its quantum (it shares the device with
        // the others at its level, so this is early, never late).
        let mut wake = None;
        for q in snap.queues.iter().filter(|q| q.ready && !d.suspends(q.id)) {
            if let Some((l, start)) = levels.get(&q.id) {
                if *l + 1 < MLFQ_LEVELS {
                    let t = now + (quantum(*l) - (q.served - *start)).max(MLFQ_MIN_WAKE);
                    wake = Some(wake.map_or(t, |w: Nanos| w.min(t)));
                }
            }
        }
        if let Some(t) = wake {
            d.wake(t);
        }
        d
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let bottom = self
            .levels
            .values()
            .filter(|(l, _)| *l + 1 == MLFQ_LEVELS)
            .count();
        vec![("queues_at_bottom", bottom as u64)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::QueueView;

    #[test]
    fn a_queue_that_uses_its_quanta_sinks_and_the_boost_lifts_it() {
        let mut p = Mlfq::default();
        let mut long = QueueView::new(1, 1, 0, true);
        let short = QueueView::new(2, 2, 0, false);
        let d = p.decide(&Snapshot::new(Nanos::ZERO, &[long, short]));
        assert!(d.suspend.is_empty());
        assert_eq!(d.wake_at, Some(Nanos::from_millis(2)));
        long.served = Nanos::from_millis(2);
        let short = QueueView {
            ready: true,
            ..short
        };
        let d = p.decide(&Snapshot::new(Nanos::from_millis(2), &[long, short]));
        assert_eq!(d.suspend, vec![XQueueId(1)]);
        // Served 2 + 4 + 8 ms: level 3, still below the short one.
        long.served = Nanos::from_millis(14);
        p.decide(&Snapshot::new(Nanos::from_millis(20), &[long, short]));
        assert_eq!(p.levels[&XQueueId(1)].0, 3);
        assert_eq!(p.counters(), vec![("queues_at_bottom", 1)]);
        // The boost at 100 ms puts everyone back at the top.
        let d = p.decide(&Snapshot::new(Nanos::from_millis(100), &[long, short]));
        assert!(d.suspend.is_empty());
    }
}
