//! Gangs: the processes of one multi-GPU job held back and resumed together.

use std::collections::{BTreeSet, HashMap};

use crate::{Decision, GangId, Policy, QueuePlan, QueueView, Snapshot};

/// **Gangs** — wraps a policy so the queues of a gang (every queue whose
/// [`QueueHints::gang`](crate::QueueHints::gang) is the same: the ranks of one distributed
/// job, on whatever devices) are held back and resumed together.
///
/// The ranks of a data- or tensor-parallel job meet in collectives at every step: a rank whose
/// queues are suspended on one device stops every other rank at the next collective, and
/// those ranks' communication kernels spin on their own devices meanwhile, holding devices the
/// scheduler means to hand out. So:
///
/// 1. the wrapped policy decides as usual;
/// 2. a gang is **held** when the decision suspends any of its queues (a queue some queue
///    outranks on its device, under HPF) while the gang has work (one of its queues is
///    ready);
/// 3. if any gang is held, the wrapped policy decides again on the same snapshot with the held
///    gangs' queues shown as idle, so that what else runs on the devices they leave (another
///    job, a lower best-effort client) is chosen as if they were not there; every queue of a
///    held gang is then suspended.
///
/// A gang runs again as soon as no queue of it would be suspended on its own: in the first
/// decision after the higher work is done.
///
/// Ranks that give way by themselves (a process that yields by time slice, keeps its kernels
/// to part of the SMs while outranked, or is isolated: the default on a time-sliced GPU, and
/// `--yield` under MPS) are never held for the gang and never make it held: such a rank gives
/// way on its own device only (the wrapped policy may hold a yielding one there while more
/// urgent work keeps that device busy), and keeps the answer the wrapped policy gives it
/// there. Told that it may be suspended because another rank is outranked
/// elsewhere, it would give its own device away (a short slice, fewer SMs) to whatever runs
/// beside it there, lower work included: a low-priority flood beside one rank cut the whole
/// job's steps (measured in `docs/MULTI_GPU.md`).
///
/// Queues without a gang are decided as the wrapped policy decides them (step 3 only frees
/// their devices of held gangs). The wrapped policy is asked twice in a decision that holds a
/// gang, so policies that keep per-decision state see the second (masked) call last.
///
/// Reads: [`Hint::Gang`](crate::Hint::Gang) and whatever the wrapped policy reads. Select it
/// as `gang:NAME` in the registry, or with the daemon's `--gang together`.
pub struct Gangs<P> {
    inner: P,
    /// Decisions that held a gang back (the counter `gang_holds`).
    held: u64,
}

impl<P: Policy> Gangs<P> {
    /// `inner`, with gangs held back together.
    pub fn new(inner: P) -> Gangs<P> {
        Gangs { inner, held: 0 }
    }
}

/// The gangs of `snap` that `d` holds back: a queue of the gang that can be held
/// ([`holdable`]) suspended while one is ready.
fn held(snap: &Snapshot<'_>, d: &Decision) -> BTreeSet<GangId> {
    let mut busy = BTreeSet::new();
    let mut stopped = BTreeSet::new();
    for q in snap.queues {
        if let Some(g) = q.hints.gang {
            if snap.wants(q) {
                busy.insert(g);
            }
            if holdable(q) && d.suspends(q.id) {
                stopped.insert(g);
            }
        }
    }
    busy.intersection(&stopped).copied().collect()
}

/// Whether a gang hold reaches `q`: it does not yield by time slice, confine its kernels or
/// run isolated (see [`Gangs`]).
fn holdable(q: &QueueView) -> bool {
    q.hints.isolated.is_none() && q.hints.confining.is_none() && q.hints.yielding.is_none()
}

/// The gang of `queue`, when a gang hold reaches it.
fn holdable_gang(queue: &QueueView) -> Option<GangId> {
    queue.hints.gang.filter(|_| holdable(queue))
}

