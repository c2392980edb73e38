//! What `baton doctor --json` prints: one object per check, each with its verdict, its
//! sentence and what it found; under the driver, per device, the levels and spatial sharing
//! with the self-tests' reports.

use std::path::PathBuf;

use baton_cuda::probe::{Level2Report, Level3Report, SpatialReport};
use baton_protocol::DaemonStatus;
use serde::{Deserialize, Serialize};

/// What `baton doctor --json` prints: one object per check.
#[derive(Debug, Serialize, Deserialize)]
pub struct DoctorReport {
    /// [`DoctorReport::SCHEMA`].
    pub schema: String,
    /// The CUDA driver and its devices.
    pub driver: Check<DriverFindings>,
    /// The interposer library.
    pub interposer: Check<InterposerFindings>,
    /// The daemon.
    pub daemon: Check<DaemonFindings>,
    /// How programs share the GPU here, which decides how `--yield` gives way.
    #[serde(default)]
    pub sharing: SharingFindings,
}

/// How programs share the GPU here (not a check: either way works).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct SharingFindings {
    /// Whether programs share it through MPS (`BATON_MPS`, else the control pipe).
    pub mps: bool,
    /// What that means for `--yield` and `--sms`.
    pub how: String,
}

impl DoctorReport {
    /// The document's schema.
    pub const SCHEMA: &'static str = "baton.doctor/1";

    /// Whether every check passed.
    pub fn ok(&self) -> bool {
        self.driver.ok && self.interposer.ok && self.daemon.ok
    }
}

/// One check's outcome: a verdict, a sentence, and what was found.
#[derive(Debug, Serialize, Deserialize)]
pub struct Check<T> {
    /// Whether it passed.
    pub ok: bool,
    /// What was found, or what is wrong and what to do.
    pub detail: String,
    /// What was found.
    #[serde(flatten)]
    pub found: T,
}

/// The driver check's findings.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct DriverFindings {
    /// Whether the driver library opened.
    pub found: bool,
    /// Its version, once opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
    /// Its devices, once opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devices: Option<Vec<DeviceFindings>>,
}

/// One device: its levels and whether `--sms` confines kernels on it.
#[derive(Debug, Serialize, Deserialize)]
pub struct DeviceFindings {
    /// Its ordinal.
    pub ordinal: i32,
    /// Its name.
    pub name: String,
    /// Levels 1 to 3.
    pub levels: Vec<LevelFindings>,
    /// Spatial sharing.
    pub spatial: SpatialFindings,
}

/// One level on one device.
#[derive(Debug, Serialize, Deserialize)]
pub struct LevelFindings {
    /// The level.
    pub level: u8,
    /// Whether Baton claims it here.
    pub supported: bool,
    /// How it works, and why it is claimed or not.
    pub how: String,
    /// The self-test's report, if one ran.
    pub self_test: Option<SelfTest>,
}

/// A level's self-test report.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SelfTest {
    /// Level 2's.
    Level2(Level2Report),
    /// Level 3's.
    Level3(Level3Report),
}

/// Whether `--sms N` confines kernels on a device.
#[derive(Debug, Serialize, Deserialize)]
pub struct SpatialFindings {
    /// Whether Baton claims it.
    pub available: bool,
    /// How, and why it is claimed or not.
    pub how: String,
    /// The self-test's report, if one ran to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_test: Option<SpatialReport>,
}

/// The interposer check's findings.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct InterposerFindings {
    /// Whether the library was found.
    pub found: bool,
    /// Where, once found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// Whether it loads and exports the hooks, once found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loads: Option<bool>,
}

/// The daemon check's findings.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct DaemonFindings {
    /// Whether a daemon answered on the socket.
    pub reachable: bool,
    /// Its status, if it gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<DaemonStatus>,
}
