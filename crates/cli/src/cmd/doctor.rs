//! `baton doctor`: is everything Baton needs here? The driver, the interposer, the daemon,
//! and the preemption levels each device supports.
//!
//! Each check is one function returning a [`Check`]; the level report is per device
//! ([`levels`]). The GPU work — the driver's inventory and the self-tests levels are claimed
//! by — is `baton_cuda::probe`; this module judges what the probes report and says it. The
//! Level-3 self-test runs in a child of `baton` (`doctor --self-test-level3 ORDINAL`) under
//! the interposer.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use baton_cuda::Driver;
use baton_cuda::probe::{
    self, Device, Level2Report, Level3Answer, Level3Report, ProbeError, SpatialReport,
};
use baton_protocol::{DaemonStatus, Reply, Request};
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::client::Client;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// The real CUDA driver library, if it is not found by the usual search.
    #[arg(long, value_name = "PATH")]
    cuda_lib: Option<PathBuf>,
    /// The interposer [default: next to the baton executable, or $BATON_INTERPOSER].
    #[arg(long, value_name = "PATH")]
    interposer: Option<PathBuf>,
    /// Skip the per-device GPU self-tests (they take about a second each).
    #[arg(long)]
    no_self_test: bool,
    /// Internal: run the Level-3 self-test for this device (in a child under the interposer).
    #[arg(long, hide = true, value_name = "ORDINAL")]
    self_test_level3: Option<i32>,
}

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

/// Runs the Level-3 self-test for device `ordinal` in a child of `baton` with `interposer`
/// preloaded.
fn level3_in_child(
    ordinal: i32,
    interposer: &Path,
    cuda_lib: Option<&Path>,
) -> Result<Level3Report, ProbeError> {
    let exe = std::env::current_exe().map_err(|cause| ProbeError::Io {
        what: "finding baton itself",
        cause,
    })?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["doctor", "--self-test-level3", &ordinal.to_string()]);
    if let Some(l) = cuda_lib {
        cmd.args([std::ffi::OsStr::new("--cuda-lib"), l.as_os_str()]);
    }
    probe::level3_in_child(cmd, interposer)
}

/// Level 2's findings from its self-test's outcome (`None`: not tested).
fn level2_findings(outcome: Option<Result<Level2Report, ProbeError>>) -> LevelFindings {
    let (supported, how, report) = match outcome {
        None => (
            false,
            "deactivation (stream-memory gates): not tested (--no-self-test)".to_string(),
            None,
        ),
        Some(Ok(r)) if r.takes_effect => (
            true,
            format!(
                "deactivation (stream-memory gates): self-test: a kernel behind a closed gate \
                 was held 50 ms and finished {:.0} µs after it opened",
                r.done_after_open_us
            ),
            Some(r),
        ),
        Some(Ok(r)) => (
            false,
            "deactivation (stream-memory gates): no effect in the self-test (a kernel \
                  behind a closed gate ran)"
                .into(),
            Some(r),
        ),
        Some(Err(e)) => (
            false,
            format!("deactivation (stream-memory gates): self-test failed: {e}"),
            None,
        ),
    };
    LevelFindings {
        level: 2,
        supported,
        how,
        self_test: report.map(SelfTest::Level2),
    }
}

/// Level 3's findings from its self-test's outcome (`None`: not tested).
fn level3_findings(outcome: Option<Result<Level3Report, ProbeError>>) -> LevelFindings {
    let (supported, how, report) = match outcome {
        None => (
            false,
            "channel-group time slices: not tested (the self-test needs the interposer; \
                  skipped with --no-self-test)"
                .to_string(),
            None,
        ),
        Some(Ok(r)) => {
            let how = match (&r.measured, r.group_found) {
                (Some(m), _) if m.takes_effect => format!(
                    "channel-group time slices: self-test: another context's kernel waited {:.0} µs \
                     at libcuda's {} µs slice, {:.0} µs at {} µs",
                    m.wait_at_normal_us, m.normal_us, m.wait_at_yield_us, m.yield_us
                ),
                (_, false) => format!(
                    "channel-group time slices: {}",
                    r.why
                        .as_deref()
                        .unwrap_or("the channel group was not found")
                ),
                (m, true) => {
                    let (normal, shortened) = m
                        .as_ref()
                        .map_or((0.0, 0.0), |m| (m.wait_at_normal_us, m.wait_at_yield_us));
                    format!(
                        "channel-group time slices: no effect in the self-test (wait {normal:.0} µs \
                         at the normal slice, {shortened:.0} µs shortened)"
                    )
                }
            };
            (r.takes_effect(), how, Some(r))
        }
        Some(Err(e)) => (
            false,
            format!("channel-group time slices: self-test failed: {e}"),
            None,
        ),
    };
    LevelFindings {
        level: 3,
        supported,
        how,
        self_test: report.map(SelfTest::Level3),
    }
}

