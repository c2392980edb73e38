//! Validated configuration values: launch windows and priorities.

use std::fmt;

/// How a Level-1 XQueue paces its launches.
///
/// At most `threshold` commands are in flight on the hardware at once, and a sync point is
/// attached to every `batch`-th launched command so completions are noticed in groups of
/// `batch`. Preemption at Level 1 waits for the in-flight work, so `threshold` bounds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    threshold: u32,
    batch: u32,
}

impl LaunchConfig {
    /// Default in-flight limit.
    pub const DEFAULT_THRESHOLD: u32 = 16;
    /// Default commands between sync points.
    pub const DEFAULT_BATCH: u32 = 8;
    /// The largest accepted in-flight limit.
    pub const MAX_THRESHOLD: u32 = 65_536;

    /// A launch window of `threshold` in-flight commands with a sync point every `batch`.
    ///
    /// Requires `1 ≤ batch ≤ threshold ≤ MAX_THRESHOLD`, and `batch < threshold` unless the
    /// threshold is 1: a sync point on the last command a window admits would stall the
    /// pipeline, except for the strictest window of one command at a time.
    pub fn new(threshold: u32, batch: u32) -> Result<LaunchConfig, ConfigError> {
        if threshold == 0 || threshold > Self::MAX_THRESHOLD {
            return Err(ConfigError::Threshold {
                threshold,
                max: Self::MAX_THRESHOLD,
            });
        }
        let batch_ok = batch >= 1 && (batch < threshold || (threshold == 1 && batch == 1));
        if !batch_ok {
            return Err(ConfigError::Batch { threshold, batch });
        }
        Ok(LaunchConfig { threshold, batch })
    }

    /// The in-flight limit.
    pub const fn threshold(self) -> u32 {
        self.threshold
    }

    /// Commands between sync points.
    pub const fn batch(self) -> u32 {
        self.batch
    }
}

impl Default for LaunchConfig {
    fn default() -> Self {
        LaunchConfig {
            threshold: Self::DEFAULT_THRESHOLD,
            batch: Self::DEFAULT_BATCH,
        }
    }
}

impl fmt::Display for LaunchConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "threshold {} / batch {}", self.threshold, self.batch)
    }
}

/// A scheduling priority: higher is more important.
///
/// The valid range is [`Priority::MIN`]..=[`Priority::MAX`]; [`Priority::new`] rejects values
/// outside it (user input), [`Priority::clamped`] pins them to it (internal arithmetic).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Priority(i32);

impl Priority {
    /// The lowest priority.
    pub const MIN: Priority = Priority(-100);
    /// The highest priority.
    pub const MAX: Priority = Priority(100);
    /// The priority of a queue nobody configured.
    pub const DEFAULT: Priority = Priority(0);

    /// `p`, if it lies within the valid range.
    pub fn new(p: i64) -> Result<Priority, ConfigError> {
        if (i64::from(Self::MIN.0)..=i64::from(Self::MAX.0)).contains(&p) {
            // Within ±100, so the conversion cannot fail.
            Ok(Priority(i32::try_from(p).unwrap_or_default()))
        } else {
            Err(ConfigError::Priority(p))
        }
    }

    /// `p` pinned to the valid range.
    pub fn clamped(p: i64) -> Priority {
        let c = p.clamp(i64::from(Self::MIN.0), i64::from(Self::MAX.0));
        Priority(i32::try_from(c).unwrap_or_default())
    }

    /// The numeric value.
    pub const fn get(self) -> i32 {
        self.0
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_config_validation() {
        assert!(LaunchConfig::new(16, 8).is_ok());
        assert!(LaunchConfig::new(1, 1).is_ok());
        assert!(LaunchConfig::new(2, 1).is_ok());
        for (t, b) in [(0, 0), (4, 4), (4, 5), (4, 0), (65_537, 8), (2, 2)] {
            let err = LaunchConfig::new(t, b).unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains("threshold") || msg.contains("batch"), "{msg}");
        }
        assert_eq!(LaunchConfig::default().threshold(), 16);
        assert_eq!(LaunchConfig::default().batch(), 8);
    }

    #[test]
    fn priority_range() {
        assert_eq!(Priority::new(100).unwrap().get(), 100);
        assert_eq!(Priority::new(-100).unwrap().get(), -100);
        assert!(Priority::new(101).is_err());
        assert!(Priority::new(i64::MIN).is_err());
        assert_eq!(Priority::clamped(1_000), Priority::MAX);
        assert_eq!(Priority::clamped(-1_000), Priority::MIN);
        assert!(Priority::new(3).unwrap() > Priority::new(-3).unwrap());
    }
}

/// A configuration value was out of range. The message names the value and the valid range.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The in-flight threshold was outside its range.
    #[error("invalid threshold {threshold}: it must be between 1 and {max}")]
    Threshold {
        /// The rejected threshold.
        threshold: u32,
        /// The largest accepted threshold.
        max: u32,
    },
    /// The batch size did not fit the threshold.
    #[error(
        "invalid batch {batch} for threshold {threshold}: batch must be at least 1 and smaller \
         than the threshold (threshold 1 takes batch 1)"
    )]
    Batch {
        /// The threshold it was checked against.
        threshold: u32,
        /// The rejected batch size.
        batch: u32,
    },
    /// A preemption level that does not exist.
    #[error(
        "invalid level {0:?}: use 1, 2 or 3 (L1 progressive launch, L2 deactivate, L3 interrupt)"
    )]
    Level(String),
    /// A priority outside the valid range.
    #[error("invalid priority {0}: it must be between -100 and 100 (higher runs first)")]
    Priority(i64),
}
