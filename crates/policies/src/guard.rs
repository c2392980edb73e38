//! Guard: highest priority first, but lower work is held back only while holding it measurably
//! speeds up the service above it.

use std::collections::BTreeMap;

use baton_core::{Nanos, Priority, XQueueId};

use crate::hpf::{Scope, attention_sparing, rank_first};
use crate::{Decision, DeviceId, Policy, QueuePlan, QueueView, Snapshot};

/// Jobs of the service measured per probe.
pub const GUARD_SAMPLES: usize = 12;
/// A probe that has run this long ends with what it has, once it has [`GUARD_MIN_SAMPLES`].
pub const GUARD_PROBE_MAX: Nanos = Nanos::from_secs(1);
/// The fewest jobs a probe decides on.
pub const GUARD_MIN_SAMPLES: usize = 3;
/// How much slower the service may be beside running lower work before it is held back: the
/// product's goal (×1.05 of standalone latency).
pub const GUARD_TOLERANCE: f64 = 0.05;
/// A slowdown this large is plain from one job: a free probe stops at its first such job, and
/// the hold chosen then stands [`GUARD_GROSS_DWELL`], doubled while confirmed up to
/// [`GUARD_GROSS_DWELL_MAX`]: each free probe costs the service a slow job, and a p99 over a
/// few hundred requests sees every one (measured on the GPU with a 4 s retry).
pub const GUARD_GROSS: f64 = 1.5;
/// How long a hold chosen against a gross slowdown first stands.
pub const GUARD_GROSS_DWELL: Nanos = Nanos::from_secs(30);
/// The longest a hold chosen against a gross slowdown stands.
pub const GUARD_GROSS_DWELL_MAX: Nanos = Nanos::from_secs(240);
/// The shortest time a choice stands before it is measured again; it doubles each time the
/// measurement confirms it, up to [`GUARD_DWELL_MAX`].
pub const GUARD_DWELL_MIN: Nanos = Nanos::from_secs(1);
/// The longest time a choice stands before it is measured again.
pub const GUARD_DWELL_MAX: Nanos = Nanos::from_secs(16);

/// **Guard** — highest priority first where it helps, work-conserving where it does not.
///
/// HPF holds every lower queue back while a higher one is ready. For a launch-bound service (an
/// LLM decoder, small-batch inference) "ready" is nearly always true while the GPU is mostly
/// idle, so HPF starves the lower work for no gain — and where the hardware shares the device
/// well (time slices, spare SMs), lower work running beside the service does not slow it at
/// all. Guard decides from the service's own latency instead of its queue occupancy.
///
/// Per device, the *service* is the queues at the highest priority that has had work; every
/// completed job of theirs (a readiness period, release to completion, which the scheduler
/// measures) is a latency sample. Guard alternates two regimes and measures the service in
/// each: **hold** (HPF on the device) and **free** (nothing on the device is suspended). A
/// *probe* is [`GUARD_SAMPLES`] jobs released under one regime (or [`GUARD_MIN_SAMPLES`] once
/// [`GUARD_PROBE_MAX`] has passed); a hold probe and then a free probe are compared by their
/// median latencies, back to back so that slow drifts of the machine affect both alike. Free
/// is chosen when the service is at most [`GUARD_TOLERANCE`] slower beside the lower work
/// than with it held back, hold otherwise; a free probe ends early, since each slow job it
/// measures costs the service: at a first job [`GUARD_GROSS`] times the hold median, or at
/// two first jobs both slower than it by more than twice the tolerance (and a grossly slower
/// free regime is tried again only after [`GUARD_GROSS_DWELL`], doubling). The choice stands
/// for a dwell of
/// [`GUARD_DWELL_MIN`], doubled each time a new pair of probes confirms it up to
/// [`GUARD_DWELL_MAX`] (and at least four times as long as the pair of probes took, so that
/// probing stays under a fifth of the time for services with long jobs), then is measured
/// again. Meanwhile the service's last
/// [`GUARD_SAMPLES`] jobs are watched, and a median off the hold probe's by more than twice
/// the tolerance measures again at once: above it while free (the lower work changed phase,
/// say), above or below it while holding (the service changed). It starts by probing hold, so
/// a new service is protected first; lower work that pauses and returns finds the choice in
/// force.
///
/// Only samples from jobs during which some lower queue had work count: without a competitor
/// the two regimes are the same and the comparison says nothing.
///
/// Reads: [`Hint::Priority`](crate::Hint::Priority) (range −100..=100, default 0). Reports
/// `free_devices` (devices where lower work now runs beside the service), `probes` (probes
/// completed), `flips` (choices that changed) and `slowdown_permille` (the last free/hold
/// ratio, ×1000).
/// Work-conserving: while free nothing waits, while holding some ready queue runs.
#[derive(Clone, Debug, Default)]
pub struct Guard {
    devices: BTreeMap<DeviceId, Control>,
    /// Each service queue's job count when last seen.
    seen: BTreeMap<XQueueId, u64>,
    probes: u64,
    flips: u64,
    last_ratio: f64,
}

