//! A client during a run: what it has submitted, which jobs are open, what it measured.

use std::collections::VecDeque;

use baton_core::{Nanos, Usage};
use baton_demo::{Job, JobTracker, Route};
use baton_sim::{Completion, SimCommand};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::{ClientSpec, SpanRange, Workload};

pub(crate) struct Client {
    pub(crate) spec: ClientSpec,
    /// How it reaches the device.
    pub(crate) route: Route,
    rng: SmallRng,
    /// Open jobs.
    open: JobTracker,
    next_job: u64,
    /// When the next job is released (periodic, closed loop).
    pub(crate) next_release: Option<Nanos>,
    /// When the next announcement is due.
    pub(crate) next_announce: Option<Nanos>,
    /// A paced job being launched: its tag, the kernels still to launch, the next launch.
    pacing: Option<(u64, u32, Nanos)>,
    outstanding: u32,
    /// Durations of submitted, not yet completed kernels, in stream order.
    durations: VecDeque<Nanos>,
    pub(crate) jobs: Vec<Job>,
    /// Kernel work completed (each kernel's duration alone).
    pub(crate) work: Nanos,
    /// A rank: where it stands at its group's barrier.
    pub(crate) barrier: Barrier,
    /// A rank: busy-wait kernel time completed.
    pub(crate) spin: Nanos,
    /// The command time its scheduler was last told, as a process under the interposer tells
    /// it ([`XQueue::command_time_news`](baton_core::XQueue::command_time_news)).
    pub(crate) told_command_time: Option<Nanos>,
    /// A closed-loop or paced job whose host side is done (all its kernels submitted), or a
    /// loop blocked on its oldest kernel: since when the client has been waiting for it.
    host_done: Option<Nanos>,
    /// At the runner's last look at its readiness: when, and how its program had used its
    /// queue (a job's wait after submitting its last kernel told to the queue, as a program
    /// blocks in a synchronization).
    pub(crate) readiness_mark: (Nanos, Usage),
    /// With a host that reacts late ([`ClientSpec::reacts`]): when it next looks at its queue
    /// after a completion.
    pub(crate) look_at: Option<Nanos>,
}

/// A rank's place at its group's barrier.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Barrier {
    /// Working on a step (or not a rank).
    #[default]
    Working,
    /// Its step is done; it waits for its peers, `spinning` when a busy-wait kernel is out.
    Waiting {
        /// A busy-wait kernel is submitted and unfinished.
        spinning: bool,
    },
    /// Every peer arrived: the next step starts once its busy-wait kernel (if any) is done.
    Passed {
        /// A busy-wait kernel is submitted and unfinished.
        spinning: bool,
    },
}

/// The tag of busy-wait kernels (no job).
const SPIN: u64 = u64::MAX;

fn draw(rng: &mut SmallRng, s: SpanRange) -> Nanos {
    Nanos(rng.random_range(s.low.0..=s.high.0.max(s.low.0)))
}

