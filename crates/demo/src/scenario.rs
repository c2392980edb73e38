//! The demo's parameters and their validation.

use std::fmt;
use std::str::FromStr;

use baton_core::{LaunchConfig, Level, Nanos};
use baton_sim::SimConfig;

/// An inclusive range of spans, written `LOW-HIGH` (or one value) in the unit the flag names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanRange {
    /// The shortest span.
    pub low: Nanos,
    /// The longest span.
    pub high: Nanos,
}

impl SpanRange {
    /// `low..=high`.
    pub const fn new(low: Nanos, high: Nanos) -> SpanRange {
        SpanRange { low, high }
    }

    /// Always `d`.
    pub const fn fixed(d: Nanos) -> SpanRange {
        SpanRange { low: d, high: d }
    }

    /// Parses `"A-B"` or `"A"` where the numbers count `unit`s.
    pub fn parse(s: &str, unit: Nanos) -> Result<SpanRange, SpanRangeError> {
        let (a, b) = match s.split_once('-') {
            Some((a, b)) => (a, b),
            None => (s, s),
        };
        let num = |x: &str| {
            x.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| *v > 0.0)
                .and_then(|v| Nanos::from_f64_units(v, unit, 1e9).map(|n| (v, n)))
                .ok_or_else(|| SpanRangeError::NotPositive(x.to_string()))
        };
        let ((a, low), (b, high)) = (num(a)?, num(b)?);
        if a > b {
            return Err(SpanRangeError::Reversed { low: a, high: b });
        }
        Ok(SpanRange::new(low, high))
    }

    /// The mean span.
    pub fn mean(&self) -> Nanos {
        Nanos((self.low.0 + self.high.0) / 2)
    }
}

impl fmt::Display for SpanRange {
    /// `20–80 µs` or `1–5 ms`: one unit, the larger that keeps the low end at least 1.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (div, unit) = if self.low >= Nanos::from_millis(1) {
            (1e6, "ms")
        } else {
            (1e3, "µs")
        };
        let v = |n: Nanos| n.0 as f64 / div;
        if self.low == self.high {
            write!(f, "{} {unit}", v(self.low))
        } else {
            write!(f, "{}–{} {unit}", v(self.low), v(self.high))
        }
    }
}

/// A range that does not parse. The message says which end is wrong.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SpanRangeError {
    /// An end is not a positive finite number (within an hour).
    #[error("{0:?} is not a positive number")]
    NotPositive(String),
    /// The ends are the wrong way round.
    #[error("the low end {low} is above the high end {high}")]
    Reversed {
        /// The first number.
        low: f64,
        /// The second.
        high: f64,
    },
}

impl FromStr for SpanRange {
    type Err = SpanRangeError;
    /// Parses microseconds.
    fn from_str(s: &str) -> Result<SpanRange, SpanRangeError> {
        SpanRange::parse(s, Nanos::from_micros(1))
    }
}

/// A demo scenario. [`Scenario::default`] is the documented default.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Kernels per HP request.
    pub hp_kernels: u32,
    /// Duration of each HP kernel, drawn uniformly.
    pub hp_kernel: SpanRange,
    /// One HP request is released every period (open loop: a late request queues).
    pub hp_period: Nanos,
    /// SMs each HP kernel asks for.
    pub hp_sms: u32,
    /// Duration of each BE kernel, drawn uniformly.
    pub be_kernel: SpanRange,
    /// SMs each BE kernel asks for.
    pub be_sms: u32,
    /// BE keeps this many kernels submitted and unfinished.
    pub be_depth: u32,
    /// Length of each phase.
    pub duration: Nanos,
    /// Seed of every random draw.
    pub seed: u64,
    /// Level the Baton phase suspends BE with; `None`: the highest the device offers.
    pub level: Option<Level>,
    /// Launch window of the Baton phase's XQueues.
    pub launch: LaunchConfig,
    /// HP and BE priorities under Baton.
    pub hp_priority: i64,
    /// BE priority under Baton.
    pub be_priority: i64,
    /// The simulated device.
    pub device: SimConfig,
    /// How much of each phase's start goes into a trace.
    pub trace_window: Nanos,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            hp_kernels: 40,
            hp_kernel: SpanRange::new(Nanos::from_micros(20), Nanos::from_micros(80)),
            hp_period: Nanos::from_millis(5),
            hp_sms: 66,
            be_kernel: SpanRange::new(Nanos::from_millis(1), Nanos::from_millis(5)),
            be_sms: 132,
            be_depth: 32,
            duration: Nanos::from_secs(10),
            seed: 1,
            level: None,
            launch: LaunchConfig::default(),
            hp_priority: 10,
            be_priority: 0,
            device: SimConfig::default(),
            trace_window: Nanos::from_millis(100),
        }
    }
}

/// A scenario parameter is out of range. The message names the flag and the valid range.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid demo setting {flag}: {reason}")]
pub struct ScenarioError {
    /// The command-line flag of the parameter.
    pub flag: &'static str,
    /// What is wrong and what is accepted.
    pub reason: String,
}