/// Which way a device runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Regime {
    /// HPF: lower queues wait while the service is ready.
    Hold,
    /// Nothing is suspended.
    Free,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Measuring the service under a regime.
    Probe(Regime),
    /// A choice in force until the time given.
    Dwell(Regime, Nanos),
}

/// One device's controller.
#[derive(Clone, Debug)]
struct Control {
    phase: Phase,
    since: Nanos,
    samples: Vec<Nanos>,
    /// The last hold probe's median.
    hold: Option<Nanos>,
    /// The choice last made, and how long it stands.
    choice: Option<Regime>,
    dwell: Nanos,
    /// When the current pair of probes began.
    pair_since: Nanos,
    /// Whether the choice in force was made against a gross slowdown.
    gross: bool,
    /// The service's priority the measurements belong to.
    service: Option<Priority>,
    /// When a lower queue was last seen with work.
    contended_at: Option<Nanos>,
}

impl Control {
    fn new(now: Nanos) -> Control {
        Control {
            phase: Phase::Probe(Regime::Hold),
            since: now,
            samples: Vec::new(),
            hold: None,
            choice: None,
            dwell: GUARD_DWELL_MIN,
            pair_since: now,
            gross: false,
            service: None,
            contended_at: None,
        }
    }

    fn regime(&self) -> Regime {
        match self.phase {
            Phase::Probe(r) | Phase::Dwell(r, _) => r,
        }
    }

    fn enter(&mut self, phase: Phase, now: Nanos) {
        if phase == Phase::Probe(Regime::Hold) {
            self.pair_since = now;
        }
        self.phase = phase;
        self.since = now;
        self.samples.clear();
    }
}

/// The queue `id` of the snapshot, whose queues are in id order.
fn find<'a>(snap: &Snapshot<'a>, id: XQueueId) -> Option<&'a QueueView> {
    snap.queues
        .binary_search_by_key(&id, |q| q.id)
        .ok()
        .map(|i| &snap.queues[i])
}

fn median(v: &mut [Nanos]) -> Nanos {
    v.sort_unstable();
    v[v.len() / 2]
}

impl Guard {
    /// A guard with nothing measured yet.
    pub fn new() -> Guard {
        Guard::default()
    }

