//! `baton doctor`: is everything Baton needs here? The driver, the interposer, the daemon,
//! and the preemption levels each device supports.
//!
//! Each check is one function returning a [`Check`]; the level report is per device
//! ([`levels`]).

use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use baton_protocol::{Reply, Request};
use clap::Args;
use serde_json::{Value, json};

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

/// One check's outcome.
pub struct Check {
    pub name: &'static str,
    pub ok: bool,
    /// What was found, or what is wrong and what to do.
    pub detail: String,
    pub data: Value,
}

/// One level on one device.
pub struct LevelReport {
    pub level: u8,
    pub supported: bool,
    pub how: String,
    /// The self-test's measurements, if one ran.
    pub data: Value,
}

/// The levels a CUDA device supports. Level 1 needs nothing from the hardware. Level 3
/// (channel-group time slices) is claimed only if the self-test saw it take effect: with
/// another context filling the GPU, a short kernel's wait must drop to under half when that
/// context's slice is shortened (see `selftest.rs`). Level 2 (stream-memory gates) is claimed
/// only if a kernel behind a closed gate is held, and runs once it opens.
pub fn levels(
    d: &'static baton_cuda::Driver,
    device: i32,
    tests: bool,
    interposer: Option<&Path>,
    cuda_lib: Option<&Path>,
) -> Vec<LevelReport> {
    let l2 = if !tests {
        LevelReport {
            level: 2,
            supported: false,
            how: "deactivation (stream-memory gates): not tested (--no-self-test)".into(),
            data: Value::Null,
        }
    } else {
        match super::selftest::level2(d, device) {
            Ok(v) if v["takes_effect"] == true => LevelReport {
                level: 2,
                supported: true,
                how: format!(
                    "deactivation (stream-memory gates): self-test: a kernel behind a closed gate \
                 was held 50 ms and finished {:.0} µs after it opened",
                    v["done_after_open_us"].as_f64().unwrap_or(0.0)
                ),
                data: v,
            },
            Ok(v) => LevelReport {
                level: 2,
                supported: false,
                how: "deactivation (stream-memory gates): no effect in the self-test (a kernel \
                  behind a closed gate ran)"
                    .into(),
                data: v,
            },
            Err(e) => LevelReport {
                level: 2,
                supported: false,
                how: format!("deactivation (stream-memory gates): self-test failed: {e}"),
                data: Value::Null,
            },
        }
    };
    let l3 = match interposer {
        None => LevelReport {
            level: 3,
            supported: false,
            how: "channel-group time slices: not tested (the self-test needs the interposer; \
                  skipped with --no-self-test)"
                .into(),
            data: Value::Null,
        },
        Some(i) => match super::selftest::level3_in_child(device, i, cuda_lib) {
            Ok(v) if v["takes_effect"] == true => LevelReport {
                level: 3,
                supported: true,
                how: format!(
                    "channel-group time slices: self-test: another context's kernel waited {:.0} µs \
                     at libcuda's {} µs slice, {:.0} µs at {} µs",
                    v["wait_at_normal_us"].as_f64().unwrap_or(0.0),
                    v["normal_us"],
                    v["wait_at_yield_us"].as_f64().unwrap_or(0.0),
                    v["yield_us"]
                ),
                data: v,
            },
            Ok(v) if v["group_found"] == false => LevelReport {
                level: 3,
                supported: false,
                how: format!(
                    "channel-group time slices: {}",
                    v["why"]
                        .as_str()
                        .unwrap_or("the channel group was not found")
                ),
                data: v,
            },
            Ok(v) => LevelReport {
                level: 3,
                supported: false,
                how: format!(
                    "channel-group time slices: no effect in the self-test (wait {:.0} µs at the \
                     normal slice, {:.0} µs shortened)",
                    v["wait_at_normal_us"].as_f64().unwrap_or(0.0),
                    v["wait_at_yield_us"].as_f64().unwrap_or(0.0)
                ),
                data: v,
            },
            Err(e) => LevelReport {
                level: 3,
                supported: false,
                how: format!("channel-group time slices: self-test failed: {e}"),
                data: Value::Null,
            },
        },
    };
    vec![
        LevelReport {
            level: 1,
            supported: true,
            how: "progressive launching: works on every CUDA device".into(),
            data: Value::Null,
        },
        l2,
        l3,
    ]
}

