//! Hints: what applications and operators tell the scheduler about a queue, a process, or the
//! whole machine.
//!
//! Every hint has a documented range and a constructor that validates user input (the CLI, the
//! C API and environment variables go through them); out-of-range values come back as a
//! [`HintError`] saying what was wrong and what is accepted. Each policy documents the hints it
//! reads; the others are kept but ignored, so switching policy never loses them.
//!
//! | hint | scope | range | read by |
//! | --- | --- | --- | --- |
//! | priority | queue | −100..=100 (default 0) | hpf, hhpf, lax, cfs (weight), slo (HP = has a target) |
//! | utilization | queue / process | 0.1..=100 % | up / pup |
//! | deadline | queue | 10 µs..=1 h, relative to each release | kedf |
//! | laxity | queue | 0..=1 h, critical priority −100..=100 | lax |
//! | upcoming work | queue | arrives in 0..=10 s, expires 0..=10 s after | every policy (pre-preemption) |
//! | SLO p99 target | queue | 10 µs..=10 s | slo |
//! | gang | queue (from its process) | any id; equal ids are one job | gang wrapper |
//! | time slice | global | 100 µs..=1 s | up, pup, cfs, mlfq |
//! | k | global | 1..=1024 (default 1) | kedf |
//! | active window | global | a pid, or none | awf |
//! | short command | global | 0..=1 s (0: none is short) | hpf |
//! | command time | queue (measured by its process) | 1 ns..=1 h | hpf and the policies built on its rank order |
//! | readiness | queue (measured by its process) | 0..=1000 ‰ ready, 0..=1000 ‰ waiting | hpf and the policies built on its rank order |
//! | time-sliced | queue (from its process) | — | hpf and the policies built on its rank order |

use baton_core::{Nanos, Priority};

/// A share of a device's time, in thousandths (1..=1000).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Share(u16);

impl Share {
    /// The whole device.
    pub const FULL: Share = Share(1000);

    /// `percent` % of the device: 0.1..=100, in steps of 0.1.
    pub fn percent(percent: f64) -> Result<Share, HintError> {
        let permille = percent * 10.0;
        if !(percent.is_finite() && (0.1..=100.0).contains(&percent)) {
            return Err(HintError(format!(
                "invalid utilization {percent}%: it must be between 0.1 and 100 (percent of the \
                 device's time)"
            )));
        }
        // Within 1..=1000 after the check above.
        let permille = crate::nanos_f64(permille.round()).0;
        Ok(Share(u16::try_from(permille).unwrap_or(1000)))
    }

    /// The share as a fraction of 1.
    pub fn fraction(self) -> f64 {
        f64::from(self.0) / 1000.0
    }

    /// The share in thousandths.
    pub fn permille(self) -> u16 {
        self.0
    }
}

/// How a queue's program used it over a measuring period, in thousandths of the period: how
/// long the queue had work (`ready`) and how long the program was blocked waiting for that
/// work (`waiting`). See [`Hint::Readiness`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Readiness {
    /// Thousandths of the period the queue had work (0..=1000).
    pub ready: u16,
    /// Thousandths of the period its program waited for the queue's work (0..=1000).
    pub waiting: u16,
}

impl Readiness {
    /// A queue ready at least this share of the time (‰) and ...
    pub const LAUNCH_BOUND_READY: u16 = 750;
    /// ... whose program waits for it at most this share (‰) is bound by its own launching.
    pub const LAUNCH_BOUND_WAITING: u16 = 300;

    /// The readiness over `period`, from the time the queue had work (`ready`) and the time its
    /// program waited for it (`waited`) during the period; `None` for an empty period. Each
    /// share is capped at the whole period.
    pub fn over(ready: Nanos, waited: Nanos, period: Nanos) -> Option<Readiness> {
        if period.0 == 0 {
            return None;
        }
        let permille = |t: Nanos| -> u16 {
            let p = u128::from(t.0.min(period.0)) * 1000 / u128::from(period.0);
            u16::try_from(p).unwrap_or(1000)
        };
        Some(Readiness {
            ready: permille(ready),
            waiting: permille(waited),
        })
    }