impl Client {
    pub(crate) fn new(spec: ClientSpec, route: Route, seed: u64, index: u64) -> Client {
        let rng = SmallRng::seed_from_u64(seed ^ (index + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let (next_release, next_announce) = match spec.workload {
            Workload::Periodic {
                offset, announce, ..
            } => (
                Some(offset),
                announce.map(|a| offset.saturating_sub(a.lead)),
            ),
            Workload::ClosedLoop { .. }
            | Workload::Paced { .. }
            | Workload::Ranked { .. }
            | Workload::Looping { .. } => (Some(Nanos::ZERO), None),
            Workload::Flood { .. } => (None, None),
        };
        Client {
            spec,
            route,
            rng,
            open: JobTracker::default(),
            next_job: 0,
            next_release,
            next_announce,
            pacing: None,
            outstanding: 0,
            durations: VecDeque::new(),
            jobs: Vec::new(),
            work: Nanos::ZERO,
            barrier: Barrier::Working,
            spin: Nanos::ZERO,
            told_command_time: None,
            host_done: None,
            readiness_mark: (Nanos::ZERO, Usage::default()),
            look_at: None,
        }
    }

    /// The group of a rank.
    pub(crate) fn group(&self) -> Option<u32> {
        match self.spec.workload {
            Workload::Ranked { group, .. } => Some(group),
            _ => None,
        }
    }

    /// Every peer reached the barrier: the next step may start.
    pub(crate) fn pass(&mut self) {
        if let Barrier::Waiting { spinning } = self.barrier {
            self.barrier = Barrier::Passed { spinning };
        }
    }

    fn submit(&self, cmd: SimCommand) {
        // The simulated device accepts every command; an XQueue refuses only after shutdown.
        let ok = self.route.submit(cmd).is_ok();
        debug_assert!(ok, "a lab client's submission was refused");
    }

    /// Opens a job of `kernels` kernels released at `at`; returns its tag.
    fn open_job(&mut self, at: Nanos, kernels: u32) -> u64 {
        let id = self.next_job;
        self.next_job += 1;
        self.open.release(id, at, kernels);
        id
    }

    fn release(&mut self, at: Nanos, kernels: u32, kernel: SpanRange, sms: u32) {
        let id = self.open_job(at, kernels);
        for _ in 0..kernels {
            self.launch(id, kernel, sms);
        }
    }

    fn launch(&mut self, job: u64, kernel: SpanRange, sms: u32) {
        let d = draw(&mut self.rng, kernel);
        self.durations.push_back(d);
        self.submit(SimCommand::kernel(d, sms).with_tag(job));
    }

    /// When this client next acts on its own (a release, a paced launch, an announcement).
    pub(crate) fn next_action(&self) -> Option<Nanos> {
        [
            self.next_release,
            self.next_announce,
            self.pacing.map(|(_, _, at)| at),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Acts at `t` (before `end`): releases due jobs, tops up floods. Returns whether an
    /// announcement is due now (the runner gives the hint).
    pub(crate) fn act(&mut self, t: Nanos, end: Nanos) -> bool {
        let stop = self.spec.until.unwrap_or(end).min(end);
        let mut announce = false;
        if self.next_announce.is_some_and(|a| a <= t) {
            announce = t < stop;
            self.next_announce = None;
        }
        match self.spec.workload {
            Workload::Periodic {
                period,
                kernels,
                kernel,
                sms,
                announce: ann,
                ..
            } => {
                while let Some(r) = self.next_release.filter(|r| *r <= t) {
                    if r >= stop {
                        self.next_release = None;
                        break;
                    }
                    self.release(r, kernels, kernel, sms);
                    let next = r + period;
                    self.next_release = Some(next);
                    self.next_announce = ann.map(|a| next.saturating_sub(a.lead).max(t));
                }
            }
            Workload::ClosedLoop {
                kernels,
                kernel,
                sms,
                ..
            } => {
                if let Some(r) = self.next_release.filter(|r| *r <= t) {
                    self.next_release = None;
                    if r < stop {
                        self.release(r, kernels, kernel, sms);
                        self.host_done = Some(r);
                    }
                }
            }
            Workload::Paced {
                kernels,
                kernel,
                sms,
                gap,
                ..
            } => {
                if let Some(r) = self.next_release.filter(|r| *r <= t) {
                    self.next_release = None;
                    if r < stop && kernels > 0 {
                        let id = self.open_job(r, kernels);
                        self.pacing = Some((id, kernels, r));
                    }
                }
                while let Some((id, left, at)) = self.pacing.filter(|p| p.2 <= t) {
                    self.launch(id, kernel, sms);
                    self.pacing = (left > 1).then_some((id, left - 1, at + gap));
                    if left == 1 {
                        self.host_done = Some(at);
                    }
                }
            }
            Workload::Ranked {
                kernels,
                kernel,
                sms,
                spin,
                ..
            } => {
                if let Some(r) = self.next_release.filter(|r| *r <= t) {
                    self.next_release = None;
                    if r < stop {
                        self.release(r, kernels, kernel, sms);
                    }
                }
                match self.barrier {
                    Barrier::Waiting { spinning: false } if t < stop => {
                        self.durations.push_back(spin);
                        self.submit(SimCommand::kernel(spin, sms).with_tag(SPIN));
                        self.barrier = Barrier::Waiting { spinning: true };
                    }
                    Barrier::Passed { spinning: false } => {
                        self.barrier = Barrier::Working;
                        if t < stop {
                            self.release(t, kernels, kernel, sms);
                        }
                    }
                    _ => {}
                }
            }
            Workload::Looping {
                depth,
                kernel,
                sms,
                gap,
            } => {
                while let Some(r) = self.next_release.filter(|r| *r <= t) {
                    if r >= stop {
                        self.next_release = None;
                    } else if self.outstanding >= depth {
                        // Blocked on the oldest until it completes (see `completed`).
                        self.next_release = None;
                        self.host_done = Some(r);
                    } else {
                        if self.next_job >= u64::from(depth)
                            && let Some(q) = self.route.queue()
                        {
                            // Its wait on the kernel `depth` launches back, done already.
                            q.waited_for(r, r);
                        }
                        self.outstanding += 1;
                        self.release(r, 1, kernel, sms);
                        self.next_release = Some(r + gap);
                    }
                }
            }
            Workload::Flood { depth, kernel, sms } => {
                if t < stop {
                    while self.outstanding < depth {
                        self.outstanding += 1;
                        self.release(t, 1, kernel, sms);
                    }
                }
            }
        }
        announce
    }

    /// Takes in one of its completions.
    pub(crate) fn completed(&mut self, c: &Completion) {
        let d = self.durations.pop_front().unwrap_or_default();
        if c.tag == SPIN {
            self.spin += d;
            self.barrier = match self.barrier {
                Barrier::Waiting { .. } => Barrier::Waiting { spinning: false },
                Barrier::Passed { .. } | Barrier::Working => Barrier::Passed { spinning: false },
            };
            return;
        }
        self.work += d;
        let Some(job) = self.open.complete(c.tag, c.ended_at) else {
            return;
        };
        self.jobs.push(job);
        match self.spec.workload {
            Workload::Ranked { .. } => self.barrier = Barrier::Waiting { spinning: false },
            Workload::ClosedLoop { think, .. } | Workload::Paced { think, .. } => {
                self.next_release = Some(c.ended_at + think);
                if let Some(h) = self.host_done.take() {
                    if let Some(q) = self.route.queue() {
                        q.waited_for(h, c.ended_at);
                    }
                }
            }
            Workload::Flood { .. } => self.outstanding -= 1,
            Workload::Looping { .. } => {
                self.outstanding -= 1;
                if let Some(h) = self.host_done.take() {
                    // The loop was blocked on its oldest kernel: it goes on now.
                    if let Some(q) = self.route.queue() {
                        q.waited_for(h, c.ended_at);
                    }
                    self.next_release = Some(c.ended_at);
                }
            }
            Workload::Periodic { .. } => {}
        }
    }

    /// Looks at its queue at `t`: always with a host that reacts at once; otherwise only once
    /// its look after a completion is due, or a timer of its queue is.
    pub(crate) fn look(&mut self, t: Nanos) {
        if self.spec.reacts > Nanos::ZERO {
            let timer = self
                .route
                .queue()
                .and_then(|q| q.next_look())
                .is_some_and(|n| n <= t);
            match self.look_at {
                Some(at) if at <= t => self.look_at = None,
                _ if timer => {}
                _ => return,
            }
            // As a launch worker does when it wakes: the first look covers what it launched
            // with a sync point, the second finds the sync point reached if the device is
            // done with them, and launches what waits.
            self.route.poll();
        }
        self.route.poll();
    }

    pub(crate) fn open_jobs(&self) -> usize {
        self.open.open()
    }
}