/// Whether `--sms` confines kernels on `device`: claimed only if the self-test saw a confined
/// kernel's blocks stay on the partition's SMs (`selftest::spatial`); without self-tests, only
/// whether a partition can be made.
fn spatial(d: &'static baton_cuda::Driver, device: i32, tests: bool) -> Value {
    if !tests {
        // SAFETY: a device of this driver; the partition is dropped (destroyed) at once.
        return match unsafe { baton_cuda::SmPartition::new(d, device, 8) } {
            Ok(p) => json!({
                "available": false,
                "how": format!(
                    "green contexts (`--sms N`): a partition of {} of {} SMs can be made; not \
                     tested (--no-self-test)",
                    p.sms(),
                    p.device_sms()
                ),
            }),
            Err(e) => {
                json!({"available": false, "how": format!("green contexts (`--sms N`): {e}")})
            }
        };
    }
    match super::selftest::spatial(d, device) {
        Ok(v) if v["takes_effect"] == true => json!({
            "available": true,
            "how": format!(
                "green contexts (`--sms N`): self-test: a kernel's {} blocks ran on {} SMs \
                 confined to a partition of {}, on {} unconfined",
                v["blocks"], v["sms_used_confined"], v["partition_sms"], v["sms_used_whole"]
            ),
            "self_test": v,
        }),
        Ok(v) => json!({
            "available": false,
            "how": format!(
                "green contexts (`--sms N`): no effect in the self-test ({} SMs used confined to \
                 a partition of {}, {} unconfined; every block ran: {})",
                v["sms_used_confined"], v["partition_sms"], v["sms_used_whole"], v["all_blocks_ran"]
            ),
            "self_test": v,
        }),
        Err(e) => json!({"available": false, "how": format!("green contexts (`--sms N`): {e}")}),
    }
}

fn driver_check(lib: Option<&Path>, self_test: Option<&Path>, tests: bool) -> Check {
    let lib = lib
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("BATON_CUDA_LIB").map(PathBuf::from));
    let handle = match baton_cuda::open_library(lib.as_deref()) {
        Ok(h) => h,
        Err(e) => {
            return Check {
                name: "driver",
                ok: false,
                detail: format!(
                    "{e}: install the NVIDIA driver, or give its libcuda.so.1 with --cuda-lib \
                     (without a GPU, `baton demo` runs on the simulated device)"
                ),
                data: json!({"found": false}),
            };
        }
    };
    // SAFETY: dlsym on the driver's handle returns the driver's own exports, whose C
    // signatures the table declares.
    let d: &'static baton_cuda::Driver = Box::leak(Box::new(unsafe {
        baton_cuda::Driver::resolve(|name: &CStr| libc::dlsym(handle, name.as_ptr()))
    }));
    let mut version = 0;
    if let Some(f) = d.cuDriverGetVersion {
        // SAFETY: a valid out-pointer.
        let _ = unsafe { f(&mut version) };
    }
    let mut count = 0;
    let init_ok = d.cuInit.is_some_and(|f| {
        // SAFETY: cuInit takes flags 0.
        unsafe { f(0) }.is_success()
    });
    if init_ok {
        if let Some(f) = d.cuDeviceGetCount {
            // SAFETY: a valid out-pointer.
            let _ = unsafe { f(&mut count) };
        }
    }
    let mut devices = Vec::new();
    for ordinal in 0..count {
        let mut name = [0 as std::ffi::c_char; 128];
        let mut dev = 0;
        if let (Some(get), Some(get_name)) = (d.cuDeviceGet, d.cuDeviceGetName) {
            // SAFETY: valid out-pointers; `name` holds 128 bytes.
            unsafe {
                if get(&mut dev, ordinal).is_success() {
                    let _ = get_name(name.as_mut_ptr(), 128, dev);
                }
            }
        }
        name[127] = 0;
        // SAFETY: `name` is NUL-terminated (set just above).
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let lv: Vec<Value> = levels(d, ordinal, tests, self_test, lib.as_deref())
            .iter()
        .map(|l| json!({"level": l.level, "supported": l.supported, "how": l.how, "self_test": l.data}))
        .collect();
        let sp = spatial(d, dev, tests);
        devices.push(json!({"ordinal": ordinal, "name": name, "levels": lv, "spatial": sp}));
    }
    let ok = init_ok && count > 0;
    Check {
        name: "driver",
        ok,
        detail: if ok {
            format!("CUDA driver {version}, {count} device(s)")
        } else if !init_ok {
            "the driver loads but cuInit failed: check that the GPU is visible (nvidia-smi)".into()
        } else {
            "the driver reports no device: check CUDA_VISIBLE_DEVICES and nvidia-smi".into()
        },
        data: json!({"found": true, "version": version, "devices": devices}),
    }
}

