//! `baton doctor`: is everything Baton needs here? The driver, the interposer, the daemon,
//! and the preemption levels each device supports.
//!
//! Each check is one function returning a [`Check`] (`report.rs` is the JSON document); the
//! level report is per device (`levels.rs`). The GPU work — the driver's inventory and the
//! self-tests levels are claimed by — is `baton_cuda::probe`; this module judges what the
//! probes report and says it.

mod levels;
mod report;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use baton_cuda::probe::{self, Level3Answer};
use baton_protocol::{Reply, Request};
use clap::Args;

use self::levels::{levels, spatial};
use self::report::{
    Check, DaemonFindings, DeviceFindings, DoctorReport, DriverFindings, InterposerFindings,
    SharingFindings,
};
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

/// How programs share the GPU, as `baton run` would see it from the settings `get` reads
/// (`BATON_MPS`, `CUDA_MPS_PIPE_DIRECTORY`, `BATON_YIELD_SMS`).
fn sharing(get: impl Fn(&str) -> Option<String>) -> SharingFindings {
    let mut cfg = baton_agent::AgentConfig::from_lookup(get);
    // As `baton run` sets it: scheduled by the daemon.
    cfg.scheduler = baton_agent::SchedulerMode::Global;
    let mps = cfg.under_mps();
    let pipe = cfg.mps_pipe.join("control");
    let why = match cfg.mps {
        Some(true) => "BATON_MPS=on".to_string(),
        Some(false) => "BATON_MPS=off".to_string(),
        None if mps && is_daemons(&cfg.mps_pipe) => format!(
            "the Baton daemon's own MPS server (`baton daemon --mps-server`), its control pipe {}",
            pipe.display()
        ),
        None if mps => format!("its control pipe {} exists", pipe.display()),
        None => format!("no MPS control pipe at {}", pipe.display()),
    };
    let how = if mps {
        let sms = cfg.yield_sms.unwrap_or(baton_agent::SmShare::DEFAULT);
        let held = format!(
            "held back while a more urgent program has work, with at most {} µs of its work in \
             flight{}",
            cfg.inflight_budget_us(),
            if cfg.early_refill {
                ", refilled before the GPU runs dry"
            } else {
                " (BATON_EARLY_REFILL=off: refilled once the last is done)"
            }
        );
        let way = match cfg.confines_while_outranked() {
            Some(_) if cfg.claims_confining() => format!(
                "with BATON_YIELD=on (`--yield`) a program's kernels keep to {sms} of them while \
                 a more urgent program exists, instead of being held back"
            ),
            Some(_) => format!(
                "a program is {held}, and with BATON_YIELD_SMS its kernels also keep to {sms} of \
                 them while a more urgent program exists"
            ),
            None => format!(
                "a program is {held} (`--yield`: its kernels keep to {sms} of them while a more \
                 urgent program exists instead)"
            ),
        };
        format!(
            "MPS ({why}): programs' kernels run on the SMs at once; {way}; `--sms N` keeps them \
             to N for good"
        )
    } else {
        format!(
            "time-sliced ({why}): programs take turns on the GPU; a program's time slice is \
             {} µs while a more urgent program is registered on its device (`--hold`: held back \
             instead)",
            cfg.yield_slice_us()
        )
    };
    SharingFindings { mps, how }
}

/// Whether `pipe` is the pipe folder of a Baton daemon's MPS server (`SOCKET.mps/pipe`).
fn is_daemons(pipe: &Path) -> bool {
    pipe.file_name().is_some_and(|n| n == "pipe")
        && pipe
            .parent()
            .and_then(|r| r.file_name())
            .is_some_and(|n| n.to_string_lossy().ends_with(".mps"))
}

