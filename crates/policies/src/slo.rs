//! SLO-aware sharing: best-effort work gets as much as the latency target allows.

use std::collections::{BTreeMap, VecDeque};

use baton_core::{Nanos, XQueueId};

use crate::{Decision, Policy, Snapshot};

/// The duty-cycle length unless a time-slice hint says otherwise.
pub const SLO_DEFAULT_CYCLE: Nanos = Nanos::from_millis(1);
/// How many recent jobs of each protected queue the p99 is computed over.
pub const SLO_WINDOW: usize = 200;
/// Jobs between two adjustments of the BE share.
pub const SLO_STEP_JOBS: u64 = 20;
/// The additive step of the BE share.
pub const SLO_STEP: f64 = 0.02;
/// Below this fraction of the target (window p99), the BE share grows.
pub const SLO_GROW: f64 = 0.93;
/// Above this fraction of the target, the BE share shrinks by a step; above the target, it halves.
pub const SLO_BACK_OFF: f64 = 0.97;

/// **SLO** — keeps the p99 job latency of protected queues under their target while giving
/// best-effort queues as much device time as that allows, by feedback.
///
/// Queues with a [`Hint::SloTarget`](crate::Hint::SloTarget) are *protected* (HP); the others
/// are best-effort (BE). Per device, while no protected queue is ready everything runs. While
/// one is, BE queues run only during the first `share` of every duty cycle of length `C` and
/// are suspended for the rest (`share = 0` is HPF, `share = 1` is no protection).
///
/// Feedback, from each protected queue's job latencies (readiness periods, which the
/// scheduler measures), every 20 jobs: with `r` the worst ratio of a protected queue's p99 over
/// its last 200 jobs to its target, `share` halves if `r > 1` (the SLO is violated), drops by
/// 0.02 if `r > 0.97`, grows by 0.02 if `r < 0.93`, and stays otherwise. It starts at 0 — safe
/// — and settles just under the edge of what the target tolerates.
///
/// Reads: `SloTarget` (10 µs..=10 s), [`GlobalHint::Timeslice`](crate::GlobalHint::Timeslice)
/// as `C` (100 µs..=1 s, default 1 ms). Reports `be_share_permille` and `slow_jobs` (jobs over their target).
/// Work-conserving per device in that some ready queue always runs; BE may starve while
/// protected work never pauses.
#[derive(Clone, Debug)]
pub struct Slo {
    share: f64,
    fixed: bool,
    jobs: BTreeMap<XQueueId, (u64, VecDeque<Nanos>)>,
    since_change: u64,
    slow_jobs: u64,
}

impl Default for Slo {
    fn default() -> Self {
        Slo {
            share: 0.0,
            fixed: false,
            jobs: BTreeMap::new(),
            since_change: 0,
            slow_jobs: 0,
        }
    }
}

impl Slo {
    /// The feedback policy, starting from share 0.
    pub fn new() -> Slo {
        Slo::default()
    }

    /// A fixed BE share (0..=1) with no feedback: for measuring what each share yields.
    pub fn fixed(share: f64) -> Slo {
        Slo {
            share: share.clamp(0.0, 1.0),
            fixed: true,
            ..Slo::default()
        }
    }

    /// The BE share in force (0..=1).
    pub fn share(&self) -> f64 {
        self.share
    }

    fn observe(&mut self, snap: &Snapshot<'_>) {
        let mut worst = 0.0f64;
        let mut fresh = 0u64;
        for q in snap.queues {
            let Some(target) = q.hints.slo_target else {
                continue;
            };
            let (seen, window) = self.jobs.entry(q.id).or_insert((q.jobs, VecDeque::new()));
            if q.jobs > *seen {
                fresh += q.jobs - *seen;
                *seen = q.jobs;
                if let Some(l) = q.last_job {
                    if window.len() == SLO_WINDOW {
                        window.pop_front();
                    }
                    window.push_back(l);
                    if l > target {
                        self.slow_jobs += 1;
                    }
                }
            }
            let mut sorted: Vec<Nanos> = window.iter().copied().collect();
            sorted.sort_unstable();
            if !sorted.is_empty() {
                let p = baton_core::percentile(&sorted, 0.99);
                worst = worst.max(p.0 as f64 / target.0 as f64);
            }
        }
        if self.fixed || fresh == 0 {
            return;
        }
        self.since_change += fresh;
        if self.since_change < SLO_STEP_JOBS {
            return;
        }
        self.since_change = 0;
        if worst > 1.0 {
            self.share /= 2.0;
        } else if worst > SLO_BACK_OFF {
            self.share = (self.share - SLO_STEP).max(0.0);
        } else if worst < SLO_GROW {
            self.share = (self.share + SLO_STEP).min(1.0);
        }
        if self.share < 0.01 {
            self.share = 0.0;
        }
    }
}

