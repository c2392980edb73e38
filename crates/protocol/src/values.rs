//! Identifiers and scalar values the messages share, with their conversions to the core types.
//!
//! Wire values are plain numbers so that every message decodes first and is validated after,
//! with an error naming the field. Converting to a core type ([`Level`], [`Priority`],
//! [`LaunchConfig`]) goes through the core's own validators, so each range is defined once.

use std::fmt;
use std::str::FromStr;

use baton_core::{LaunchConfig, Level, Priority, XQueueId};
use serde::{Deserialize, Serialize};

use crate::{MAX_LABEL_LEN, ProtocolError, check};

/// A queue as its agent numbers it: the process's [`XQueueId`]. Unique within one process and
/// never reused while it lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct QueueId(pub u64);

impl From<XQueueId> for QueueId {
    fn from(q: XQueueId) -> QueueId {
        QueueId(q.0)
    }
}

impl From<QueueId> for XQueueId {
    fn from(q: QueueId) -> XQueueId {
        XQueueId(q.0)
    }
}

impl fmt::Display for QueueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "q{}", self.0)
    }
}

/// A connection as the daemon numbers it (given in [`Welcome`](crate::Welcome)); never reused
/// while the daemon runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClientId(pub u64);

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "client {}", self.0)
    }
}

/// A queue anywhere on the machine: the process that owns it and its id there. Written
/// `PID:qN` (`4242:q3`); [`FromStr`] also takes `PID:N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct QueueRef {
    /// The owning process, as the daemon sees it.
    pub pid: u32,
    /// The queue within it.
    pub queue: QueueId,
}

impl QueueRef {
    /// Checks the pid.
    pub fn validate(&self) -> Result<(), ProtocolError> {
        check::pid("pid", self.pid)
    }
}

impl fmt::Display for QueueRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.pid, self.queue)
    }
}

impl FromStr for QueueRef {
    type Err = ProtocolError;
    fn from_str(s: &str) -> Result<QueueRef, ProtocolError> {
        let bad = || {
            ProtocolError::invalid(
                "queue",
                format!(
                    "{s:?} is not a queue: write PID:qN as `baton list` shows it, e.g. 4242:q3"
                ),
            )
        };
        let (pid, q) = s.trim().split_once(':').ok_or_else(bad)?;
        let pid = pid.parse::<u32>().map_err(|_| bad())?;
        let q = q.strip_prefix(['q', 'Q']).unwrap_or(q);
        let queue = QueueId(q.parse::<u64>().map_err(|_| bad())?);
        let r = QueueRef { pid, queue };
        r.validate()?;
        Ok(r)
    }
}

/// A preemption level on the wire: 1, 2 or 3 (see [`Level`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WireLevel(pub u8);

impl WireLevel {
    /// Checks that the number names a level.
    pub fn validate(self) -> Result<(), ProtocolError> {
        Level::try_from(self).map(drop)
    }
}

impl From<Level> for WireLevel {
    fn from(l: Level) -> WireLevel {
        WireLevel(l.number())
    }
}

impl TryFrom<WireLevel> for Level {
    type Error = ProtocolError;
    fn try_from(l: WireLevel) -> Result<Level, ProtocolError> {
        Level::try_from(l.0).map_err(|e| ProtocolError::invalid("level", e.to_string()))
    }
}

/// A priority on the wire: `Priority::MIN..=Priority::MAX` (see [`Priority`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WirePriority(pub i32);

impl WirePriority {
    /// Checks the range.
    pub fn validate(self) -> Result<(), ProtocolError> {
        Priority::try_from(self).map(drop)
    }
}

impl From<Priority> for WirePriority {
    fn from(p: Priority) -> WirePriority {
        WirePriority(p.get())
    }
}

impl TryFrom<WirePriority> for Priority {
    type Error = ProtocolError;
    fn try_from(p: WirePriority) -> Result<Priority, ProtocolError> {
        Priority::new(i64::from(p.0)).map_err(|e| ProtocolError::invalid("priority", e.to_string()))
    }
}

/// A Level-1 launch window on the wire (see [`LaunchConfig`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LaunchWindow {
    /// Commands allowed in flight.
    pub threshold: u32,
    /// Commands between sync points.
    pub batch: u32,
}

impl LaunchWindow {
    /// Checks it the way [`LaunchConfig::new`] does.
    pub fn validate(self) -> Result<(), ProtocolError> {
        LaunchConfig::try_from(self).map(drop)
    }
}

impl From<LaunchConfig> for LaunchWindow {
    fn from(c: LaunchConfig) -> LaunchWindow {
        LaunchWindow {
            threshold: c.threshold(),
            batch: c.batch(),
        }
    }
}

