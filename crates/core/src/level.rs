//! Preemption levels: how much of a queue's launched work can be held back.

use std::fmt;
use std::str::FromStr;

use crate::ConfigError;

/// A preemption capability of a hardware queue. Higher levels include the lower ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Progressive launching: at most `threshold` commands in flight; suspending stops further
    /// launches, so preemption waits for the in-flight work.
    L1 = 1,
    /// Deactivate/reactivate: the device also stops *starting* commands already launched.
    L2 = 2,
    /// Interrupt/restore: a running command is stopped, then resumed or safely re-run.
    L3 = 3,
}

impl Level {
    /// Every level, lowest first.
    pub const ALL: [Level; 3] = [Level::L1, Level::L2, Level::L3];

    /// The level as its number (1, 2 or 3).
    pub const fn number(self) -> u8 {
        self as u8
    }
}

impl TryFrom<u8> for Level {
    type Error = ConfigError;
    fn try_from(n: u8) -> Result<Level, ConfigError> {
        match n {
            1 => Ok(Level::L1),
            2 => Ok(Level::L2),
            3 => Ok(Level::L3),
            _ => Err(ConfigError::Level(n.to_string())),
        }
    }
}

impl FromStr for Level {
    type Err = ConfigError;
    /// Accepts `1`, `2`, `3` and `L1`, `L2`, `L3` (any case).
    fn from_str(s: &str) -> Result<Level, ConfigError> {
        let t = s.trim();
        let digits = t.strip_prefix(['L', 'l']).unwrap_or(t);
        digits
            .parse::<u8>()
            .ok()
            .and_then(|n| Level::try_from(n).ok())
            .ok_or_else(|| ConfigError::Level(s.to_string()))
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "L{}", self.number())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numbers_and_names() {
        assert_eq!("1".parse::<Level>().unwrap(), Level::L1);
        assert_eq!("l2".parse::<Level>().unwrap(), Level::L2);
        assert_eq!(" L3 ".parse::<Level>().unwrap(), Level::L3);
        for bad in ["0", "4", "", "L", "two", "-1", "L1.5"] {
            let err = bad.parse::<Level>().unwrap_err();
            assert!(err.to_string().contains("level"), "{bad}: {err}");
        }
    }

    #[test]
    fn levels_are_ordered() {
        assert!(Level::L1 < Level::L2 && Level::L2 < Level::L3);
        assert_eq!(Level::L3.to_string(), "L3");
    }
}