    /// Whether the queue is bound by its program's launching rather than by the device: it has
    /// work nearly all the time ([`Readiness::LAUNCH_BOUND_READY`]) while its program rarely
    /// waits for it ([`Readiness::LAUNCH_BOUND_WAITING`]). An LLM decoder's token loop is: its
    /// stream has a command queued from the first launch of a token to the synchronization
    /// that ends it, and that wait is short, as the device is idle most of the time.
    pub fn launch_bound(self) -> bool {
        self.ready >= Self::LAUNCH_BOUND_READY && self.waiting <= Self::LAUNCH_BOUND_WAITING
    }
}

/// A laxity hint: a job may wait `laxity` after it is released; then its queue runs at
/// `critical` priority until the job completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Laxity {
    /// How long a released job may wait at its normal priority.
    pub laxity: Nanos,
    /// Its priority once the laxity has expired.
    pub critical: Priority,
}

/// Work announced ahead of time (pre-preemption): the queue expects work at `at`; if none has
/// arrived by `expires`, the announcement lapses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Upcoming {
    /// When the work is expected.
    pub at: Nanos,
    /// When the announcement lapses if no work came.
    pub expires: Nanos,
}

impl Upcoming {
    /// Whether the announcement still holds at `now`.
    pub fn live(&self, now: Nanos) -> bool {
        now < self.expires
    }
}

/// The job a process belongs to, across processes and devices: the ranks of one distributed
/// job share it (see [`Gangs`](crate::Gangs)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GangId(pub u64);

impl GangId {
    /// The gang called `name` (`BATON_GANG`, a Slurm job step, a rendezvous): a 64-bit FNV-1a
    /// hash of its bytes, so every process derives the same id from the same name.
    pub fn of_name(name: &str) -> GangId {
        GangId(name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        }))
    }
}

/// A hint about one queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hint {
    /// Scheduling priority, higher runs first (−100..=100).
    Priority(Priority),
    /// The queue's share of its device's time (utilization partition).
    Utilization(Share),
    /// Each job (a period of readiness) should complete within this span of its release.
    Deadline(Nanos),
    /// After waiting this long, a job runs at a critical priority.
    Laxity(Laxity),
    /// Work arrives in `in_` and the announcement expires `grace` after that if none came.
    Upcoming {
        /// How far ahead the work is announced.
        in_: Nanos,
        /// How long after the expected arrival the announcement stays in force.
        grace: Nanos,
    },
    /// Keep this queue's p99 job latency under this target.
    SloTarget(Nanos),
    /// The queue's process belongs to this gang (one job's ranks, held back together).
    Gang(GangId),
    /// The queue's kernels run on this many SMs, which other processes' work is kept off
    /// (`--sms` under MPS): another process's work gains nothing from holding it back.
    Isolated(u32),
    /// The queue's context is time-sliced against other processes' and gives the GPU up
    /// within this slice whenever a more urgent queue exists (its own context, no MPS): the
    /// priority policies hold it back only for another process's work that keeps the device
    /// busy, not for a program bound by its own launching.
    Yielding(Nanos),
    /// The queue's kernels keep to this many SMs whenever a more urgent queue exists (under
    /// MPS, `--yield`), leaving the rest to the other processes' kernels, and use the whole
    /// device otherwise: another process's work gains little from holding it back.
    Confining(u32),
    /// How long one of the queue's commands takes on the device while it keeps the device
    /// busy, as its process measured it ([`XQueue::command_time`]): a measurement, not a
    /// wish, sent again when it changes.
    ///
    /// [`XQueue::command_time`]: baton_core::XQueue::command_time
    CommandTime(Nanos),
    /// How the queue's program used it over its last measuring period, as its process measured
    /// it: a measurement, sent again when it changes.
    Readiness(Readiness),
    /// The queue's context is time-sliced against other processes' (its own context, no MPS)
    /// and its process neither yields nor asks to be held. No built-in policy reads it (HPF
    /// holds such a queue back as any other; [`Hint::Yielding`] is how a queue gives the
    /// device up by its slice).
    TimeSliced,
}