/// The levels a CUDA device supports. Level 1 needs nothing from the hardware. Level 3
/// (channel-group time slices) is claimed only if the self-test saw it take effect: with
/// another context filling the GPU, a short kernel's wait must drop to under half when that
/// context's slice is shortened (`probe::level3`). Level 2 (stream-memory gates) is claimed
/// only if a kernel behind a closed gate is held, and runs once it opens (`probe::level2`).
pub fn levels(
    d: &'static Driver,
    device: i32,
    tests: bool,
    interposer: Option<&Path>,
    cuda_lib: Option<&Path>,
) -> Vec<LevelFindings> {
    let l2 = level2_findings(tests.then(|| probe::level2(d, device)));
    let l3 = level3_findings(interposer.map(|i| level3_in_child(device, i, cuda_lib)));
    vec![
        LevelFindings {
            level: 1,
            supported: true,
            how: "progressive launching: works on every CUDA device".into(),
            self_test: None,
        },
        l2,
        l3,
    ]
}

/// Spatial sharing's findings from its self-test's outcome.
fn spatial_findings(outcome: Result<SpatialReport, ProbeError>) -> SpatialFindings {
    match outcome {
        Ok(r) if r.takes_effect => SpatialFindings {
            available: true,
            how: format!(
                "green contexts (`--sms N`): self-test: a kernel's {} blocks ran on {} SMs \
                 confined to a partition of {}, on {} unconfined",
                r.blocks, r.sms_used_confined, r.partition_sms, r.sms_used_whole
            ),
            self_test: Some(r),
        },
        Ok(r) => SpatialFindings {
            available: false,
            how: format!(
                "green contexts (`--sms N`): no effect in the self-test ({} SMs used confined to \
                 a partition of {}, {} unconfined; every block ran: {})",
                r.sms_used_confined, r.partition_sms, r.sms_used_whole, r.all_blocks_ran
            ),
            self_test: Some(r),
        },
        Err(e) => SpatialFindings {
            available: false,
            how: format!("green contexts (`--sms N`): {e}"),
            self_test: None,
        },
    }
}

/// Whether `--sms` confines kernels on `device`: claimed only if the self-test saw a confined
/// kernel's blocks stay on the partition's SMs (`probe::spatial`); without self-tests, only
/// whether a partition can be made.
fn spatial(d: &'static Driver, device: &Device, tests: bool) -> SpatialFindings {
    if !tests {
        return SpatialFindings {
            available: false,
            how: match probe::partition_sms(d, device, 8) {
                Ok((sms, device_sms)) => format!(
                    "green contexts (`--sms N`): a partition of {sms} of {device_sms} SMs can be \
                     made; not tested (--no-self-test)"
                ),
                Err(e) => format!("green contexts (`--sms N`): {e}"),
            },
            self_test: None,
        };
    }
    spatial_findings(probe::spatial(d, device.handle()))
}

fn driver_check(
    lib: Option<&Path>,
    self_test: Option<&Path>,
    tests: bool,
) -> Check<DriverFindings> {
    let lib = lib
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("BATON_CUDA_LIB").map(PathBuf::from));
    let d = match probe::open_driver(lib.as_deref()) {
        Ok(d) => d,
        Err(e) => {
            return Check {
                ok: false,
                detail: format!(
                    "{e}: install the NVIDIA driver, or give its libcuda.so.1 with --cuda-lib \
                     (without a GPU, `baton demo` runs on the simulated device)"
                ),
                found: DriverFindings::default(),
            };
        }
    };
    let inventory = probe::inventory(d);
    let devices: Vec<DeviceFindings> = inventory
        .devices
        .iter()
        .map(|dev| DeviceFindings {
            ordinal: dev.ordinal(),
            name: dev.name().to_string(),
            levels: levels(d, dev.ordinal(), tests, self_test, lib.as_deref()),
            spatial: spatial(d, dev, tests),
        })
        .collect();
    let (version, count) = (inventory.version, devices.len());
    let ok = inventory.initialized && count > 0;
    Check {
        ok,
        detail: if ok {
            format!("CUDA driver {version}, {count} device(s)")
        } else if !inventory.initialized {
            "the driver loads but cuInit failed: check that the GPU is visible (nvidia-smi)".into()
        } else {
            "the driver reports no device: check CUDA_VISIBLE_DEVICES and nvidia-smi".into()
        },
        found: DriverFindings {
            found: true,
            version: Some(version),
            devices: Some(devices),
        },
    }
}

