//! Time as Baton's logic sees it: an injected [`Clock`] returning [`Nanos`].
//!
//! Logic never reads the wall clock itself. Tests and the simulator drive a [`ManualClock`];
//! live processes use a [`MonotonicClock`]. This is what lets a run of simulated seconds
//! finish in milliseconds and give the same numbers every time.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A point in time or a span of time, in nanoseconds.
///
/// As a point it counts from the epoch of the [`Clock`] that produced it; points from different
/// clocks are not comparable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(pub u64);

impl Nanos {
    /// Zero: a clock's epoch, or an empty span.
    pub const ZERO: Nanos = Nanos(0);
    /// The latest representable time; used as "never".
    pub const MAX: Nanos = Nanos(u64::MAX);

    /// `us` microseconds.
    pub const fn from_micros(us: u64) -> Nanos {
        Nanos(us.saturating_mul(1_000))
    }

    /// `ms` milliseconds.
    pub const fn from_millis(ms: u64) -> Nanos {
        Nanos(ms.saturating_mul(1_000_000))
    }

    /// `s` seconds.
    pub const fn from_secs(s: u64) -> Nanos {
        Nanos(s.saturating_mul(1_000_000_000))
    }

    /// `v` times `unit`, rounded to the nanosecond, if `v` is finite and within `0..=max`
    /// (for user input given as a number of milliseconds, seconds…).
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the product is checked to lie within u64's range before the cast"
    )]
    pub fn from_f64_units(v: f64, unit: Nanos, max: f64) -> Option<Nanos> {
        let ns = v * unit.0 as f64;
        (v.is_finite() && (0.0..=max).contains(&v) && ns < u64::MAX as f64)
            .then(|| Nanos(ns.round() as u64))
    }

    /// This span in microseconds, as a float (for reports).
    pub fn as_micros_f64(self) -> f64 {
        self.0 as f64 / 1_000.0
    }

    /// This span in seconds, as a float (for reports).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1_000_000_000.0
    }

    /// `self - earlier`, or zero if `earlier` is later.
    pub fn saturating_sub(self, earlier: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Add for Nanos {
    type Output = Nanos;
    fn add(self, rhs: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for Nanos {
    fn add_assign(&mut self, rhs: Nanos) {
        *self = *self + rhs;
    }
}

impl Sub for Nanos {
    type Output = Nanos;
    /// Saturating: a span never goes negative.
    fn sub(self, rhs: Nanos) -> Nanos {
        self.saturating_sub(rhs)
    }
}

impl From<Duration> for Nanos {
    fn from(d: Duration) -> Nanos {
        Nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

impl From<Nanos> for Duration {
    fn from(n: Nanos) -> Duration {
        Duration::from_nanos(n.0)
    }
}

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.1} µs", self.as_micros_f64())
    }
}

/// A source of the current time.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> Nanos;
}

/// A clock that moves only when told to: virtual time for tests and the simulator.
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicU64,
}

impl ManualClock {
    /// A clock reading `start`.
    pub fn new(start: Nanos) -> ManualClock {
        ManualClock {
            now: AtomicU64::new(start.0),
        }
    }

    /// Moves the clock to `t`. Time never goes backwards: an earlier `t` is ignored.
    pub fn set(&self, t: Nanos) {
        self.now.fetch_max(t.0, Ordering::AcqRel);
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Nanos) {
        self.now.fetch_add(d.0, Ordering::AcqRel);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Nanos {
        Nanos(self.now.load(Ordering::Acquire))
    }
}

/// The process's monotonic clock, counting from the moment the value was created.
///
/// This is the only place in Baton's logic crates that reads real time; everything else
/// receives a `Clock`.
#[derive(Clone, Copy, Debug)]
pub struct MonotonicClock {
    epoch: Instant,
}

impl MonotonicClock {
    /// A clock whose epoch is now.
    pub fn new() -> MonotonicClock {
        MonotonicClock {
            epoch: Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Nanos {
        Nanos::from(self.epoch.elapsed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_never_goes_back() {
        let c = ManualClock::new(Nanos(10));
        c.set(Nanos(5));
        assert_eq!(c.now(), Nanos(10));
        c.advance(Nanos(7));
        assert_eq!(c.now(), Nanos(17));
        c.set(Nanos(100));
        assert_eq!(c.now(), Nanos(100));
    }

    #[test]
    fn spans_saturate() {
        assert_eq!(Nanos(3) - Nanos(5), Nanos::ZERO);
        assert_eq!(Nanos::MAX + Nanos(1), Nanos::MAX);
        assert_eq!(Nanos::from_micros(3), Nanos(3_000));
        assert_eq!(Nanos::from_millis(2).as_micros_f64(), 2_000.0);
        let ms = Nanos::from_millis(1);
        assert_eq!(Nanos::from_f64_units(1.5, ms, 10.0), Some(Nanos(1_500_000)));
        assert_eq!(Nanos::from_f64_units(-1.0, ms, 10.0), None);
        assert_eq!(Nanos::from_f64_units(11.0, ms, 10.0), None);
        assert_eq!(Nanos::from_f64_units(f64::NAN, ms, 10.0), None);
    }
}