impl Scenario {
    /// The level the Baton phase uses.
    pub fn effective_level(&self) -> Level {
        self.level.unwrap_or(self.device.max_level)
    }

    /// Checks every parameter; the error names the flag to fix.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let err = |flag, reason: String| Err(ScenarioError { flag, reason });
        let sms = self.device.sm_count;
        if !(1..=100_000).contains(&self.hp_kernels) {
            return err(
                "--hp-kernels",
                format!("{} is not between 1 and 100000", self.hp_kernels),
            );
        }
        if self.hp_period < Nanos::from_micros(10) {
            return err("--hp-period-ms", "must be at least 0.01 ms".into());
        }
        if !(1..=sms).contains(&self.hp_sms) {
            return err(
                "--hp-sms",
                format!(
                    "{} is not between 1 and the device's {sms} SMs",
                    self.hp_sms
                ),
            );
        }
        if !(1..=sms).contains(&self.be_sms) {
            return err(
                "--be-sms",
                format!(
                    "{} is not between 1 and the device's {sms} SMs",
                    self.be_sms
                ),
            );
        }
        if !(1..=100_000).contains(&self.be_depth) {
            return err(
                "--be-depth",
                format!("{} is not between 1 and 100000", self.be_depth),
            );
        }
        if self.duration < Nanos::from_millis(10) || self.duration > Nanos::from_secs(3_600) {
            return err(
                "--duration-s",
                "must be between 0.01 and 3600 seconds".into(),
            );
        }
        if self.hp_kernel.low == Nanos::ZERO || self.be_kernel.low == Nanos::ZERO {
            return err(
                "--hp-kernel-us/--be-kernel-ms",
                "kernel durations must be positive".into(),
            );
        }
        if let Some(l) = self.level {
            if l > self.device.max_level {
                return err(
                    "--level",
                    format!(
                        "{l} is above what the device supports ({})",
                        self.device.max_level
                    ),
                );
            }
        }
        baton_core::Priority::new(self.hp_priority).map_err(|e| ScenarioError {
            flag: "--hp-priority",
            reason: e.to_string(),
        })?;
        baton_core::Priority::new(self.be_priority).map_err(|e| ScenarioError {
            flag: "--be-priority",
            reason: e.to_string(),
        })?;
        if self.device.timeslice < Nanos::from_micros(1) {
            return err("--timeslice-ms", "must be at least 0.001 ms".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_in_their_unit() {
        let r = SpanRange::parse("1-5", Nanos::from_millis(1)).unwrap();
        assert_eq!(
            r,
            SpanRange::new(Nanos::from_millis(1), Nanos::from_millis(5))
        );
        assert_eq!(
            "50".parse::<SpanRange>().unwrap().low,
            Nanos::from_micros(50)
        );
        assert_eq!("0.5-1.5".parse::<SpanRange>().unwrap().high, Nanos(1_500));
        assert_eq!(
            "20-80".parse::<SpanRange>().unwrap().to_string(),
            "20–80 µs"
        );
        assert_eq!(
            SpanRange::parse("1-5", Nanos::from_millis(1))
                .unwrap()
                .to_string(),
            "1–5 ms"
        );
        for bad in ["", "-", "5-1", "a-b", "0", "-3", "1-inf", "nan"] {
            assert!(bad.parse::<SpanRange>().is_err(), "{bad}");
        }
        assert_eq!(
            "80-20".parse::<SpanRange>().unwrap_err().to_string(),
            "the low end 80 is above the high end 20"
        );
        assert_eq!(
            "a-5".parse::<SpanRange>().unwrap_err().to_string(),
            "\"a\" is not a positive number"
        );
    }

    #[test]
    fn the_default_is_valid_and_bad_values_name_their_flag() {
        assert_eq!(Scenario::default().validate(), Ok(()));
        let cases: Vec<(Scenario, &str)> = vec![
            (
                Scenario {
                    hp_kernels: 0,
                    ..Scenario::default()
                },
                "--hp-kernels",
            ),
            (
                Scenario {
                    hp_sms: 500,
                    ..Scenario::default()
                },
                "--hp-sms",
            ),
            (
                Scenario {
                    be_depth: 0,
                    ..Scenario::default()
                },
                "--be-depth",
            ),
            (
                Scenario {
                    duration: Nanos(1),
                    ..Scenario::default()
                },
                "--duration-s",
            ),
            (
                Scenario {
                    hp_priority: 1_000,
                    ..Scenario::default()
                },
                "--hp-priority",
            ),
            (
                Scenario {
                    level: Some(Level::L3),
                    device: SimConfig {
                        max_level: Level::L1,
                        ..SimConfig::default()
                    },
                    ..Scenario::default()
                },
                "--level",
            ),
        ];
        for (s, flag) in cases {
            let e = s.validate().unwrap_err();
            assert_eq!(e.flag, flag);
            assert!(e.to_string().contains(flag));
        }
    }
}