impl TryFrom<LaunchWindow> for LaunchConfig {
    type Error = ProtocolError;
    fn try_from(w: LaunchWindow) -> Result<LaunchConfig, ProtocolError> {
        LaunchConfig::new(w.threshold, w.batch)
            .map_err(|e| ProtocolError::invalid("launch", e.to_string()))
    }
}

/// The kind of accelerator a queue runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// An NVIDIA GPU through the CUDA driver.
    Cuda,
    /// Baton's simulated device.
    Sim,
    /// Another backend.
    Other,
}

/// The device a queue runs on.
///
/// `id` identifies the device across processes and is what the daemon groups queues by:
/// for CUDA the device UUID (`GPU-…`), for the simulator `sim-N`. `ordinal` is the device's
/// number *inside the reporting process*, which depends on `CUDA_VISIBLE_DEVICES`; it is for
/// display only.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DeviceRef {
    /// The backend.
    pub backend: Backend,
    /// The machine-wide identity: printable ASCII without spaces, at most
    /// [`MAX_LABEL_LEN`] bytes.
    pub id: String,
    /// The process-local device number.
    pub ordinal: u32,
}

impl DeviceRef {
    /// Checks the id.
    pub fn validate(&self) -> Result<(), ProtocolError> {
        check::ident("id", &self.id, MAX_LABEL_LEN)
    }
}

impl fmt::Display for DeviceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id)
    }
}

/// At least one of a level or a launch window, each valid.
pub(crate) fn check_config_change(
    level: Option<WireLevel>,
    launch: Option<LaunchWindow>,
) -> Result<(), ProtocolError> {
    if level.is_none() && launch.is_none() {
        return Err(ProtocolError::invalid(
            "level",
            "nothing to change: give a level, a launch window (threshold and batch), or both",
        ));
    }
    if let Some(l) = level {
        l.validate()?;
    }
    if let Some(w) = launch {
        w.validate()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_round_trip_through_core_types() {
        for l in Level::ALL {
            assert_eq!(Level::try_from(WireLevel::from(l)).unwrap(), l);
        }
        let p = Priority::new(-7).unwrap();
        assert_eq!(Priority::try_from(WirePriority::from(p)).unwrap(), p);
        let c = LaunchConfig::new(4, 2).unwrap();
        assert_eq!(LaunchConfig::try_from(LaunchWindow::from(c)).unwrap(), c);
        assert_eq!(XQueueId::from(QueueId::from(XQueueId(9))), XQueueId(9));
    }

    #[test]
    fn level_must_be_one_to_three() {
        assert!(WireLevel(3).validate().is_ok());
        for n in [0, 4, 255] {
            let e = WireLevel(n).validate().unwrap_err();
            assert_eq!(e.field(), Some("level"));
        }
    }

    #[test]
    fn priority_must_be_in_core_range() {
        assert!(WirePriority(100).validate().is_ok());
        let e = WirePriority(101).validate().unwrap_err();
        assert!(e.to_string().contains("-100 and 100"), "{e}");
        assert!(WirePriority(i32::MIN).validate().is_err());
    }

    #[test]
    fn launch_window_threshold_must_be_in_range() {
        let e = LaunchWindow {
            threshold: 0,
            batch: 1,
        }
        .validate()
        .unwrap_err();
        assert!(e.to_string().contains("threshold"), "{e}");
    }

    #[test]
    fn launch_window_batch_must_fit_threshold() {
        let e = LaunchWindow {
            threshold: 4,
            batch: 4,
        }
        .validate()
        .unwrap_err();
        assert!(e.to_string().contains("batch"), "{e}");
    }

    #[test]
    fn device_id_must_be_a_printable_token() {
        let mut d = DeviceRef {
            backend: Backend::Cuda,
            id: "GPU-1234".into(),
            ordinal: 0,
        };
        assert!(d.validate().is_ok());
        for bad in ["", "GPU 0", &"x".repeat(MAX_LABEL_LEN + 1)] {
            d.id = bad.to_string();
            assert_eq!(d.validate().unwrap_err().field(), Some("id"), "{bad:?}");
        }
    }

    #[test]
    fn queue_refs_parse_and_print() {
        let r: QueueRef = "4242:q3".parse().unwrap();
        assert_eq!(
            r,
            QueueRef {
                pid: 4242,
                queue: QueueId(3)
            }
        );
        assert_eq!(r.to_string(), "4242:q3");
        assert_eq!("7:12".parse::<QueueRef>().unwrap().queue, QueueId(12));
        for bad in ["", "4242", "x:q1", "0:q1", "1:qq", "1:-1"] {
            assert!(bad.parse::<QueueRef>().is_err(), "{bad:?}");
        }
    }
}
