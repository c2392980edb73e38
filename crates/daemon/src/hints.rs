//! Hints as the daemon keeps them: the wire hints in force for each scope, and what the
//! policy sees of them.
//!
//! A queue's hint of a kind wins over its process's, which wins over the default. Every wire
//! hint is kept (and listed) whether or not the running policy reads it, so switching policy
//! loses none; [`effective`] converts the ones the policies' API knows.

use baton_core::Priority;
use baton_policies::QueueHints;
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

    /// The hints, by kind.
    pub(crate) fn to_vec(&self) -> Vec<Hint> {
        self.0.clone()
    }
}

/// What the policy sees for a queue with hints `queue` in a process with hints `process`.
#[allow(
    clippy::needless_update,
    reason = "QueueHints grows a field per hint kind the policies read"
)]
pub(crate) fn effective(queue: &HintSet, process: &HintSet) -> QueueHints {
    QueueHints {
        priority: queue
            .priority()
            .or_else(|| process.priority())
            .unwrap_or(Priority::DEFAULT),
        ..QueueHints::default()
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