fn interposer_check(flag: Option<&Path>) -> Check {
    let path = match super::run::find_interposer(flag) {
        Ok(p) => p,
        Err(e) => {
            return Check {
                name: "interposer",
                ok: false,
                detail: format!("{e:#}"),
                data: json!({"found": false}),
            };
        }
    };
    let c = CString::new(path.as_os_str().as_encoded_bytes()).unwrap_or_default();
    // SAFETY: `c` is a valid C string. RTLD_LOCAL keeps its symbols out of this process's
    // namespace, and it initializes nothing until a hooked function is called. It stays loaded
    // (unloading Rust libraries with thread-locals is not safe).
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    // SAFETY: a non-null handle and a valid symbol name.
    let hooks = !h.is_null() && !unsafe { libc::dlsym(h, c"cuLaunchKernel".as_ptr()) }.is_null();
    Check {
        name: "interposer",
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
        data: json!({"found": true, "path": path, "loads": hooks}),
    }
}

fn daemon_check(socket: Option<&Path>) -> Check {
    let mut c = match Client::connect(socket) {
        Ok(c) => c,
        Err(e) => {
            return Check {
                name: "daemon",
                ok: false,
                detail: format!("{e:#}"),
                data: json!({"reachable": false}),
            };
        }
    };
    match c.request(&Request::Status) {
        Ok(Reply::Status(s)) => Check {
            name: "daemon",
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
            data: json!({"reachable": true, "status": s}),
        },
        other => Check {
            name: "daemon",
            ok: false,
            detail: format!("the daemon did not report its status: {other:?}"),
            data: json!({"reachable": true}),
        },
    }
}

pub fn run(args: DoctorArgs, socket: Option<&Path>) -> anyhow::Result<ExitCode> {
    if let Some(ordinal) = args.self_test_level3 {
        super::selftest::run_child(ordinal, args.cuda_lib.as_deref());
        return Ok(ExitCode::SUCCESS);
    }
    let interposer = interposer_check(args.interposer.as_deref());
    let self_test = (interposer.ok && !args.no_self_test)
        .then(|| interposer.data["path"].as_str().map(PathBuf::from))
        .flatten();
    let checks = [
        driver_check(
            args.cuda_lib.as_deref(),
            self_test.as_deref(),
            !args.no_self_test,
        ),
        interposer,
        daemon_check(socket),
    ];
    if args.json {
        let mut v = serde_json::Map::new();
        for c in &checks {
            let mut d = c.data.clone();
            d["ok"] = json!(c.ok);
            d["detail"] = json!(c.detail);
            v.insert(c.name.to_string(), d);
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        for c in &checks {
            println!(
                "{} {:<10} {}",
                if c.ok { "ok " } else { "!! " },
                c.name,
                c.detail
            );
            if c.name == "driver" {
                for d in c.data["devices"].as_array().into_iter().flatten() {
                    println!(
                        "      device {} {}",
                        d["ordinal"],
                        d["name"].as_str().unwrap_or("")
                    );
                    for l in d["levels"].as_array().into_iter().flatten() {
                        println!(
                            "        L{} {} {}",
                            l["level"],
                            if l["supported"] == true { "yes" } else { "no " },
                            l["how"].as_str().unwrap_or("")
                        );
                    }
                    let sp = &d["spatial"];
                    println!(
                        "        SM {} {}",
                        if sp["available"] == true {
                            "yes"
                        } else {
                            "no "
                        },
                        sp["how"].as_str().unwrap_or("")
                    );
                }
            }
        }
    }
    Ok(if checks.iter().all(|c| c.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