impl<P: Policy> Policy for Gangs<P> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn decide(&mut self, snap: &Snapshot<'_>) -> Decision {
        let mut first = self.inner.decide(snap);
        first.plans = gang_plans(snap, &first);
        let gangs = held(snap, &first);
        if gangs.is_empty() {
            return first;
        }
        self.held += 1;
        let in_held = |q: &QueueView| holdable_gang(q).is_some_and(|g| gangs.contains(&g));
        let masked: Vec<QueueView> = snap
            .queues
            .iter()
            .map(|q| {
                let mut q = *q;
                if in_held(&q) {
                    q.ready = false;
                    q.hints.upcoming = None;
                }
                q
            })
            .collect();
        let again = Snapshot {
            queues: &masked,
            ..*snap
        };
        let mut d = self.inner.decide(&again);
        d.suspend
            .retain(|id| !snap.queues.iter().any(|q| q.id == *id && in_held(q)));
        d.suspend
            .extend(snap.queues.iter().filter(|q| in_held(q)).map(|q| q.id));
        d.wake_at = match (first.wake_at, d.wake_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // Planned for the situation as it is, not as the second decision was shown it.
        d.plans = first.plans;
        d
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let mut c = self.inner.counters();
        c.push(("gang_holds", self.held));
        c
    }
}

