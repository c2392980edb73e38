//! Baton's C ABI, as both libraries that export it share it.
//!
//! The ABI (`include/baton.h`) is exported twice, with the same symbols:
//!
//! - by the interposer (`libbaton_interposer.so`), which `baton run` preloads: the real
//!   implementation, acting on the process's queues;
//! - by `libbaton.so` (crate `baton-libbaton`), which a program links against: every call
//!   answers [`BATON_ERR_NOT_LOADED`] there. A preloaded library's symbols come first in the
//!   dynamic linker's lookup order, so a program started under `baton run` reaches the
//!   interposer's, and one started without it gets a clear error instead of a crash or a
//!   missing symbol. Python's package reaches the same symbols in the process (`ctypes`).
//!
//! This crate holds what both need: the `#[repr(C)]` types, the error codes and their messages,
//! the ABI version, and the checks that turn a caller's [`BatonHint`] into a validated
//! [`Request`].
//!
//! Versioning: [`BATON_ABI_VERSION_MAJOR`] changes when a symbol or a type changes
//! incompatibly; [`BATON_ABI_VERSION_MINOR`] when something is added. A caller compares
//! `baton_abi_version() >> 16` with the major it was compiled against.

use std::ffi::{CStr, c_char};

use baton_core::{Nanos, Priority};
use baton_policies::{Hint as PolicyHint, QueueHints};
use baton_protocol::{Hint as WireHint, HintKind, WirePriority};

/// The ABI's major version: incompatible changes.
pub const BATON_ABI_VERSION_MAJOR: u32 = 1;
/// The ABI's minor version: additions.
pub const BATON_ABI_VERSION_MINOR: u32 = 0;
/// `baton_abi_version()`'s answer: major in the high 16 bits, minor in the low 16.
pub const BATON_ABI_VERSION: u32 = (BATON_ABI_VERSION_MAJOR << 16) | BATON_ABI_VERSION_MINOR;

/// `baton_get_stream_own_priority`'s answer for a stream with no priority of its own.
pub const BATON_NO_PRIORITY: i32 = i32::MIN;

/// Success.
pub const BATON_OK: i32 = 0;
/// Baton is not loaded in this process (it was not started under `baton run`).
pub const BATON_ERR_NOT_LOADED: i32 = 1;
/// Baton is loaded but switched off (`BATON_ENABLE=off`).
pub const BATON_ERR_DISABLED: i32 = 2;
/// Baton is loaded but could not open the CUDA driver; nothing is scheduled.
pub const BATON_ERR_NO_DRIVER: i32 = 3;
/// An argument is invalid: a null pointer, an unknown hint kind.
pub const BATON_ERR_INVALID_ARGUMENT: i32 = 4;
/// A value is out of its range (a priority outside −100..=100, a deadline over an hour…).
pub const BATON_ERR_OUT_OF_RANGE: i32 = 5;
/// The stream is not a live CUDA stream, or a default stream was named with no current
/// context on the calling thread.
pub const BATON_ERR_UNKNOWN_STREAM: i32 = 6;
/// A scheduler suspends and resumes this process's queues; the application may only when it
/// schedules them itself (`BATON_SCHEDULER=app`).
pub const BATON_ERR_NOT_APP_MANAGED: i32 = 7;
/// The application schedules its queues itself (`BATON_SCHEDULER=app`): priorities and hints
/// have no scheduler to go to.
pub const BATON_ERR_APP_MANAGED: i32 = 8;
/// The caller's buffer holds fewer entries than there are; the count says how many.
pub const BATON_ERR_BUFFER_TOO_SMALL: i32 = 9;
/// Baton failed inside; the process goes on unchanged.
pub const BATON_ERR_INTERNAL: i32 = 10;