const HOUR: Nanos = Nanos::from_secs(3_600);
const TEN_S: Nanos = Nanos::from_secs(10);

fn span(what: &str, v: Nanos, min: Nanos, max: Nanos) -> Result<Nanos, HintError> {
    if v < min || v > max {
        return Err(HintError(format!(
            "invalid {what} {v}: it must be between {min} and {max}"
        )));
    }
    Ok(v)
}

impl Hint {
    /// A priority hint from user input: −100..=100, higher runs first.
    pub fn priority(p: i64) -> Result<Hint, HintError> {
        Priority::new(p)
            .map(Hint::Priority)
            .map_err(|e| HintError(e.to_string()))
    }

    /// A utilization share: 0.1..=100 % of the device's time.
    pub fn utilization(percent: f64) -> Result<Hint, HintError> {
        Share::percent(percent).map(Hint::Utilization)
    }

    /// A relative deadline: 10 µs..=1 h after each release.
    pub fn deadline(d: Nanos) -> Result<Hint, HintError> {
        span("deadline", d, Nanos::from_micros(10), HOUR).map(Hint::Deadline)
    }

    /// A laxity of 0..=1 h, then `critical` priority (−100..=100).
    pub fn laxity(laxity: Nanos, critical: i64) -> Result<Hint, HintError> {
        let laxity = span("laxity", laxity, Nanos::ZERO, HOUR)?;
        let critical = Priority::new(critical).map_err(|e| HintError(e.to_string()))?;
        Ok(Hint::Laxity(Laxity { laxity, critical }))
    }

    /// Work expected in `in_` (0..=10 s); the hint lapses `grace` (0..=10 s) after that if no
    /// work arrived.
    pub fn upcoming(in_: Nanos, grace: Nanos) -> Result<Hint, HintError> {
        let in_ = span("upcoming-work lead time", in_, Nanos::ZERO, TEN_S)?;
        let grace = span("upcoming-work grace", grace, Nanos::ZERO, TEN_S)?;
        Ok(Hint::Upcoming { in_, grace })
    }

    /// A measured command time: 1 ns..=1 h.
    pub fn command_time(t: Nanos) -> Result<Hint, HintError> {
        span("command time", t, Nanos(1), HOUR).map(Hint::CommandTime)
    }

    /// A p99 latency target: 10 µs..=10 s.
    pub fn slo_target(p99: Nanos) -> Result<Hint, HintError> {
        span("SLO target", p99, Nanos::from_micros(10), TEN_S).map(Hint::SloTarget)
    }
}

/// A hint about a whole process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessHint {
    /// The process's share of each device's time (per-process utilization partition).
    Utilization(Share),
}

impl ProcessHint {
    /// A per-process utilization share: 0.1..=100 %.
    pub fn utilization(percent: f64) -> Result<ProcessHint, HintError> {
        Share::percent(percent).map(ProcessHint::Utilization)
    }
}

/// A hint about the whole scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GlobalHint {
    /// The period over which shares are enforced, or the base quantum (100 µs..=1 s).
    Timeslice(Nanos),
    /// How many earliest-deadline queues run at once (1..=1024).
    K(u32),
    /// The process owning the focused window, or none.
    ActiveWindow(Option<u32>),
    /// Commands measured shorter than this are short (HPF's
    /// [`SHORT_COMMAND`](crate::SHORT_COMMAND) unless given; zero: none is).
    ShortCommand(Nanos),
    /// How long a queue that finished its work still counts as having work, so that lower
    /// work stays held across the gaps of a service's bursts (zero: not at all; see
    /// [`PrePreempt`](crate::PrePreempt)).
    Linger(Nanos),
}

impl GlobalHint {
    /// A time slice of 100 µs..=1 s.
    pub fn timeslice(t: Nanos) -> Result<GlobalHint, HintError> {
        span(
            "time slice",
            t,
            Nanos::from_micros(100),
            Nanos::from_secs(1),
        )
        .map(GlobalHint::Timeslice)
    }

    /// The short-command bound: 0..=1 s (zero: no command is short).
    pub fn short_command(t: Nanos) -> Result<GlobalHint, HintError> {
        span("short-command bound", t, Nanos::ZERO, Nanos::from_secs(1))
            .map(GlobalHint::ShortCommand)
    }

