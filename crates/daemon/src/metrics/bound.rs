//! The bound on per-queue series: at most [`MAX_QUEUE_SERIES`] queues have series of their own,
//! the most active first; the others are summed into one series labelled `other`.
//!
//! Gauges of `other` are sums over the queues folded now. Its counters must only grow, though
//! queues move in and out of the fold and come and go: so `other` accumulates what folded
//! queues *added* since the previous scrape, kept here between scrapes. A queue moving into
//! its own series starts it at its full count (a new series: `rate()` reads it from there);
//! one moving into the fold stops its series, and its later growth goes to `other`.

use std::collections::{HashMap, HashSet};

use baton_core::XQueueId;

use crate::core::views::{QueueCounts, QueueSample};

/// How many queues have series of their own.
pub(crate) const MAX_QUEUE_SERIES: usize = 64;

/// What the bound keeps between scrapes.
#[derive(Debug, Default)]
pub(crate) struct Bound {
    /// Each queue's counts when last scraped.
    seen: HashMap<XQueueId, QueueCounts>,
    /// The queues shown last time: preferred among equally active ones, so series do not
    /// flap between scrapes.
    shown: HashSet<XQueueId>,
    /// What folded queues added, over the daemon's life.
    folded: QueueCounts,
    /// Whether any queue was ever folded (from then on `other` is always shown).
    ever_folded: bool,
}

/// The aggregate series of the queues without one of their own.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Other {
    /// How many queues it sums now.
    pub(crate) queues: usize,
    pub(crate) ready: u64,
    pub(crate) suspended: u64,
    pub(crate) in_flight: u64,
    pub(crate) device_share: f64,
    pub(crate) counts: QueueCounts,
}

/// One scrape's queue series.
#[derive(Debug)]
pub(crate) struct Bounded<'a> {
    /// The queues with series of their own, by id.
    pub(crate) own: Vec<&'a QueueSample>,
    /// The rest, if any queue was ever folded.
    pub(crate) other: Option<Other>,
}

impl Bound {
    /// Splits `queues` into those shown on their own and the `other` aggregate.
    pub(crate) fn apply<'a>(&mut self, queues: &'a [QueueSample]) -> Bounded<'a> {
        let mut ranked: Vec<&QueueSample> = queues.iter().collect();
        // Most active first: ready (running or held back), then the largest recent share of
        // its device, then the most commands completed recently; then the ones shown before,
        // then the oldest.
        ranked.sort_by(|a, b| {
            b.ready
                .cmp(&a.ready)
                .then(b.device_share.total_cmp(&a.device_share))
                .then(b.commands_per_sec.total_cmp(&a.commands_per_sec))
                .then(self.shown.contains(&b.id).cmp(&self.shown.contains(&a.id)))
                .then(a.id.cmp(&b.id))
        });
        let cut = ranked.len().min(MAX_QUEUE_SERIES);
        let (own, rest) = ranked.split_at(cut);
        let mut other = Other {
            queues: rest.len(),
            ..Other::default()
        };
        for q in rest {
            other.ready += u64::from(q.ready);
            other.suspended += u64::from(q.suspended);
            other.in_flight += u64::from(q.in_flight);
            other.device_share += q.device_share;
            let before = self.seen.get(&q.id).copied().unwrap_or_default();
            add_growth(&mut self.folded, &before, &q.counts);
        }
        other.counts = self.folded;
        self.ever_folded |= !rest.is_empty();
        self.seen = queues.iter().map(|q| (q.id, q.counts)).collect();
        self.shown = own.iter().map(|q| q.id).collect();
        let mut own = own.to_vec();
        own.sort_unstable_by_key(|q| q.id);
        Bounded {
            own,
            other: self.ever_folded.then_some(other),
        }
    }
}

/// Adds to `total` what each count grew by from `before` to `now`.
fn add_growth(total: &mut QueueCounts, before: &QueueCounts, now: &QueueCounts) {
    total.launched += now.launched.saturating_sub(before.launched);
    total.completed += now.completed.saturating_sub(before.completed);
    total.busy_secs += (now.busy_secs - before.busy_secs).max(0.0);
    total.suspended_secs += (now.suspended_secs - before.suspended_secs).max(0.0);
    total.suspensions += now.suspensions.saturating_sub(before.suspensions);
}

#[cfg(test)]
mod tests {
    use baton_protocol::QueueId;