    /// Takes in one device's new service jobs and moves its controller on.
    fn observe(&mut self, snap: &Snapshot<'_>, dev: DeviceId) {
        let now = snap.now;
        let Some(top) = snap
            .on_device(dev)
            .filter(|q| q.ready || q.jobs > 0)
            .map(|q| q.hints.priority)
            .max()
        else {
            return;
        };
        let ctl = self.devices.entry(dev).or_insert_with(|| Control::new(now));
        if ctl.service != Some(top) {
            // Another service: what was measured belongs to the old one.
            *ctl = Control::new(now);
            ctl.service = Some(top);
        }
        if snap
            .on_device(dev)
            .any(|q| q.hints.priority < top && q.ready)
        {
            // A competitor back after a pause keeps the choice in force: measuring afresh each
            // time would cost the service a slow job per return (measured on the GPU: a job
            // restarted every second put those jobs into the service's p99). The dwell's end,
            // and the watch on the service's jobs, still measure again.
            ctl.contended_at = Some(now);
        }
        let mut fresh = Vec::new();
        for q in snap.on_device(dev).filter(|q| q.hints.priority == top) {
            let seen = self.seen.entry(q.id).or_insert(q.jobs);
            if q.jobs <= *seen {
                continue;
            }
            *seen = q.jobs;
            let Some(latency) = q.last_job else {
                continue;
            };
            // Completed at `since` if it has stayed idle; at the latest now otherwise.
            let done = if q.ready { now } else { q.since };
            let released = done.saturating_sub(latency);
            let contended = ctl.contended_at.is_some_and(|c| c >= released);
            if released >= ctl.since && contended {
                fresh.push(latency);
            }
        }
        if let Phase::Dwell(r, until) = ctl.phase {
            if now >= until {
                ctl.enter(Phase::Probe(Regime::Hold), now);
                return;
            }
            ctl.samples.extend(fresh);
            let excess = ctl.samples.len().saturating_sub(GUARD_SAMPLES);
            ctl.samples.drain(..excess);
            if let (Some(hold), true) = (ctl.hold, ctl.samples.len() == GUARD_SAMPLES) {
                // Free: the service slowed beside the lower work (it changed phase, say).
                // Hold: the service itself changed (another request shape).
                let m = median(&mut ctl.samples.clone()).0 as f64;
                let h = hold.0 as f64;
                let off = m > h * (1.0 + 2.0 * GUARD_TOLERANCE)
                    || (r == Regime::Hold && m < h * (1.0 - 2.0 * GUARD_TOLERANCE));
                if off {
                    ctl.enter(Phase::Probe(Regime::Hold), now);
                }
            }
            return;
        }
        let Phase::Probe(r) = ctl.phase else {
            return;
        };
        ctl.samples.extend(fresh);
        let n = ctl.samples.len();
        // A free probe whose first jobs are all clearly slower than held stops there: each
        // job it measures costs the service, and the answer is plain.
        let plain = r == Regime::Free
            && ctl.hold.is_some_and(|h| {
                let slower = |k: f64| ctl.samples.iter().all(|s| s.0 as f64 > h.0 as f64 * k);
                (n >= 1 && slower(GUARD_GROSS)) || (n >= 2 && slower(1.0 + 2.0 * GUARD_TOLERANCE))
            });
        let done = plain
            || n >= GUARD_SAMPLES
            || (n >= GUARD_MIN_SAMPLES && now.saturating_sub(ctl.since) >= GUARD_PROBE_MAX);
        if !done {
            return;
        }
        let m = median(&mut ctl.samples);
        self.probes += 1;
        match r {
            Regime::Hold => {
                ctl.hold = Some(m);
                ctl.enter(Phase::Probe(Regime::Free), now);
            }
            Regime::Free => {
                let hold = ctl.hold.unwrap_or(m).0.max(1) as f64;
                let ratio = m.0 as f64 / hold;
                self.last_ratio = ratio;
                let choice = if ratio <= 1.0 + GUARD_TOLERANCE {
                    Regime::Free
                } else {
                    Regime::Hold
                };
                let before = ctl.dwell;
                ctl.dwell = if ctl.choice == Some(choice) {
                    Nanos(ctl.dwell.0.saturating_mul(2)).min(GUARD_DWELL_MAX)
                } else {
                    if ctl.choice.is_some() {
                        self.flips += 1;
                    }
                    GUARD_DWELL_MIN
                };
                let gross = ratio >= GUARD_GROSS;
                if gross {
                    // Running beside the lower work is plainly harmful: try it rarely.
                    ctl.dwell = if ctl.gross {
                        Nanos(before.0.saturating_mul(2)).min(GUARD_GROSS_DWELL_MAX)
                    } else {
                        GUARD_GROSS_DWELL
                    };
                }
                ctl.gross = gross;
                ctl.choice = Some(choice);
                // Probing costs one side or the other: keep it under a fifth of the time
                // however long the service's jobs are.
                let pair = now.saturating_sub(ctl.pair_since);
                let until = now + ctl.dwell.max(Nanos(pair.0.saturating_mul(4)));
                ctl.enter(Phase::Dwell(choice, until), now);
            }
        }
    }
}

impl Policy for Guard {
    fn name(&self) -> &'static str {
        "guard"
    }

    fn decide(&mut self, snap: &Snapshot<'_>) -> Decision {
        let devices = snap.devices();
        for dev in &devices {
            self.observe(snap, *dev);
        }
        self.devices.retain(|d, _| devices.contains(d));
        self.seen.retain(|id, _| find(snap, *id).is_some());
        let mut d = rank_first(snap, Scope::PerDevice, |q| q.hints.priority);
        let free: Vec<DeviceId> = self
            .devices
            .iter()
            .filter(|(_, c)| c.regime() == Regime::Free)
            .map(|(dev, _)| *dev)
            .collect();
        if !free.is_empty() {
            d.suspend
                .retain(|id| find(snap, *id).is_none_or(|q| !free.contains(&q.device)));
        }
        // A dwell ends at its time even if the service stays quiet until then.
        for c in self.devices.values() {
            if let Phase::Dwell(_, until) = c.phase {
                d.wake(until);
            }
        }
        // Every queue that HPF's rank order (which guard holds by, not sparing short
        // commands) ranks against another reports: the higher ones for their jobs' latencies,
        // the lower ones for whether they compete at all.
        d.plans = attention_sparing(snap, false)
            .into_iter()
            .map(|(wants, may_suspend)| QueuePlan {
                report: wants || may_suspend,
                may_suspend,
                ..QueuePlan::DEFAULT
            })
            .collect();
        d
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let free = self
            .devices
            .values()
            .filter(|c| c.regime() == Regime::Free)
            .count() as u64;
        vec![
            ("free_devices", free),
            ("probes", self.probes),
            ("flips", self.flips),
            (
                "slowdown_permille",
                crate::nanos_f64(self.last_ratio * 1000.0).0,
            ),
        ]
    }
}

#[cfg(test)]
mod tests;