/// Hint kind (`BatonHint::kind`): each job of the stream should finish within `value_ns` of its release (10 µs..=1 h).
pub const BATON_HINT_DEADLINE: u32 = 1;
/// Hint kind: reserve `percent` % of the device's time (0.1..=100; whole percents in global mode).
pub const BATON_HINT_UTILIZATION: u32 = 2;
/// Hint kind: after waiting `value_ns` (0..=1 h), a job runs at `priority` (the critical priority).
pub const BATON_HINT_LAXITY: u32 = 3;
/// Hint kind: work arrives in `value_ns` (0..=10 s); the hint lapses `until_ns` after that if none came
/// (0..=10 s): pre-preemption starts making room before the work arrives.
pub const BATON_HINT_UPCOMING: u32 = 4;
/// OR-ed with a hint kind: removes the hint of that kind instead of giving one.
pub const BATON_HINT_CLEAR: u32 = 0x100;

/// Scheduler (`BatonStatus::scheduler`): the application suspends and resumes its queues itself.
pub const BATON_SCHEDULER_APP: u32 = 1;
/// Scheduler: a policy on a thread of this process.
pub const BATON_SCHEDULER_LOCAL: u32 = 2;
/// Scheduler: the daemon, over every process.
pub const BATON_SCHEDULER_GLOBAL: u32 = 3;

/// Stream kind (`BatonQueue::kind`): a context's legacy default stream.
pub const BATON_STREAM_LEGACY: u32 = 1;
/// Stream kind: a thread's per-thread default stream.
pub const BATON_STREAM_PER_THREAD: u32 = 2;
/// Stream kind: a stream the application created.
pub const BATON_STREAM_REGULAR: u32 = 3;

/// A hint about a stream's work or the whole process's. Fields a kind does not use are
/// ignored (set them to zero).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BatonHint {
    /// `BATON_HINT_*`, optionally OR-ed with `BATON_HINT_CLEAR`.
    pub kind: u32,
    /// Laxity: the critical priority (−100..=100).
    pub priority: i32,
    /// Deadline, laxity or upcoming lead time, in nanoseconds.
    pub value_ns: u64,
    /// Upcoming: how long after the expected arrival the hint stays, in nanoseconds.
    pub until_ns: u64,
    /// Utilization, in percent of the device's time.
    pub percent: f64,
}

/// The process as Baton runs it (`baton_status`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BatonStatus {
    /// `BATON_ABI_VERSION` of the library that answered.
    pub abi_version: u32,
    /// `BATON_SCHEDULER_*`.
    pub scheduler: u32,
    /// The process's priority (`BATON_PRIORITY`, or `baton_set_process_priority`).
    pub process_priority: i32,
    /// The preemption level asked for (1–3; a queue may use less: see its `level`).
    pub level: u32,
    /// Queues (streams) Baton schedules in this process.
    pub queues: u32,
    /// Of those, how many are held suspended now.
    pub suspended_queues: u32,
    /// 1 when connected to the daemon (global scheduling), else 0.
    pub connected: u32,
    /// The local policy's name (local scheduling), NUL-terminated; empty otherwise.
    pub policy: [c_char; 32],
}

impl Default for BatonStatus {
    fn default() -> BatonStatus {
        BatonStatus {
            abi_version: BATON_ABI_VERSION,
            scheduler: 0,
            process_priority: 0,
            level: 0,
            queues: 0,
            suspended_queues: 0,
            connected: 0,
            policy: [0; 32],
        }
    }
}

impl BatonStatus {
    /// Sets [`BatonStatus::policy`] to `name`, cut to fit with its terminating NUL.
    pub fn set_policy(&mut self, name: &str) {
        self.policy = [0; 32];
        for (d, s) in self.policy.iter_mut().zip(name.bytes().take(31)) {
            *d = s as c_char;
        }
    }
}