    /// The linger: 0..=100 ms (zero: none).
    pub fn linger(t: Nanos) -> Result<GlobalHint, HintError> {
        span("linger", t, Nanos::ZERO, Nanos::from_millis(100)).map(GlobalHint::Linger)
    }

    /// k of k-EDF: 1..=1024.
    pub fn k(k: i64) -> Result<GlobalHint, HintError> {
        u32::try_from(k)
            .ok()
            .filter(|k| (1..=1024).contains(k))
            .map(GlobalHint::K)
            .ok_or_else(|| HintError(format!("invalid k {k}: it must be between 1 and 1024")))
    }

    /// The focused window's process (`0` is not a process; use `None` for no focus).
    pub fn active_window(pid: Option<i64>) -> Result<GlobalHint, HintError> {
        match pid {
            None => Ok(GlobalHint::ActiveWindow(None)),
            Some(p) => u32::try_from(p)
                .ok()
                .filter(|p| *p > 0)
                .map(|p| GlobalHint::ActiveWindow(Some(p)))
                .ok_or_else(|| {
                    HintError(format!(
                        "invalid active-window pid {p}: it must be a positive process id"
                    ))
                }),
        }
    }
}

/// A hint was out of range. The message says which value and what range.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HintError(pub String);

/// The hints currently in force for one queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueHints {
    /// Its priority (default 0).
    pub priority: Priority,
    /// Its utilization share, if given.
    pub utilization: Option<Share>,
    /// Its relative deadline, if given.
    pub deadline: Option<Nanos>,
    /// Its laxity, if given.
    pub laxity: Option<Laxity>,
    /// Announced work, if any is pending.
    pub upcoming: Option<Upcoming>,
    /// Its p99 latency target, if given.
    pub slo_target: Option<Nanos>,
    /// The gang its process belongs to, if any.
    pub gang: Option<GangId>,
    /// The SMs its kernels are confined to, away from other processes' work, if they are.
    pub isolated: Option<u32>,
    /// Its context's time slice while outranked, if it yields the GPU by time slice.
    pub yielding: Option<Nanos>,
    /// The SMs its kernels keep to while outranked, if it yields SMs that way.
    pub confining: Option<u32>,
    /// How long one of its commands takes on the device while it keeps the device busy, once
    /// its process has measured it.
    pub command_time: Option<Nanos>,
    /// How its program used it over its last measuring period, once its process has measured
    /// it.
    pub readiness: Option<Readiness>,
    /// Whether its context is time-sliced against other processes' and it neither yields nor
    /// asks to be held.
    pub time_sliced: bool,
}

impl QueueHints {
    /// Default hints with priority `p`.
    pub fn with_priority(p: Priority) -> QueueHints {
        QueueHints {
            priority: p,
            ..QueueHints::default()
        }
    }

    /// Applies `hint` given at `now`, replacing an earlier hint of the same kind.
    pub fn apply(&mut self, hint: Hint, now: Nanos) {
        match hint {
            Hint::Priority(p) => self.priority = p,
            Hint::Utilization(s) => self.utilization = Some(s),
            Hint::Deadline(d) => self.deadline = Some(d),
            Hint::Laxity(l) => self.laxity = Some(l),
            Hint::Upcoming { in_, grace } => {
                self.upcoming = Some(Upcoming {
                    at: now + in_,
                    expires: now + in_ + grace,
                });
            }
            Hint::SloTarget(t) => self.slo_target = Some(t),
            Hint::Gang(g) => self.gang = Some(g),
            Hint::Isolated(sms) => self.isolated = Some(sms),
            Hint::Yielding(slice) => self.yielding = Some(slice),
            Hint::Confining(sms) => self.confining = Some(sms),
            Hint::CommandTime(t) => self.command_time = Some(t),
            Hint::Readiness(r) => self.readiness = Some(r),
            Hint::TimeSliced => self.time_sliced = true,
        }
    }
}

