use baton_core::{Nanos, Priority};

use super::*;

/// A service (queue 1, priority 10) and a flood below it (queue 2) on one device, stepped job
/// by job the way the scheduler would show them.
struct Bench {
    hp: QueueView,
    be: QueueView,
    t: Nanos,
    guard: Guard,
}

impl Bench {
    fn new() -> Bench {
        let mut hp = QueueView::new(1, 1, 0, false);
        hp.hints.priority = Priority::new(10).unwrap();
        Bench {
            hp,
            be: QueueView::new(2, 2, 0, true),
            t: Nanos::ZERO,
            guard: Guard::new(),
        }
    }

    fn decide(&mut self) -> Decision {
        let d = self
            .guard
            .decide(&Snapshot::new(self.t, &[self.hp, self.be]));
        self.be.suspended = d.suspends(self.be.id);
        d
    }

    /// One job of the service, taking `ms(held)` milliseconds where `held` says whether the
    /// flood was held back when it was released; answers `held`.
    fn job(&mut self, ms: impl Fn(bool) -> f64) -> bool {
        self.hp.ready = true;
        self.hp.since = self.t;
        let held = self.decide().suspends(self.be.id);
        let latency = crate::nanos_f64(ms(held) * 1e6);
        self.t += latency;
        self.hp.ready = false;
        self.hp.jobs += 1;
        self.hp.last_job = Some(latency);
        self.hp.since = self.t;
        self.decide();
        self.t += Nanos::from_millis(5);
        held
    }

    /// Runs jobs that take `hold` ms while the flood is held back and `free` ms beside it;
    /// answers how many of them held it back.
    fn run(&mut self, jobs: usize, hold: f64, free: f64) -> usize {
        (0..jobs)
            .filter(|_| self.job(|held| if held { hold } else { free }))
            .count()
    }

    fn free_devices(&self) -> u64 {
        self.guard.counters()[0].1
    }
}

#[test]
fn a_new_service_is_protected_first() {
    let mut b = Bench::new();
    assert!(b.job(|_| 10.0), "the first jobs are a hold probe");
}

#[test]
fn lower_work_that_does_not_slow_the_service_runs_beside_it() {
    let mut b = Bench::new();
    // A hold probe, then a free probe in which the service is 2 % slower: within tolerance.
    let held = b.run(2 * GUARD_SAMPLES, 10.0, 10.2);
    assert_eq!(held, GUARD_SAMPLES);
    assert_eq!(b.free_devices(), 1);
    // From now on the flood is not held back while the service runs.
    assert_eq!(b.run(20, 10.0, 10.2), 0);
}

#[test]
fn lower_work_that_slows_the_service_is_held_back() {
    let mut b = Bench::new();
    b.run(2 * GUARD_SAMPLES, 10.0, 13.0);
    assert_eq!(b.free_devices(), 0);
    assert_eq!(b.run(20, 10.0, 13.0), 20);
    let ratio = b.guard.counters()[3].1;
    assert!((1290..=1310).contains(&ratio), "{ratio}");
}

#[test]
fn a_choice_is_measured_again_after_its_dwell_and_lasts_longer_when_confirmed() {
    let mut b = Bench::new();
    b.run(2 * GUARD_SAMPLES, 10.0, 10.0);
    assert_eq!(b.guard.devices[&DeviceId(0)].dwell, GUARD_DWELL_MIN);
    // 15 ms per job: the pair of probes took 360 ms, so the choice stands 1.44 s (four times
    // that), within 100 jobs; a new pair of probes confirms free.
    b.run(100 + 2 * GUARD_SAMPLES, 10.0, 10.0);
    assert_eq!(
        b.guard.devices[&DeviceId(0)].dwell,
        Nanos(GUARD_DWELL_MIN.0 * 2)
    );
    assert!(b.guard.probes >= 4);
    assert_eq!(b.guard.flips, 0);
}

#[test]
fn a_slower_service_while_free_is_measured_again_at_once() {
    let mut b = Bench::new();
    b.run(2 * GUARD_SAMPLES, 10.0, 10.0);
    assert_eq!(b.free_devices(), 1);
    // The flood changes phase: the service is 30 % slower beside it. Within a window of jobs
    // the guard probes again and holds.
    b.run(GUARD_SAMPLES + 2 * GUARD_SAMPLES, 10.0, 13.0);
    assert_eq!(b.free_devices(), 0);
    assert_eq!(b.guard.flips, 1);
}

#[test]
fn without_a_competitor_nothing_is_measured() {
    let mut b = Bench::new();
    b.be.ready = false;
    b.run(3 * GUARD_SAMPLES, 10.0, 10.0);
    assert_eq!(b.guard.probes, 0);
}

#[test]
fn a_new_service_starts_over() {
    let mut b = Bench::new();
    b.run(2 * GUARD_SAMPLES, 10.0, 10.0);
    assert_eq!(b.free_devices(), 1);
    b.hp.hints.priority = Priority::new(20).unwrap();
    assert!(
        b.job(|_| 10.0),
        "a service of another priority is protected first"
    );
}

#[test]
fn a_service_that_changes_while_held_is_measured_again() {
    let mut b = Bench::new();
    b.run(2 * GUARD_SAMPLES, 10.0, 13.0);
    assert_eq!(b.free_devices(), 0);
    let probes = b.guard.probes;
    // Requests twice as long, and now the flood costs them nothing: within a window of jobs
    // the guard measures again and lets it run.
    b.run(GUARD_SAMPLES + 2 * GUARD_SAMPLES, 20.0, 20.0);
    assert!(b.guard.probes >= probes + 2);
    assert_eq!(b.free_devices(), 1);
}

#[test]
fn a_competitor_back_after_a_pause_finds_the_choice_in_force() {
    let mut b = Bench::new();
    b.run(2 * GUARD_SAMPLES, 10.0, 13.0);
    assert_eq!(b.free_devices(), 0);
    let probes = b.guard.probes;
    // The flood stops for two seconds, then starts again: still held, nothing re-measured.
    b.be.ready = false;
    b.decide();
    b.t += Nanos::from_secs(2);
    b.be.ready = true;
    assert!(b.job(|held| if held { 10.0 } else { 13.0 }));
    assert_eq!(b.guard.probes, probes);
}

#[test]
fn a_grossly_harmful_flood_is_tried_again_only_rarely() {
    let mut b = Bench::new();
    // The first free job is twice as slow: the probe stops there and holds for 30 s.
    b.run(GUARD_SAMPLES + 1, 10.0, 20.0);
    assert_eq!(b.free_devices(), 0);
    assert_eq!(b.guard.devices[&DeviceId(0)].dwell, GUARD_GROSS_DWELL);
    // 15 ms per job: 1 900 jobs (28.5 s) later, still no free probe.
    assert_eq!(b.run(1_900, 10.0, 20.0), 1_900);
}