impl Policy for Slo {
    fn name(&self) -> &'static str {
        "slo"
    }

    fn decide(&mut self, snap: &Snapshot<'_>) -> Decision {
        self.observe(snap);
        let now = snap.now;
        let cycle = snap.global.timeslice.unwrap_or(SLO_DEFAULT_CYCLE).0.max(1);
        let on = crate::nanos_f64(self.share * cycle as f64).0;
        let phase = now.0 % cycle;
        let be_runs = phase < on;
        let mut d = Decision::default();
        for dev in snap.devices() {
            let hp_ready = snap
                .on_device(dev)
                .any(|q| q.ready && q.hints.slo_target.is_some());
            if !hp_ready {
                continue;
            }
            if !be_runs {
                d.suspend.extend(
                    snap.on_device(dev)
                        .filter(|q| q.hints.slo_target.is_none())
                        .map(|q| q.id),
                );
            }
            if on > 0 && on < cycle {
                let next = if be_runs { on } else { cycle };
                d.wake(Nanos(now.0 - phase + next));
            }
        }
        d
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("be_share_permille", crate::nanos_f64(self.share * 1000.0).0),
            ("slow_jobs", self.slow_jobs),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Hint, QueueView};

    fn hp(jobs: u64, last_ms: u64) -> QueueView {
        let mut q = QueueView::new(1, 1, 0, true);
        q.hints.apply(
            Hint::slo_target(Nanos::from_millis(10)).unwrap(),
            Nanos::ZERO,
        );
        q.jobs = jobs;
        q.last_job = Some(Nanos::from_millis(last_ms));
        q
    }

    #[test]
    fn fast_jobs_raise_the_share_and_a_violated_target_halves_it() {
        let be = QueueView::new(2, 2, 0, true);
        let mut p = Slo::new();
        let mut t = Nanos::ZERO;
        for j in 0..=200 {
            t += Nanos::from_micros(50);
            p.decide(&Snapshot::new(t, &[hp(j, 2), be]));
        }
        assert!((p.share() - 0.2).abs() < 1e-9, "{}", p.share());
        // Three jobs over the target (of 200) put the window p99 over it: the share halves.
        for j in 201..=220 {
            p.decide(&Snapshot::new(
                t,
                &[hp(j, if j > 217 { 11 } else { 2 }), be],
            ));
        }
        assert!((p.share() - 0.1).abs() < 1e-9, "{}", p.share());
    }

    #[test]
    fn be_runs_in_the_first_share_of_each_cycle_while_hp_is_ready() {
        let be = QueueView::new(2, 2, 0, true);
        let mut p = Slo::fixed(0.25);
        let d = p.decide(&Snapshot::new(Nanos::from_micros(2_100), &[hp(0, 1), be]));
        assert!(d.suspend.is_empty());
        assert_eq!(d.wake_at, Some(Nanos::from_micros(2_250)));
        let d = p.decide(&Snapshot::new(Nanos::from_micros(2_250), &[hp(0, 1), be]));
        assert_eq!(d.suspend, vec![XQueueId(2)]);
        assert_eq!(d.wake_at, Some(Nanos::from_micros(3_000)));
        let idle = QueueView {
            ready: false,
            ..hp(0, 1)
        };
        assert!(
            p.decide(&Snapshot::new(Nanos::ZERO, &[idle, be]))
                .suspend
                .is_empty()
        );
    }

    #[test]
    fn the_window_p99_is_the_exact_nearest_rank() {
        // The project's percentile, in floating point, picks the same rank as ⌈99n/100⌉ for
        // every window size the policy can have (decisions must not move by one rank).
        for n in 1..=5_000u64 {
            let v: Vec<Nanos> = (1..=n).map(Nanos).collect();
            let rank = (n * 99).div_ceil(100).max(1);
            assert_eq!(baton_core::percentile(&v, 0.99), Nanos(rank), "n = {n}");
        }
    }
}