/// One of the process's queues (`baton_queues`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct BatonQueue {
    /// The stream's handle as the application names it (1 for a legacy default stream).
    pub stream: u64,
    /// Its context's handle.
    pub context: u64,
    /// Its device's ordinal in this process.
    pub device: i32,
    /// `BATON_STREAM_*`.
    pub kind: u32,
    /// The priority its work is scheduled at now.
    pub priority: i32,
    /// The preemption level it uses (1–3).
    pub level: u32,
    /// 1 if held suspended now.
    pub suspended: u32,
    /// 1 if it has unfinished work.
    pub ready: u32,
    /// Commands submitted so far.
    pub submitted: u64,
    /// Commands known complete.
    pub completed: u64,
    /// Commands held back, not yet given to the driver.
    pub pending: u64,
    /// Commands given to the driver, not known complete.
    pub in_flight: u64,
}

/// What each error code means, as `baton_error_message` returns it.
pub fn error_message(code: i32) -> &'static CStr {
    match code {
        BATON_OK => c"success",
        BATON_ERR_NOT_LOADED => {
            c"Baton is not loaded in this process: start the program with `baton run -- PROGRAM`"
        }
        BATON_ERR_DISABLED => c"Baton is loaded but switched off (BATON_ENABLE=off)",
        BATON_ERR_NO_DRIVER => {
            c"Baton is loaded but could not open the CUDA driver; nothing is scheduled"
        }
        BATON_ERR_INVALID_ARGUMENT => c"invalid argument (a null pointer or an unknown hint kind)",
        BATON_ERR_OUT_OF_RANGE => {
            c"a value is out of range (priorities are -100..=100; see baton_last_error)"
        }
        BATON_ERR_UNKNOWN_STREAM => {
            c"not a live CUDA stream (or a default stream named with no current context)"
        }
        BATON_ERR_NOT_APP_MANAGED => {
            c"a scheduler manages this process's queues; suspending them yourself needs BATON_SCHEDULER=app"
        }
        BATON_ERR_APP_MANAGED => {
            c"this process schedules its queues itself (BATON_SCHEDULER=app): priorities and hints have no effect"
        }
        BATON_ERR_BUFFER_TOO_SMALL => c"the buffer is too small; the count says how many entries there are",
        BATON_ERR_INTERNAL => c"internal error in Baton; the process goes on unchanged",
        _ => c"unknown error code",
    }
}

/// A refused call: its code and what exactly was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// `BATON_ERR_*`.
    pub code: i32,
    /// One line for `baton_last_error`.
    pub detail: String,
}

impl Refusal {
    /// A refusal with code `code` and `detail`.
    pub fn new(code: i32, detail: impl Into<String>) -> Refusal {
        Refusal {
            code,
            detail: detail.into(),
        }
    }

    /// The refusal for code `code`, detailed by its general message.
    pub fn plain(code: i32) -> Refusal {
        Refusal::new(code, error_message(code).to_string_lossy())
    }
}

/// A priority from the caller: −100..=100.
pub fn priority(p: i32) -> Result<Priority, Refusal> {
    Priority::new(i64::from(p)).map_err(|_| {
        Refusal::new(
            BATON_ERR_OUT_OF_RANGE,
            format!("priority {p} is out of range: it must be between -100 and 100, higher first"),
        )
    })
}

/// A hint a caller gave, validated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Request {
    /// Give this hint.
    Give(PolicyHint),
    /// Remove the hint of this kind.
    Clear(HintKind),
}

impl Request {
    /// Checks `h` against each kind's documented range.
    pub fn from_c(h: &BatonHint) -> Result<Request, Refusal> {
        let range = |e: baton_policies::HintError| Refusal::new(BATON_ERR_OUT_OF_RANGE, e.0);
        let clear = h.kind & BATON_HINT_CLEAR != 0;
        let kind = match h.kind & !BATON_HINT_CLEAR {
            BATON_HINT_DEADLINE => HintKind::Deadline,
            BATON_HINT_UTILIZATION => HintKind::Utilization,
            BATON_HINT_LAXITY => HintKind::Laxity,
            BATON_HINT_UPCOMING => HintKind::Upcoming,
            other => {
                return Err(Refusal::new(
                    BATON_ERR_INVALID_ARGUMENT,
                    format!(
                        "unknown hint kind {other}: use BATON_HINT_DEADLINE (1), _UTILIZATION (2), _LAXITY (3) or _UPCOMING (4)"
                    ),
                ));
            }
        };
        if clear {
            return Ok(Request::Clear(kind));
        }
        let hint = match kind {
            HintKind::Deadline => PolicyHint::deadline(Nanos(h.value_ns)).map_err(range)?,
            HintKind::Utilization => PolicyHint::utilization(h.percent).map_err(range)?,
            HintKind::Laxity => {
                PolicyHint::laxity(Nanos(h.value_ns), i64::from(h.priority)).map_err(range)?
            }
            _ => PolicyHint::upcoming(Nanos(h.value_ns), Nanos(h.until_ns)).map_err(range)?,
        };
        Ok(Request::Give(hint))
    }

