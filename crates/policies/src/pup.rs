//! Utilization partition per process, with credit.

use std::collections::{BTreeMap, BTreeSet};

use baton_core::Nanos;

use crate::up::normalized_shares;
use crate::{Decision, DeviceId, Policy, Snapshot};

/// How long PUP lets a process hold a device before choosing again, unless a time-slice hint
/// says otherwise.
pub const PUP_DEFAULT_QUANTUM: Nanos = Nanos::from_millis(5);

/// **PUP** — utilization partition per process, unused time carried as credit (XSched's PUP).
///
/// Each process has a share `s` of each device (its
/// [`ProcessHint::Utilization`](crate::ProcessHint::Utilization); unhinted processes split the
/// rest, at least 1 % each; normalized to 100 %). Every process earns credit at `s` per unit
/// of time and spends it by the device time its queues are served, so the credit of a process
/// that got less than its share grows and is paid back later. Per device, the ready process
/// with the most credit holds the device for a quantum `Q` (all its queues run; every other
/// queue on the device is suspended), then the choice is made again; a process that has just
/// become ready with more credit than the holder takes over at once, so that a service using
/// less than its share is served on arrival rather than after the holder's quantum. Credit
/// earned while a process has nothing to run decays with a half-life of `4 Q`: a short pause
/// is made up for, a long absence does not buy a monopoly on return.
///
/// Reads: process `Utilization` (0.1..=100 %), [`GlobalHint::Timeslice`](crate::GlobalHint::Timeslice)
/// as `Q` (100 µs..=1 s, default 5 ms). Work-conserving per device; no ready process starves.
#[derive(Clone, Debug, Default)]
pub struct Pup {
    devices: BTreeMap<DeviceId, Ledger>,
}

#[derive(Clone, Debug, Default)]
struct Ledger {
    last: Option<Nanos>,
    /// Per pid: credit in ns, and the served time of its queues at the last decision.
    credit: BTreeMap<u32, (f64, Nanos)>,
    holder: Option<(u32, Nanos)>,
    /// The processes that were ready at the last decision.
    ready: BTreeSet<u32>,
}