    use super::*;

    fn queue(id: u64, launched: u64) -> QueueSample {
        QueueSample {
            id: XQueueId(id),
            pid: 100,
            queue: QueueId(id),
            device: "sim-0".into(),
            priority: 0,
            ready: false,
            suspended: false,
            in_flight: 0,
            device_share: 0.0,
            commands_per_sec: 0.0,
            counts: QueueCounts {
                launched,
                ..QueueCounts::default()
            },
        }
    }

    fn ids(b: &Bounded<'_>) -> Vec<u64> {
        b.own.iter().map(|q| q.id.0).collect()
    }

    #[test]
    fn few_queues_are_all_shown_and_no_other() {
        let qs: Vec<QueueSample> = (1..=3).map(|i| queue(i, 1)).collect();
        let b = Bound::default().apply(&qs);
        assert_eq!(ids(&b), vec![1, 2, 3]);
        assert_eq!(b.other, None);
    }

    #[test]
    fn the_most_active_have_series_and_the_rest_are_summed() {
        let n = MAX_QUEUE_SERIES as u64 + 10;
        let mut qs: Vec<QueueSample> = (1..=n).map(|i| queue(i, 5)).collect();
        // The newest queue is the busiest, two idle old ones had a share once.
        qs[usize::try_from(n - 1).unwrap()].ready = true;
        qs[usize::try_from(n - 1).unwrap()].suspended = true;
        qs[usize::try_from(n - 2).unwrap()].device_share = 0.5;
        let mut bound = Bound::default();
        let b = bound.apply(&qs);
        assert_eq!(b.own.len(), MAX_QUEUE_SERIES);
        let shown = ids(&b);
        assert!(shown.contains(&n) && shown.contains(&(n - 1)), "{shown:?}");
        // Then the oldest: 1..=62 besides the two active ones.
        assert!(shown.contains(&62) && !shown.contains(&63), "{shown:?}");
        let other = b.other.unwrap();
        assert_eq!(other.queues, 10);
        assert_eq!((other.ready, other.suspended), (0, 0));
        assert_eq!(other.counts.launched, 50, "ten folded queues, five each");
    }

    #[test]
    fn other_only_grows_as_queues_move_in_and_out_and_go() {
        let n = MAX_QUEUE_SERIES as u64 + 2;
        let mut qs: Vec<QueueSample> = (1..=n).map(|i| queue(i, 10)).collect();
        let mut bound = Bound::default();
        let first = bound.apply(&qs).other.unwrap().counts.launched;
        assert_eq!(first, 20, "queues n-1 and n are folded");
        // Queue n becomes the busiest and gets its own series; queue 64 is pushed out. Queue
        // n's count does not leave `other`; queue 64's growth from now on enters it.
        qs[usize::try_from(n - 1).unwrap()].ready = true;
        qs[usize::try_from(n - 1).unwrap()].counts.launched = 15;
        qs[63].counts.launched = 13;
        let b = bound.apply(&qs);
        assert!(ids(&b).contains(&n) && !ids(&b).contains(&64));
        let second = b.other.unwrap().counts.launched;
        assert_eq!(second, 20 + 3, "queue 64 grew by 3 while folded");
        // A folded queue goes: `other` keeps what it had added.
        qs.retain(|q| q.id.0 != 65);
        let third = bound.apply(&qs).other.unwrap().counts.launched;
        assert_eq!(third, 23);
        // Everything fits again: `other` is still shown, at zero queues, never lower.
        qs.truncate(10);
        let o = bound.apply(&qs).other.unwrap();
        assert_eq!((o.queues, o.counts.launched), (0, 23));
    }

    #[test]
    fn equally_active_queues_keep_their_series() {
        let n = MAX_QUEUE_SERIES as u64 + 1;
        let qs: Vec<QueueSample> = (1..=n).map(|i| queue(i, 0)).collect();
        let mut bound = Bound::default();
        // Queue 64 leaves the shown set while a newer one is busy...
        let mut busy = qs.clone();
        busy[usize::try_from(n - 1).unwrap()].ready = true;
        assert!(!ids(&bound.apply(&busy)).contains(&n.saturating_sub(1)));
        // ...and when all are equal again, the ones just shown stay shown.
        let again = ids(&bound.apply(&qs));
        assert!(again.contains(&n), "{again:?}");
    }
}