    /// Whether this announces work (a hint for now, not one to keep for queues made later).
    pub fn is_announcement(&self) -> bool {
        matches!(self, Request::Give(PolicyHint::Upcoming { .. }))
    }

    /// The hint as the daemon takes it; `priority` is the scope's priority now (a laxity hint
    /// carries the priority its work has while lax).
    pub fn to_wire(self, priority: Priority) -> WireHint {
        match self {
            Request::Clear(k) => WireHint::Clear(k),
            Request::Give(h) => match h {
                PolicyHint::Priority(p) => WireHint::Priority(WirePriority::from(p)),
                PolicyHint::Utilization(s) => WireHint::Utilization {
                    // The wire counts whole percents: 0.1..=0.9 % becomes 1 %.
                    percent: u8::try_from(s.permille().div_ceil(10)).unwrap_or(100),
                },
                PolicyHint::Deadline(d) => WireHint::Deadline { deadline_ns: d.0 },
                PolicyHint::Laxity(l) => WireHint::Laxity {
                    laxity_ns: l.laxity.0,
                    lax_priority: WirePriority::from(priority.min(l.critical)),
                    critical_priority: WirePriority::from(l.critical),
                },
                PolicyHint::Upcoming { in_, grace } => WireHint::Upcoming {
                    arrives_in_ns: in_.0,
                    expires_in_ns: in_.0.saturating_add(grace.0).max(1),
                },
                PolicyHint::SloTarget(_) => WireHint::Clear(HintKind::Deadline),
                PolicyHint::Gang(g) => WireHint::Gang { id: g.0 },
                PolicyHint::Isolated(sms) => WireHint::Isolated { sms },
                PolicyHint::Yielding(s) => WireHint::Yielding { slice_ns: s.0 },
                PolicyHint::Confining(sms) => WireHint::Confining { sms },
                PolicyHint::CommandTime(t) => WireHint::CommandTime { command_ns: t.0 },
                PolicyHint::Readiness(r) => WireHint::Readiness {
                    ready_permille: r.ready,
                    waiting_permille: r.waiting,
                },
                PolicyHint::TimeSliced => WireHint::TimeSliced,
            },
        }
    }