impl Policy for Pup {
    fn name(&self) -> &'static str {
        "pup"
    }

    fn decide(&mut self, snap: &Snapshot<'_>) -> Decision {
        let now = snap.now;
        let quantum = snap.global.timeslice.unwrap_or(PUP_DEFAULT_QUANTUM);
        let half_life = 4.0 * quantum.0 as f64;
        let mut d = Decision::default();
        self.devices
            .retain(|dev, _| snap.on_device(*dev).next().is_some());
        for dev in snap.devices() {
            let mut pids: Vec<u32> = snap.on_device(dev).map(|q| q.pid).collect();
            pids.sort_unstable();
            pids.dedup();
            let shares = normalized_shares(
                &pids
                    .iter()
                    .map(|p| {
                        snap.process(*p)
                            .and_then(|v| v.hints.utilization)
                            .map(crate::Share::fraction)
                    })
                    .collect::<Vec<_>>(),
            );
            let served = |pid: u32| -> Nanos {
                snap.on_device(dev)
                    .filter(|q| q.pid == pid)
                    .fold(Nanos::ZERO, |a, q| a + q.served)
            };
            let ready = |pid: u32| snap.on_device(dev).any(|q| q.pid == pid && q.ready);
            let led = self.devices.entry(dev).or_default();
            let dt = led.last.map_or(0.0, |l| (now - l).0 as f64);
            led.last = Some(now);
            led.credit.retain(|p, _| pids.contains(p));
            for (pid, share) in pids.iter().zip(&shares) {
                let s = served(*pid);
                let (credit, last_served) = led.credit.entry(*pid).or_insert((0.0, s));
                *credit += share * dt - (s - *last_served).0 as f64;
                *last_served = s;
                if !ready(*pid) && *credit > 0.0 {
                    *credit *= (-dt / half_life).exp2();
                }
            }
            let credit = |led: &Ledger, pid: u32| led.credit.get(&pid).map_or(0.0, |c| c.0);
            let arrived = |led: &Ledger, pid: u32| ready(pid) && !led.ready.contains(&pid);
            let keep = led
                .holder
                .filter(|(p, until)| now < *until && ready(*p))
                .map(|(p, _)| p)
                .filter(|&h| {
                    !pids
                        .iter()
                        .any(|&p| p != h && arrived(led, p) && credit(led, p) > credit(led, h))
                });
            let chosen = keep.or_else(|| {
                let mut best: Option<(f64, u32)> = None;
                for pid in pids.iter().copied().filter(|p| ready(*p)) {
                    let c = credit(led, pid);
                    if best.is_none_or(|(b, _)| c > b) {
                        best = Some((c, pid));
                    }
                }
                best.map(|(_, p)| p)
            });
            led.ready = pids.iter().copied().filter(|p| ready(*p)).collect();
            match chosen {
                Some(pid) => {
                    if keep.is_none() {
                        led.holder = Some((pid, now + quantum));
                    }
                    if let Some((_, until)) = led.holder {
                        d.wake(until);
                    }
                    d.suspend
                        .extend(snap.on_device(dev).filter(|q| q.pid != pid).map(|q| q.id));
                }
                None => led.holder = None,
            }
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use baton_core::XQueueId;

    use super::*;
    use crate::{ProcessHint, ProcessHints, ProcessView, QueueView};

    fn procs() -> [ProcessView; 2] {
        let mut h = ProcessHints::default();
        h.apply(ProcessHint::utilization(75.0).unwrap());
        [
            ProcessView {
                pid: 1,
                hints: h,
                ..ProcessView::default()
            },
            ProcessView {
                pid: 2,
                ..ProcessView::default()
            },
        ]
    }

    #[test]
    fn the_process_owed_most_runs_and_idle_credit_decays() {
        let procs = procs();
        let mut p = Pup::default();
        let a = QueueView::new(1, 1, 0, true);
        let b = QueueView::new(2, 2, 0, true);
        let qs = [a, b];
        let s = Snapshot {
            processes: &procs,
            ..Snapshot::new(Nanos::ZERO, &qs)
        };
        let d = p.decide(&s);
        assert_eq!(d.suspend, vec![XQueueId(2)]);
        assert_eq!(d.wake_at, Some(Nanos::from_millis(5)));
        // After 5 ms served by process 1: credits 3.75 − 5 = −1.25 ms and +1.25 ms.
        let qs = [
            QueueView {
                served: Nanos::from_millis(5),
                ..a
            },
            b,
        ];
        let s = Snapshot {
            processes: &procs,
            ..Snapshot::new(Nanos::from_millis(5), &qs)
        };
        assert_eq!(p.decide(&s).suspend, vec![XQueueId(1)]);
        let c = p.devices[&DeviceId(0)].credit[&2].0;
        assert!((c - 1.25e6).abs() < 1.0, "{c}");
        // Process 2 goes idle for a long time: its credit decays instead of piling up.
        let qs = [
            QueueView {
                served: Nanos::from_millis(5),
                ..a
            },
            QueueView { ready: false, ..b },
        ];
        let s = Snapshot {
            processes: &procs,
            ..Snapshot::new(Nanos::from_millis(405), &qs)
        };
        p.decide(&s);
        let c = p.devices[&DeviceId(0)].credit[&2].0;
        assert!(c < 1e6, "{c}");
    }

    #[test]
    fn an_arrival_owed_more_takes_over_before_the_quantum_ends() {
        let procs = procs();
        let mut p = Pup::default();
        let a = QueueView::new(1, 1, 0, true);
        let b = QueueView::new(2, 2, 0, true);
        let at = |t: u64, qs: &[QueueView], p: &mut Pup| {
            let s = Snapshot {
                processes: &procs,
                ..Snapshot::new(Nanos::from_millis(t), qs)
            };
            p.decide(&s).suspend
        };
        // Process 2 holds the device alone, for a quantum ending at 5 ms.
        assert_eq!(
            at(0, &[QueueView { ready: false, ..a }, b], &mut p),
            [XQueueId(1)]
        );
        // At 2 ms process 1 arrives owed 1.5 ms, process 2 owing 1.5 ms: 1 runs at once.
        let b2 = QueueView {
            served: Nanos::from_millis(2),
            ..b
        };
        assert_eq!(at(2, &[a, b2], &mut p), [XQueueId(2)]);
        // Both stay ready: process 1 keeps its quantum.
        let a3 = QueueView {
            served: Nanos::from_millis(1),
            ..a
        };
        assert_eq!(at(3, &[a3, b2], &mut p), [XQueueId(2)]);
    }
}