fn interposer_check(flag: Option<&Path>) -> Check<InterposerFindings> {
    let path = match super::run::find_interposer(flag) {
        Ok(p) => p,
        Err(e) => {
            return Check {
                ok: false,
                detail: format!("{e:#}"),
                found: InterposerFindings::default(),
            };
        }
    };
    let hooks = probe::exports_hooks(&path);
    Check {
        ok: hooks,
        detail: if hooks {
            format!("{} loads and exports the hooks", path.display())
        } else {
            format!(
                "{} does not load or lacks cuLaunchKernel: rebuild it with `cargo build \
                 --release -p baton-interposer`",
                path.display()
            )
        },
        found: InterposerFindings {
            found: true,
            path: Some(path),
            loads: Some(hooks),
        },
    }
}

fn daemon_check(socket: Option<&Path>) -> Check<DaemonFindings> {
    let mut c = match Client::connect(socket) {
        Ok(c) => c,
        Err(e) => {
            return Check {
                ok: false,
                detail: format!("{e:#}"),
                found: DaemonFindings::default(),
            };
        }
    };
    match c.request(&Request::Status) {
        Ok(Reply::Status(s)) => Check {
            ok: true,
            detail: format!(
                "{} (pid {}) on {}: policy {}, {} processes, {} queues, decision p50 {:.1} µs",
                s.software,
                s.pid,
                c.path().display(),
                s.policy,
                s.processes,
                s.queues,
                s.decision_latency.p50_ns as f64 / 1000.0
            ),
            found: DaemonFindings {
                reachable: true,
                status: Some(s),
            },
        },
        other => Check {
            ok: false,
            detail: format!("the daemon did not report its status: {other:?}"),
            found: DaemonFindings {
                reachable: true,
                status: None,
            },
        },
    }
}

/// The report as text: one line per check, and under the driver each device's levels.
fn text(r: &DoctorReport) -> String {
    let line = |ok: bool, name: &str, detail: &str| {
        format!("{} {name:<10} {detail}\n", if ok { "ok " } else { "!! " })
    };
    let mut s = line(r.driver.ok, "driver", &r.driver.detail);
    for d in r.driver.found.devices.iter().flatten() {
        s += &format!("      device {} {}\n", d.ordinal, d.name);
        for l in &d.levels {
            let yes = if l.supported { "yes" } else { "no " };
            s += &format!("        L{} {yes} {}\n", l.level, l.how);
        }
        let yes = if d.spatial.available { "yes" } else { "no " };
        s += &format!("        SM {yes} {}\n", d.spatial.how);
    }
    s += &line(r.interposer.ok, "interposer", &r.interposer.detail);
    s += &line(r.daemon.ok, "daemon", &r.daemon.detail);
    s
}