    /// Applies the request to a queue's hints at `now` (local scheduling).
    pub fn apply(self, hints: &mut QueueHints, now: Nanos) {
        match self {
            Request::Give(h) => hints.apply(h, now),
            Request::Clear(k) => match k {
                HintKind::Deadline => hints.deadline = None,
                HintKind::Utilization => hints.utilization = None,
                HintKind::Laxity => hints.laxity = None,
                HintKind::Upcoming => hints.upcoming = None,
                HintKind::Priority => hints.priority = Priority::DEFAULT,
                _ => {}
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_its_own_message() {
        let codes = [
            BATON_OK,
            BATON_ERR_NOT_LOADED,
            BATON_ERR_DISABLED,
            BATON_ERR_NO_DRIVER,
            BATON_ERR_INVALID_ARGUMENT,
            BATON_ERR_OUT_OF_RANGE,
            BATON_ERR_UNKNOWN_STREAM,
            BATON_ERR_NOT_APP_MANAGED,
            BATON_ERR_APP_MANAGED,
            BATON_ERR_BUFFER_TOO_SMALL,
            BATON_ERR_INTERNAL,
        ];
        let messages: std::collections::HashSet<&CStr> =
            codes.iter().map(|c| error_message(*c)).collect();
        assert_eq!(messages.len(), codes.len());
        assert_eq!(error_message(99), c"unknown error code");
        assert!(
            error_message(BATON_ERR_NOT_LOADED)
                .to_str()
                .unwrap()
                .contains("baton run")
        );
    }

    #[test]
    fn priorities_outside_the_range_are_refused_with_the_range() {
        assert_eq!(priority(100).unwrap().get(), 100);
        assert_eq!(priority(-100).unwrap().get(), -100);
        let r = priority(101).unwrap_err();
        assert_eq!(r.code, BATON_ERR_OUT_OF_RANGE);
        assert!(r.detail.contains("-100 and 100"), "{}", r.detail);
    }

    #[test]
    fn hints_are_checked_and_converted() {
        let deadline = BatonHint {
            kind: BATON_HINT_DEADLINE,
            value_ns: 20_000_000,
            ..BatonHint::default()
        };
        let r = Request::from_c(&deadline).unwrap();
        assert_eq!(r, Request::Give(PolicyHint::Deadline(Nanos(20_000_000))));
        assert_eq!(
            r.to_wire(Priority::DEFAULT),
            WireHint::Deadline {
                deadline_ns: 20_000_000
            }
        );
        let too_short = BatonHint {
            value_ns: 5,
            ..deadline
        };
        assert_eq!(
            Request::from_c(&too_short).unwrap_err().code,
            BATON_ERR_OUT_OF_RANGE
        );
        let upcoming = BatonHint {
            kind: BATON_HINT_UPCOMING,
            value_ns: 2_000_000,
            until_ns: 3_000_000,
            ..BatonHint::default()
        };
        let r = Request::from_c(&upcoming).unwrap();
        assert_eq!(
            r.to_wire(Priority::DEFAULT),
            WireHint::Upcoming {
                arrives_in_ns: 2_000_000,
                expires_in_ns: 5_000_000
            }
        );
        let mut h = QueueHints::default();
        r.apply(&mut h, Nanos(1_000));
        assert_eq!(h.upcoming.unwrap().at, Nanos(2_001_000));
        Request::from_c(&BatonHint {
            kind: BATON_HINT_UPCOMING | BATON_HINT_CLEAR,
            ..BatonHint::default()
        })
        .unwrap()
        .apply(&mut h, Nanos(2_000));
        assert_eq!(h.upcoming, None);
        let util = BatonHint {
            kind: BATON_HINT_UTILIZATION,
            percent: 0.5,
            ..BatonHint::default()
        };
        assert_eq!(
            Request::from_c(&util).unwrap().to_wire(Priority::DEFAULT),
            WireHint::Utilization { percent: 1 }
        );
        let unknown = BatonHint {
            kind: 42,
            ..BatonHint::default()
        };
        assert_eq!(
            Request::from_c(&unknown).unwrap_err().code,
            BATON_ERR_INVALID_ARGUMENT
        );
        let lax = BatonHint {
            kind: BATON_HINT_LAXITY,
            priority: 50,
            value_ns: 1_000_000,
            ..BatonHint::default()
        };
        assert_eq!(
            Request::from_c(&lax)
                .unwrap()
                .to_wire(Priority::new(10).unwrap()),
            WireHint::Laxity {
                laxity_ns: 1_000_000,
                lax_priority: WirePriority(10),
                critical_priority: WirePriority(50)
            }
        );
    }

    #[test]
    fn the_policy_name_is_cut_to_fit() {
        let mut s = BatonStatus::default();
        s.set_policy(&"x".repeat(40));
        assert_eq!(s.policy[30], b'x' as c_char);
        assert_eq!(s.policy[31], 0);
        s.set_policy("hpf");
        assert_eq!(s.policy[3], 0);
    }
}
