//! A test mode, not a scheduling policy: suspends and resumes queues at random moments.

use baton_core::{Nanos, XQueueId};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::{Decision, Policy, QueuePlan, Snapshot};

/// The shortest time one random choice of suspended queues stands.
pub const CHAOS_MIN_SPAN: Nanos = Nanos::from_micros(200);
/// The longest time one random choice of suspended queues stands.
pub const CHAOS_MAX_SPAN: Nanos = Nanos::from_millis(3);

/// **chaos** — suspends each queue with probability ½ for a random span of 0.2–3 ms, then
/// draws again, from a seed (`chaos:SEED`; `chaos` is seed 0). Of the queues left running, it
/// says of each with probability ½ that it cannot suspend it until the next draw, so the queue
/// launches without its window then (and a queue that gives way while outranked stops giving
/// way: its time slice or SMs come back), and is bounded again when a later draw may suspend
/// it.
///
/// It exists to test that programs compute exactly what they compute natively whatever the
/// moments at which their queues are suspended and resumed: every transparency check runs a
/// program in this role too. The same seed gives the same sequence of choices; which command
/// each choice lands on depends on timing, so a failure is replayed by running the seed
/// repeatedly. Never use it to share a GPU: it is neither fair nor work-conserving.
#[derive(Clone, Debug)]
pub struct Chaos {
    rng: SmallRng,
    /// When the current choice ends (`None`: no choice yet).
    until: Option<Nanos>,
    suspended: Vec<XQueueId>,
    /// Running queues said unsuspendable until the next draw.
    free: Vec<XQueueId>,
}

impl Chaos {
    /// Chaos drawn from `seed`.
    pub fn new(seed: u64) -> Chaos {
        Chaos {
            rng: SmallRng::seed_from_u64(seed),
            until: None,
            suspended: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl Policy for Chaos {
    fn name(&self) -> &'static str {
        "chaos"
    }

    fn decide(&mut self, snap: &Snapshot<'_>) -> Decision {
        if self.until.is_none_or(|t| snap.now >= t) {
            let rng = &mut self.rng;
            self.suspended.clear();
            self.free.clear();
            for q in snap.queues {
                if rng.random_bool(0.5) {
                    self.suspended.push(q.id);
                } else if rng.random_bool(0.5) {
                    self.free.push(q.id);
                }
            }
            let span = rng.random_range(CHAOS_MIN_SPAN.0..=CHAOS_MAX_SPAN.0);
            self.until = Some(snap.now + Nanos(span));
        }
        // Queues that went away since the draw are dropped; new ones run, bounded, until the
        // next draw.
        let live = |id: &XQueueId| snap.queues.iter().any(|q| q.id == *id);
        self.suspended.retain(live);
        self.free.retain(live);
        // Some running queues are said unsuspendable, so they run without their window until
        // the next draw; a suspended one never is.
        let plans = snap
            .queues
            .iter()
            .map(|q| QueuePlan {
                may_suspend: !self.free.contains(&q.id),
                ..QueuePlan::DEFAULT
            })
            .collect();
        Decision {
            suspend: self.suspended.clone(),
            wake_at: self.until,
            plans,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::QueueView;

    fn queues(n: u64) -> Vec<QueueView> {
        (1..=n).map(|i| QueueView::new(i, 1, 0, true)).collect()
    }

    fn run(seed: u64, rounds: u64) -> Vec<Decision> {
        let qs = queues(8);
        let mut p = Chaos::new(seed);
        let mut now = Nanos::ZERO;
        let mut out = Vec::new();
        for _ in 0..rounds {
            let d = p.decide(&Snapshot::new(now, &qs));
            now = d.wake_at.expect("chaos always asks to be woken");
            out.push(d);
        }
        out
    }

    #[test]
    fn the_same_seed_draws_the_same_choices() {
        assert_eq!(run(7, 50), run(7, 50));
        assert_ne!(run(7, 50), run(8, 50));
    }

    #[test]
    fn running_queues_are_sometimes_said_unsuspendable_and_suspended_ones_never() {
        let qs = queues(8);
        let mut p = Chaos::new(5);
        let mut now = Nanos::ZERO;
        let mut free = 0;
        for _ in 0..200 {
            let d = p.decide(&Snapshot::new(now, &qs));
            for (i, q) in qs.iter().enumerate() {
                let may = d.plan(i).may_suspend;
                assert!(
                    may || !d.suspends(q.id),
                    "a suspended queue is left bounded"
                );
                free += usize::from(!may);
            }
            now = d.wake_at.unwrap();
        }
        // About a quarter of 1,600 answers.
        assert!((250..550).contains(&free), "{free} unsuspendable answers");
    }

    #[test]
    fn every_queue_is_both_suspended_and_running_at_times_and_spans_stay_in_range() {
        let decisions = run(3, 200);
        for id in 1..=8 {
            let suspended = decisions
                .iter()
                .filter(|d| d.suspends(XQueueId(id)))
                .count();
            assert!(
                suspended > 40 && suspended < 160,
                "queue {id}: suspended in {suspended} of 200 draws"
            );
        }
        let mut now = Nanos::ZERO;
        for d in &decisions {
            let span = d.wake_at.unwrap() - now;
            assert!(span >= CHAOS_MIN_SPAN && span <= CHAOS_MAX_SPAN, "{span:?}");
            now = d.wake_at.unwrap();
        }
    }

    #[test]
    fn a_choice_stands_until_its_span_ends_and_forgets_queues_that_left() {
        let qs = queues(8);
        let mut p = Chaos::new(11);
        let first = p.decide(&Snapshot::new(Nanos::ZERO, &qs));
        let again = p.decide(&Snapshot::new(Nanos::from_micros(100), &qs));
        assert_eq!(
            first, again,
            "an event before the span ends keeps the choice"
        );
        let fewer: Vec<QueueView> = qs.iter().copied().filter(|q| q.id.0 > 4).collect();
        let d = p.decide(&Snapshot::new(Nanos::from_micros(150), &fewer));
        assert!(d.suspend.iter().all(|id| id.0 > 4), "{d:?}");
    }
}