/// Where no driver was found: no GPU for programs to share.
fn no_sharing() -> SharingFindings {
    SharingFindings {
        mps: false,
        how: "none: without a CUDA driver there is no GPU to share (`baton demo` runs on the \
              simulated device)"
            .into(),
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
    s += &format!("    sharing    {}\n", r.sharing.how);
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
    let driver = driver_check(
        args.cuda_lib.as_deref(),
        self_test.as_deref(),
        !args.no_self_test,
    );
    let sharing = if driver.found.found {
        // As `baton run` sets it up: a daemon's own MPS server where the environment names none.
        let explicit = crate::client::explicit_socket(socket);
        let daemon_pipe = baton_agent::socket_candidates(explicit.as_deref())
            .iter()
            .map(|s| baton_daemon::MpsDirs::for_socket(s))
            .find(|d| d.control().exists())
            .map(|d| d.pipe.display().to_string());
        sharing(|k| {
            std::env::var(k).ok().or_else(|| {
                daemon_pipe
                    .clone()
                    .filter(|_| k == "CUDA_MPS_PIPE_DIRECTORY")
            })
        })
    } else {
        no_sharing()
    };
    let report = DoctorReport {
        schema: DoctorReport::SCHEMA.into(),
        driver,
        interposer,
        daemon: daemon_check(socket),
        sharing,
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
    use baton_cuda::probe::{Level2Report, Level3Report, ProbeError};

    use super::levels::{level2_findings, level3_findings, spatial_findings};
    use super::report::SelfTest;
    use super::*;

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
                        spatial: spatial_findings(Err(ProbeError::NoInterposer)),
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
            sharing: sharing(|k| (k == "BATON_MPS").then(|| "off".into())),
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
        assert!(
            lines[7].starts_with("    sharing    time-sliced"),
            "{}",
            lines[7]
        );
        assert!(!report.sharing.mps);
    }

    /// A lookup of the variables `vars` set, and no other.
    fn set(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn sharing_names_the_daemons_own_mps_server() {
        let dir = std::env::temp_dir().join(format!("baton-doctor-mps-{}", std::process::id()));
        let dirs = baton_daemon::MpsDirs::for_socket(&dir.join("baton.sock"));
        std::fs::create_dir_all(&dirs.pipe).unwrap();
        std::fs::write(dirs.control(), "").unwrap();
        let pipe = dirs.pipe.display().to_string();
        let own = sharing(set(&[("CUDA_MPS_PIPE_DIRECTORY", pipe.as_str())]));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(own.mps);
        assert!(
            own.how.contains("the Baton daemon's own MPS server"),
            "{}",
            own.how
        );
        assert!(is_daemons(&dirs.pipe) && !is_daemons(Path::new("/tmp/nvidia-mps")));
    }

    #[test]
    fn sharing_says_how_yield_gives_way() {
        let mps = sharing(set(&[("BATON_MPS", "on"), ("BATON_YIELD_SMS", "75%")]));
        assert!(mps.mps);
        assert!(
            mps.how.contains("held back") && mps.how.contains("also keep to 75% of them"),
            "{}",
            mps.how
        );
        assert!(
            mps.how
                .contains("at most 250 µs of its work in flight, refilled before"),
            "{}",
            mps.how
        );
        let late = sharing(set(&[
            ("BATON_MPS", "on"),
            ("BATON_EARLY_REFILL", "off"),
            ("BATON_INFLIGHT_US", "500"),
        ]));
        assert!(
            late.how
                .contains("at most 500 µs of its work in flight (BATON_EARLY_REFILL=off"),
            "{}",
            late.how
        );
        let yielding = sharing(set(&[("BATON_MPS", "on"), ("BATON_YIELD", "on")]));
        assert!(
            yielding
                .how
                .contains("keep to 85% of them while a more urgent program exists, instead"),
            "{}",
            yielding.how
        );
        let slices = sharing(|k| (k == "BATON_MPS").then(|| "off".into()));
        assert!(
            slices.how.contains("time slice is 100 µs"),
            "{}",
            slices.how
        );
        let pipe = std::env::temp_dir().join(format!("baton-doctor-{}", std::process::id()));
        std::fs::create_dir_all(&pipe).unwrap();
        let dir = pipe.to_str().unwrap().to_owned();
        let lookup = |k: &str| (k == "CUDA_MPS_PIPE_DIRECTORY").then(|| dir.clone());
        assert!(!sharing(lookup).mps, "no control pipe");
        std::fs::write(pipe.join("control"), b"").unwrap();
        let found = sharing(lookup);
        assert!(
            found.mps && found.how.contains("held back") && found.how.contains("85% of them"),
            "{}",
            found.how
        );
        std::fs::remove_dir_all(&pipe).unwrap();
    }
}
