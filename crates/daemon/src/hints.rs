//! Hints as the daemon keeps them: the wire hints in force for each scope, and what the
//! policy sees of them.
//!
//! A queue's hint of a kind wins over its process's, which wins over the default. Every wire
//! hint is kept (and listed) whether or not the running policy reads it, so switching policy
//! loses none; [`effective`] converts the ones the policies' API knows. Announced work
//! (`Upcoming`) is not a standing hint: it is relative to its arrival, so the core hands it to
//! the policy once, when it comes ([`announced`]).

use baton_core::{Nanos, Priority};
use baton_policies::{GangId, Laxity, QueueHints, Readiness, Share, Upcoming};
use baton_protocol::{Hint, HintKind};

/// The hints in force for one scope: at most one of each kind, never a clear.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct HintSet(Vec<Hint>);

impl HintSet {
    /// The set holding `hints` (already validated as a set: one of each kind, no clear).
    pub(crate) fn of(hints: Vec<Hint>) -> HintSet {
        let mut s = HintSet::default();
        for h in hints {
            s.apply(h);
        }
        s
    }

    /// Replaces the hint of `h`'s kind with `h`, or removes it if `h` is a clear.
    pub(crate) fn apply(&mut self, h: Hint) {
        self.0.retain(|x| x.kind() != h.kind());
        if !matches!(h, Hint::Clear(_)) {
            self.0.push(h);
            self.0.sort_by_key(Hint::kind);
        }
    }

    /// Removes the hint of kind `k`.
    pub(crate) fn clear(&mut self, k: HintKind) {
        self.0.retain(|x| x.kind() != k);
    }

    /// The priority in force here, if any.
    pub(crate) fn priority(&self) -> Option<Priority> {
        self.0.iter().find_map(|h| match h {
            Hint::Priority(p) => Priority::try_from(*p).ok(),
            _ => None,
        })
    }

    /// The hint of kind `k` in force here, if any.
    pub(crate) fn get(&self, k: HintKind) -> Option<Hint> {
        self.0.iter().find(|h| h.kind() == k).copied()
    }

    /// The hints, by kind.
    pub(crate) fn to_vec(&self) -> Vec<Hint> {
        self.0.clone()
    }
}

/// What the policy sees for a queue with hints `queue` in a process with hints `process`
/// (never announced work: see [`announced`]). A laxity hint's lax priority is the queue's
/// priority when no priority hint gives one.
pub(crate) fn effective(queue: &HintSet, process: &HintSet) -> QueueHints {
    let find = |k| queue.get(k).or_else(|| process.get(k));
    let laxity = match find(HintKind::Laxity) {
        Some(Hint::Laxity {
            laxity_ns,
            lax_priority,
            critical_priority,
        }) => Priority::try_from(critical_priority).ok().map(|critical| {
            (
                Laxity {
                    laxity: Nanos(laxity_ns),
                    critical,
                },
                Priority::try_from(lax_priority).ok(),
            )
        }),
        _ => None,
    };
    QueueHints {
        priority: queue
            .priority()
            .or_else(|| process.priority())
            .or_else(|| laxity.and_then(|(_, lax)| lax))
            .unwrap_or(Priority::DEFAULT),
        utilization: match find(HintKind::Utilization) {
            Some(Hint::Utilization { percent }) => Share::percent(f64::from(percent)).ok(),
            _ => None,
        },
        deadline: match find(HintKind::Deadline) {
            Some(Hint::Deadline { deadline_ns }) => Some(Nanos(deadline_ns)),
            _ => None,
        },
        laxity: laxity.map(|(l, _)| l),
        upcoming: None,
        slo_target: None,
        gang: match find(HintKind::Gang) {
            Some(Hint::Gang { id }) => Some(GangId(id)),
            _ => None,
        },
        isolated: match find(HintKind::Isolated) {
            Some(Hint::Isolated { sms }) => Some(sms),
            _ => None,
        },
        yielding: match find(HintKind::Yielding) {
            Some(Hint::Yielding { slice_ns }) => Some(Nanos(slice_ns)),
            _ => None,
        },
        confining: match find(HintKind::Confining) {
            Some(Hint::Confining { sms }) => Some(sms),
            _ => None,
        },
        command_time: match find(HintKind::CommandTime) {
            Some(Hint::CommandTime { command_ns }) => Some(Nanos(command_ns)),
            _ => None,
        },
        readiness: match find(HintKind::Readiness) {
            Some(Hint::Readiness {
                ready_permille,
                waiting_permille,
            }) => Some(Readiness {
                ready: ready_permille,
                waiting: waiting_permille,
            }),
            _ => None,
        },
        time_sliced: matches!(find(HintKind::TimeSliced), Some(Hint::TimeSliced)),
    }
}