/// The hints in force for one process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessHints {
    /// Its utilization share, if given.
    pub utilization: Option<Share>,
}

impl ProcessHints {
    /// Applies `hint`, replacing an earlier hint of the same kind.
    pub fn apply(&mut self, hint: ProcessHint) {
        match hint {
            ProcessHint::Utilization(s) => self.utilization = Some(s),
        }
    }
}

/// The scheduler-wide hints in force.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GlobalHints {
    /// The time slice, if given (each policy has its own default).
    pub timeslice: Option<Nanos>,
    /// k of k-EDF, if given (default 1).
    pub k: Option<u32>,
    /// The focused window's process.
    pub active_window: Option<u32>,
    /// The short-command bound, if given.
    pub short_command: Option<Nanos>,
    /// The linger, if given.
    pub linger: Option<Nanos>,
}

impl GlobalHints {
    /// Applies `hint`, replacing an earlier hint of the same kind.
    pub fn apply(&mut self, hint: GlobalHint) {
        match hint {
            GlobalHint::Timeslice(t) => self.timeslice = Some(t),
            GlobalHint::K(k) => self.k = Some(k),
            GlobalHint::ActiveWindow(p) => self.active_window = p,
            GlobalHint::ShortCommand(t) => self.short_command = Some(t),
            GlobalHint::Linger(t) => self.linger = Some(t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_accept_their_ranges_and_explain_rejections() {
        assert!(Hint::priority(100).is_ok());
        assert!(Hint::utilization(0.1).is_ok() && Hint::utilization(100.0).is_ok());
        assert_eq!(Share::percent(37.5).unwrap().permille(), 375);
        assert!(Hint::deadline(Nanos::from_micros(10)).is_ok());
        assert!(Hint::laxity(Nanos::ZERO, 100).is_ok());
        assert!(Hint::upcoming(Nanos::from_secs(10), Nanos::ZERO).is_ok());
        assert!(Hint::slo_target(Nanos::from_millis(5)).is_ok());
        assert!(GlobalHint::timeslice(Nanos::from_millis(10)).is_ok());
        assert_eq!(GlobalHint::k(3), Ok(GlobalHint::K(3)));
        assert!(GlobalHint::active_window(None).is_ok());
        let bad: Vec<(Result<(), HintError>, &str)> = vec![
            (Hint::priority(101).map(drop), "priority"),
            (Hint::utilization(0.0).map(drop), "utilization"),
            (Hint::utilization(f64::NAN).map(drop), "utilization"),
            (Hint::utilization(150.0).map(drop), "between 0.1 and 100"),
            (Hint::deadline(Nanos(5)).map(drop), "deadline"),
            (Hint::laxity(Nanos::ZERO, 500).map(drop), "priority"),
            (Hint::laxity(Nanos::from_secs(4000), 1).map(drop), "laxity"),
            (
                Hint::upcoming(Nanos::from_secs(11), Nanos::ZERO).map(drop),
                "lead time",
            ),
            (Hint::slo_target(Nanos(1)).map(drop), "SLO target"),
            (GlobalHint::timeslice(Nanos(10)).map(drop), "time slice"),
            (GlobalHint::k(0).map(drop), "between 1 and 1024"),
            (GlobalHint::k(-5).map(drop), "k"),
            (GlobalHint::active_window(Some(0)).map(drop), "pid"),
            (ProcessHint::utilization(-1.0).map(drop), "utilization"),
        ];
        for (r, needle) in bad {
            let msg = r.unwrap_err().to_string();
            assert!(msg.contains(needle), "{msg} lacks {needle}");
        }
    }

    #[test]
    fn upcoming_work_is_anchored_at_the_time_it_is_given() {
        let mut h = QueueHints::default();
        h.apply(
            Hint::upcoming(Nanos::from_micros(500), Nanos::from_micros(100)).unwrap(),
            Nanos::from_millis(1),
        );
        let u = h.upcoming.unwrap();
        assert_eq!(u.at, Nanos::from_micros(1_500));
        assert_eq!(u.expires, Nanos::from_micros(1_600));
        assert!(u.live(Nanos::from_micros(1_599)) && !u.live(u.expires));
    }
}