/// The wrapped policy's plans (`inner`'s) for a gang's queues: a gang's queues report if any
/// of them would, or may stop (any can decide whether the gang is held); a gang's queue that a
/// hold reaches may stop whenever any such queue of its gang may; holds and re-measuring as
/// the wrapped policy says of the queue itself (were its commands measured long, it, and so
/// its whole gang, could stop).
fn gang_plans(snap: &Snapshot<'_>, inner: &Decision) -> Vec<QueuePlan> {
    let mut per_gang: HashMap<GangId, (bool, bool)> = HashMap::new();
    for (i, q) in snap.queues.iter().enumerate() {
        if let Some(g) = q.hints.gang {
            let p = inner.plan(i);
            let e = per_gang.entry(g).or_default();
            e.0 |= p.report || p.may_suspend;
            e.1 |= p.may_suspend && holdable(q);
        }
    }
    snap.queues
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let own = inner.plan(i);
            match q.hints.gang.and_then(|g| per_gang.get(&g)) {
                Some(&(report, may_suspend)) if holdable(q) => QueuePlan {
                    report,
                    may_suspend,
                    ..own
                },
                Some(&(report, _)) => QueuePlan { report, ..own },
                None => own,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use baton_core::{Nanos, Priority, XQueueId};

    use super::*;
    use crate::{Hint, Hpf};

    fn rank(id: u64, pid: u32, device: u32, ready: bool) -> QueueView {
        let mut q = QueueView::new(id, pid, device, ready);
        q.hints.apply(Hint::Gang(GangId(7)), Nanos::ZERO);
        q
    }

    /// What `g` plans for each queue of `snap`: (report, may suspend).
    fn att(g: &mut Gangs<Hpf>, snap: &Snapshot<'_>) -> Vec<(bool, bool)> {
        let d = g.decide(snap);
        (0..snap.queues.len())
            .map(|i| (d.plan(i).report, d.plan(i).may_suspend))
            .collect()
    }

    fn sorted(mut v: Vec<XQueueId>) -> Vec<XQueueId> {
        v.sort_unstable();
        v
    }

    #[test]
    fn a_gang_is_held_on_every_device_while_one_rank_is_outranked() {
        let mut hp = QueueView::new(1, 10, 0, true);
        hp.hints.priority = Priority::new(10).unwrap();
        let r0 = rank(2, 20, 0, true);
        let r1 = rank(3, 21, 1, true);
        let mut filler = QueueView::new(4, 30, 1, true);
        filler.hints.priority = Priority::new(-10).unwrap();
        let queues = [hp, r0, r1, filler];
        let snap = Snapshot::new(Nanos::ZERO, &queues);
        // Alone, HPF holds rank 0 and the filler beside rank 1.
        assert_eq!(
            sorted(Hpf.decide(&snap).suspend),
            [XQueueId(2), XQueueId(4)]
        );
        // As a gang, both ranks stop and the filler gets device 1.
        let mut g = Gangs::new(Hpf);
        assert_eq!(sorted(g.decide(&snap).suspend), [XQueueId(2), XQueueId(3)]);
        assert_eq!(g.counters(), [("gang_holds", 1)]);
        // Rank 1 must keep reporting and its window: it can be stopped through rank 0.
        assert!(!Hpf.may_suspend(&snap, &r1));
        assert_eq!(att(&mut g, &snap)[2], (true, true));
    }

    #[test]
    fn ranks_that_give_way_by_themselves_do_so_on_their_own_device_only() {
        // Every process yields by time slice (the default on a time-sliced GPU), each measured
        // bound by its own launching: the service outranks rank 0 on device 0; on device 1
        // rank 1 outranks a priority -10 filler.
        let bound = Some(crate::Readiness {
            ready: 950,
            waiting: 40,
        });
        let yielding = |mut q: QueueView| {
            q.hints.yielding = Some(Nanos::from_micros(100));
            q.hints.readiness = bound;
            q
        };
        let mut hp = QueueView::new(1, 10, 0, true);
        hp.hints.priority = Priority::new(10).unwrap();
        hp.hints.readiness = bound;
        let mut filler = yielding(QueueView::new(4, 30, 1, true));
        filler.hints.priority = Priority::new(-10).unwrap();
        let queues = [
            hp,
            yielding(rank(2, 20, 0, true)),
            yielding(rank(3, 21, 1, true)),
            filler,
        ];
        let snap = Snapshot::new(Nanos::ZERO, &queues);
        let mut g = Gangs::new(Hpf);
        // Nothing is held: each gives way through the GPU.
        assert!(g.decide(&snap).suspend.is_empty());
        assert_eq!(g.counters(), [("gang_holds", 0)]);
        // Once the service is measured keeping its device busy while it has work, HPF holds
        // rank 0 there too, but rank 0 still makes no gang hold: rank 1 keeps device 1.
        let mut busy = queues;
        busy[0].hints.readiness = Some(crate::Readiness {
            ready: 300,
            waiting: 280,
        });
        let snap = Snapshot::new(Nanos::ZERO, &busy);
        assert_eq!(sorted(g.decide(&snap).suspend), [XQueueId(2)]);
        assert_eq!(g.counters(), [("gang_holds", 0)]);
        // Rank 0 gives way to the service; rank 1 keeps its device from the filler, which
        // gives way to it (it need not report: nothing it does changes a decision). Rank 1
        // still reports, as a gang's queues do.
        let planned = att(&mut g, &snap);
        assert_eq!(planned[1], (true, true));
        assert_eq!(planned[2], (true, false));
        assert_eq!(planned[3], (false, true));
        // A rank held back (not yielding) beside a yielding one: the held one still stops
        // with its gang, and the yielding one never makes the gang held.
        let mut held_rank = rank(3, 21, 1, true);
        held_rank.hints.priority = Priority::new(0).unwrap();
        held_rank.hints.readiness = bound;
        let queues = [hp, yielding(rank(2, 20, 0, true)), held_rank, filler];
        let snap = Snapshot::new(Nanos::ZERO, &queues);
        assert!(g.decide(&snap).suspend.is_empty());
        assert_eq!(att(&mut g, &snap)[2], (true, false));
        // The other way round: the held rank is outranked, so the gang is held, but the
        // hold reaches only the rank it can stop; the yielding one keeps GPU 1.
        let queues = [
            hp,
            rank(2, 20, 0, true),
            yielding(rank(3, 21, 1, true)),
            filler,
        ];
        let snap = Snapshot::new(Nanos::ZERO, &queues);
        assert_eq!(sorted(g.decide(&snap).suspend), [XQueueId(2)]);
        assert_eq!(att(&mut g, &snap)[2], (true, false));
    }

    #[test]
    fn a_gang_runs_again_once_nothing_outranks_it() {
        let hp = {
            let mut q = QueueView::new(1, 10, 0, false);
            q.hints.priority = Priority::new(10).unwrap();
            q
        };
        let queues = [hp, rank(2, 20, 0, true), rank(3, 21, 1, true)];
        let mut g = Gangs::new(Hpf);
        assert!(
            g.decide(&Snapshot::new(Nanos::ZERO, &queues))
                .suspend
                .is_empty()
        );
        // Queues of other gangs, and of none, are left to the wrapped policy.
        let mut other = rank(5, 40, 2, true);
        other.hints.gang = Some(GangId(8));
        let lone = QueueView::new(6, 41, 2, true);
        let mut hp2 = QueueView::new(7, 42, 0, true);
        hp2.hints.priority = Priority::new(10).unwrap();
        let queues = [hp2, rank(2, 20, 0, true), rank(3, 21, 1, true), other, lone];
        let d = g.decide(&Snapshot::new(Nanos::ZERO, &queues));
        assert_eq!(sorted(d.suspend), [XQueueId(2), XQueueId(3)]);
    }
}