/// The announcement `hint` makes when it arrives at `now`: `Some(Some(_))` for announced
/// work, `Some(None)` for a clear of announced work, `None` for any other hint.
pub(crate) fn announced(hint: Hint, now: Nanos) -> Option<Option<Upcoming>> {
    match hint {
        Hint::Upcoming {
            arrives_in_ns,
            expires_in_ns,
        } => Some(Some(Upcoming {
            at: now + Nanos(arrives_in_ns),
            expires: now + Nanos(expires_in_ns),
        })),
        Hint::Clear(HintKind::Upcoming) => Some(None),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use baton_protocol::WirePriority;

    use super::*;

    #[test]
    fn queue_hints_win_over_process_hints() {
        let mut q = HintSet::default();
        let p = HintSet::of(vec![Hint::Priority(WirePriority(7))]);
        assert_eq!(effective(&q, &p).priority.get(), 7);
        q.apply(Hint::Priority(WirePriority(-3)));
        assert_eq!(effective(&q, &p).priority.get(), -3);
        q.apply(Hint::Clear(HintKind::Priority));
        assert_eq!(effective(&q, &p).priority.get(), 7);
        assert_eq!(
            effective(&q, &HintSet::default()).priority,
            Priority::DEFAULT
        );
    }

    #[test]
    fn a_queue_s_readiness_and_its_process_s_time_slicing_reach_the_policies_and_clear() {
        let mut q = HintSet::of(vec![Hint::Readiness {
            ready_permille: 950,
            waiting_permille: 40,
        }]);
        let p = HintSet::of(vec![Hint::TimeSliced]);
        let h = effective(&q, &p);
        assert_eq!(
            h.readiness,
            Some(Readiness {
                ready: 950,
                waiting: 40
            })
        );
        assert!(h.time_sliced);
        // A program that stopped waiting for its queue withdraws what it told.
        q.apply(Hint::Clear(HintKind::Readiness));
        assert_eq!(effective(&q, &p).readiness, None);
        assert!(!effective(&q, &HintSet::default()).time_sliced);
    }

    #[test]
    fn every_hint_the_policies_read_reaches_them() {
        let q = HintSet::of(vec![
            Hint::Deadline {
                deadline_ns: 20_000_000,
            },
            Hint::Upcoming {
                arrives_in_ns: 1_000,
                expires_in_ns: 2_000,
            },
        ]);
        let p = HintSet::of(vec![
            Hint::Utilization { percent: 30 },
            Hint::Deadline { deadline_ns: 1 },
            Hint::Laxity {
                laxity_ns: 5_000,
                lax_priority: WirePriority(2),
                critical_priority: WirePriority(9),
            },
        ]);
        let h = effective(&q, &p);
        assert_eq!(h.deadline, Some(Nanos(20_000_000)), "the queue's wins");
        assert_eq!(h.utilization, Some(Share::percent(30.0).unwrap()));
        assert_eq!(
            h.laxity,
            Some(Laxity {
                laxity: Nanos(5_000),
                critical: Priority::new(9).unwrap()
            })
        );
        assert_eq!(
            h.priority.get(),
            2,
            "the lax priority, with no priority hint"
        );
        assert_eq!(
            h.upcoming, None,
            "announced work is handed over on arrival only"
        );
        let now = Nanos(10_000);
        assert_eq!(
            announced(q.get(HintKind::Upcoming).unwrap(), now),
            Some(Some(Upcoming {
                at: Nanos(11_000),
                expires: Nanos(12_000)
            }))
        );
        assert_eq!(announced(Hint::Clear(HintKind::Upcoming), now), Some(None));
        assert_eq!(announced(Hint::Utilization { percent: 1 }, now), None);
    }

    #[test]
    fn one_hint_per_kind_sorted() {
        let mut s = HintSet::default();
        s.apply(Hint::Utilization { percent: 5 });
        s.apply(Hint::Priority(WirePriority(1)));
        s.apply(Hint::Utilization { percent: 9 });
        assert_eq!(
            s.to_vec(),
            vec![
                Hint::Priority(WirePriority(1)),
                Hint::Utilization { percent: 9 }
            ]
        );
        s.clear(HintKind::Priority);
        assert_eq!(s.to_vec(), vec![Hint::Utilization { percent: 9 }]);
    }
}