pub fn run(args: DoctorArgs, socket: Option<&Path>) -> anyhow::Result<ExitCode> {
    if let Some(ordinal) = args.self_test_level3 {
        let answer = Level3Answer::from(probe::level3(
            ordinal,
            args.cuda_lib.as_deref(),
            probe::DEFAULT_YIELD_US,
        ));
        println!("{}", serde_json::to_string(&answer)?);
        return Ok(ExitCode::SUCCESS);
    }
    let interposer = interposer_check(args.interposer.as_deref());
    let self_test = interposer
        .found
        .path
        .clone()
        .filter(|_| interposer.ok && !args.no_self_test);
    let report = DoctorReport {
        schema: DoctorReport::SCHEMA.into(),
        driver: driver_check(
            args.cuda_lib.as_deref(),
            self_test.as_deref(),
            !args.no_self_test,
        ),
        interposer,
        daemon: daemon_check(socket),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", text(&report));
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use baton_cuda::probe::SliceMeasurement;

    use super::*;

    fn failed() -> ProbeError {
        ProbeError::Call {
            call: "cuInit",
            code: baton_cuda::sys::CUresult::NO_DEVICE,
        }
    }

    #[test]
    fn level_two_is_claimed_only_when_its_kernel_was_held() {
        let l = level2_findings(Some(Ok(Level2Report::new(true, 157.9))));
        assert!(l.supported);
        assert!(
            l.how
                .ends_with("was held 50 ms and finished 158 µs after it opened"),
            "{}",
            l.how
        );
        let l = level2_findings(Some(Ok(Level2Report::new(false, 3.0))));
        assert!(!l.supported && l.how.contains("no effect") && l.self_test.is_some());
        let l = level2_findings(Some(Err(failed())));
        assert_eq!(
            l.how,
            "deactivation (stream-memory gates): self-test failed: cuInit failed (CUDA_ERROR_NO_DEVICE(100))"
        );
        assert!(l.self_test.is_none());
        assert!(
            level2_findings(None)
                .how
                .ends_with("not tested (--no-self-test)")
        );
    }

    #[test]
    fn level_three_says_what_the_slice_changed() {
        let m = |normal, shortened| {
            Level3Report::measured(SliceMeasurement::new(7, 2000, 100, normal, shortened))
        };
        let l = level3_findings(Some(Ok(m(1800.2, 150.4))));
        assert!(l.supported);
        assert_eq!(
            l.how,
            "channel-group time slices: self-test: another context's kernel waited 1800 µs at \
             libcuda's 2000 µs slice, 150 µs at 100 µs"
        );
        let l = level3_findings(Some(Ok(m(1800.0, 1700.0))));
        assert!(!l.supported);
        assert_eq!(
            l.how,
            "channel-group time slices: no effect in the self-test (wait 1800 µs at the normal \
             slice, 1700 µs shortened)"
        );
        let l = level3_findings(Some(Ok(Level3Report::group_not_seen())));
        assert!(!l.supported);
        assert_eq!(
            l.how,
            "channel-group time slices: the context's compute channel group was not seen among \
             the driver's calls"
        );
        let l = level3_findings(Some(Err(ProbeError::NoInterposer)));
        assert!(
            l.how
                .ends_with("self-test failed: the interposer is not loaded in the self-test")
        );
        assert!(level3_findings(None).how.contains("needs the interposer"));
    }

    #[test]
    fn spatial_sharing_is_claimed_only_when_blocks_stayed_on_the_partition() {
        let whole: Vec<Option<u32>> = (0..528).map(|b| Some(b % 132)).collect();
        let inside: Vec<Option<u32>> = (0..528).map(|b| Some(b % 8)).collect();
        let s = spatial_findings(Ok(SpatialReport::new(8, 132, 528, &whole, &inside)));
        assert!(s.available);
        assert_eq!(
            s.how,
            "green contexts (`--sms N`): self-test: a kernel's 528 blocks ran on 8 SMs confined \
             to a partition of 8, on 132 unconfined"
        );
        let s = spatial_findings(Ok(SpatialReport::new(8, 132, 528, &whole, &whole)));
        assert!(!s.available);
        assert!(
            s.how.ends_with(
                "(132 SMs used confined to a partition of 8, 132 unconfined; every block ran: true)"
            ),
            "{}",
            s.how
        );
        let s = spatial_findings(Err(failed()));
        assert!(!s.available && s.self_test.is_none());
    }

    #[test]
    fn the_json_keeps_its_shape_and_the_text_its_lines() {
        let report = DoctorReport {
            schema: DoctorReport::SCHEMA.into(),
            driver: Check {
                ok: true,
                detail: "CUDA driver 13000, 1 device(s)".into(),
                found: DriverFindings {
                    found: true,
                    version: Some(13000),
                    devices: Some(vec![DeviceFindings {
                        ordinal: 0,
                        name: "GPU".into(),
                        levels: vec![
                            level2_findings(Some(Ok(Level2Report::new(true, 100.0)))),
                            level3_findings(Some(Ok(Level3Report::group_not_seen()))),
                        ],
                        spatial: spatial_findings(Err(failed())),
                    }]),
                },
            },
            interposer: Check {
                ok: false,
                detail: "missing".into(),
                found: InterposerFindings::default(),
            },
            daemon: Check {
                ok: false,
                detail: "none".into(),
                found: DaemonFindings::default(),
            },
        };
        assert!(!report.ok());
        let v = serde_json::to_value(&report).unwrap();
        assert_eq!(v["schema"], "baton.doctor/1");
        assert_eq!(v["driver"]["ok"], true);
        assert_eq!(v["driver"]["found"], true);
        assert_eq!(v["driver"]["version"], 13000);
        let dev = &v["driver"]["devices"][0];
        assert_eq!(dev["levels"][0]["self_test"]["held_50ms"], true);
        assert_eq!(dev["levels"][1]["self_test"]["group_found"], false);
        assert!(dev["spatial"].get("self_test").is_none());
        assert_eq!(
            serde_json::to_value(&report.interposer).unwrap(),
            serde_json::json!({"ok": false, "detail": "missing", "found": false})
        );
        assert_eq!(
            serde_json::to_value(&report.daemon).unwrap(),
            serde_json::json!({"ok": false, "detail": "none", "reachable": false})
        );
        // What is printed reads back.
        let back: DoctorReport = serde_json::from_value(v).unwrap();
        assert!(matches!(
            back.driver.found.devices.as_deref(),
            Some([DeviceFindings { levels, .. }]) if matches!(levels[1].self_test, Some(SelfTest::Level3(_)))
        ));
        let t = text(&report);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "ok  driver     CUDA driver 13000, 1 device(s)");
        assert_eq!(lines[1], "      device 0 GPU");
        assert!(lines[2].starts_with("        L2 yes deactivation"));
        assert!(lines[3].starts_with("        L3 no  channel-group"));
        assert!(lines[4].starts_with("        SM no  green contexts"));
        assert_eq!(lines[5], "!!  interposer missing");
        assert_eq!(lines[6], "!!  daemon     none");
    }
}
