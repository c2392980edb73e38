//! Process-wide settings from the environment: `BATON_*` variables, with XSched's `XSCHED_*`
//! names accepted as aliases.
//!
//! | variable (alias) | meaning | default |
//! | --- | --- | --- |
//! | `BATON_PRIORITY` (`XSCHED_AUTO_XQUEUE_PRIORITY`) | priority of this process's queues, −100..=100, higher first | 0 |
//! | `BATON_LEVEL` (`XSCHED_AUTO_XQUEUE_LEVEL`) | preemption level 1–3 (capped at what the device supports) | 1 |
//! | `BATON_THRESHOLD` (`XSCHED_AUTO_XQUEUE_THRESHOLD`) | commands in flight per queue | 16 |
//! | `BATON_BATCH` (`XSCHED_AUTO_XQUEUE_BATCH_SIZE`) | commands between sync points | 8 |
//! | `BATON_KEEP_WINDOW` | `on`: keep the launch window even for queues the policy cannot suspend now (bounds what a higher-priority process that starts later, or a higher-priority stream of this program on its first use, waits for) | off |
//! | `BATON_YIELD_SLICE_US` | the time slice (µs) of a context none of whose queues runs freely (each suspended, or outranked by a more urgent queue), at level 3 and when yielding, 1–2000000 | 100 |
//! | `BATON_RUN_SLICE_US` | the time slice (µs) of a context Baton controls while one of its queues runs freely and none outranks other work, 1–2000000 | the driver's (2048 on Hopper) |
//! | `BATON_LEAD_SLICE_US` | the time slice (µs) of a context Baton controls while one of its queues runs freely and outranks other work on its device (a service beside a job): once it has the GPU, the job does not take it back before its work pauses, 1–2000000 | 10000 |
//! | `BATON_INFLIGHT_US` | the device time (µs, by each stream's measured command time) a stream's commands in flight may take while a more urgent queue could hold it back; the first command always goes. 0: bounded by count only | 250 |
//! | `BATON_L3_OFF` | `on` or `off`: while every queue of a context whose time slice Baton controls is suspended at Level 3, also take the context's channel group off the GPU's run list (its work waits where it stopped instead of taking the GPU back whenever the more urgent context's work pauses), and put it back when one is resumed | off |
//! | `BATON_EARLY_REFILL` | `on` or `off`: with `BATON_INFLIGHT_US`, place each stream's sync points every half of the commands the budget lets be in flight (by the measured command time), so the stream learns the first are done while the rest still run and launches more before the GPU runs dry; `off`: one sync point behind the commands in flight when the budget closes the window, so a budget of a few long commands leaves the GPU idle while the host launches the next. A budget that admits one command has nothing to split either way | on |
//! | `BATON_YIELD` | `on`, `off` or `auto`: under the daemon, give way to more urgent processes through the GPU instead of being held back. Without MPS (`auto` or `on`), control each context's time slice (short while a more urgent queue exists on its device, long while the process outranks the others there) and tell the daemon the process yields (`Hint::Yielding`): the GPU's time slicing hands it over when a request arrives, and the daemon holds it back only while another process's work keeps the GPU busy (not for a program bound by its own launching). Under MPS, `on` (`baton run --yield`) keeps the kernels of normal-priority streams to `BATON_YIELD_SMS` while a more urgent queue exists (`Hint::Confining`); `auto` holds it back there, its work in flight bounded by `BATON_INFLIGHT_US`. `off` (`baton run --hold`): held back everywhere | `auto` |
//! | `BATON_YIELD_SMS` | under MPS, with `BATON_YIELD=on`: the SMs the kernels of normal-priority streams keep to while a more urgent queue exists (with `auto`, naming it confines them the same way and the process is still held back while more urgent work runs), a number (`112`) or a share of the device's SMs (`85%`), rounded up to the device's granularity (8 on Hopper) | `85%` |
//! | `BATON_COMMAND_TIME` | `on` or `off`: measure how long each stream's commands take on the GPU while it keeps the GPU busy, and how the program uses each stream (the share of the time it had work, and the share the program waited for it, every half second), and tell the scheduler (`Hint::CommandTime`, `Hint::Readiness`, shown by `baton list`): priority policies do not hold a stream of commands shorter than the daemon's `--short-command-us` (none by default) back for other processes. `off`: neither told (each stream still bounds its work in flight by its own measure, `BATON_INFLIGHT_US`) | on |
//! | `BATON_MAX_BUFFERED` | commands a queue holds back before the submitting thread waits, as on a full hardware queue, 1–1000000 | 1024 |
//! | `BATON_SMS` | confine the kernels of this process's normal-priority streams (CUDA priority 0) to this many SMs, through a green context, so more urgent kernels always find free SMs; streams created with a higher CUDA priority keep the whole GPU | unset (whole GPU) |
//! | `BATON_MPS` | `on`, `off` or `auto`: whether this process shares the GPU with others through MPS (their kernels run on the same SMs at once). With `BATON_SMS` under MPS the process tells the daemon it is isolated (`Hint::Isolated`): other processes' work then never holds it back, since it leaves them the SMs it does not use | `auto`: MPS when its control pipe (`$CUDA_MPS_PIPE_DIRECTORY/control`, else `/tmp/nvidia-mps/control`) exists |
//! | `BATON_STALL_REPORT_S` | when no queue of the process has made progress for this many seconds while work is pending, print every queue's state to stderr (once per stall), 1–3600 | unset (off) |
//! | `BATON_PROFILE` | `on`: count each intercepted driver call and the time spent in it (Baton's work and the driver's), per function, in the `BATON_REPORT` file; for kernel launches made from the application's thread, also the real call's share | off |
//! | `BATON_SCHEDULER` (`XSCHED_SCHEDULER`: `APP`/`LCL`/`GLB`) | `app`, `local` or `global` | `local` |
//! | `BATON_POLICY` (`XSCHED_POLICY`) | local policy name (see `baton policy list`) | `hpf` |
//! | `BATON_UTILIZATION` | share of the device's time to reserve for this process, 1–100 % (a hint for utilization policies) | unset |
//! | `BATON_DEADLINE_US` | each piece of work should finish within this many µs of becoming ready (a hint for deadline policies) | unset |
//! | `BATON_GANG` | the multi-process job this process is a rank of, any name (every rank gives the same); a daemon run with `--gang together` holds a gang's queues back and resumes them together on every device | detected: the Slurm job step (`SLURM_JOB_ID`.`SLURM_STEP_ID`), else torchrun's `TORCHELASTIC_RUN_ID`, else `MASTER_ADDR`:`MASTER_PORT` when `WORLD_SIZE` is above 1; else none |
//! | `BATON_SOCKET` | the daemon's socket (global mode) | per-user, then system socket |
//! | `BATON_CUDA_LIB` (`XSCHED_CUDA_LIB`) | absolute path of the real `libcuda.so.1` | searched |
//! | `BATON_ENABLE` (`XSCHED_AUTO_XQUEUE`: `ON`/`OFF`) | `0`/`off` passes every call straight through | on |
//! | `BATON_LOG` | log filter (`info`, `debug`, `baton=trace`, `off`…); unset, only notices (see [`crate::log`]) | unset |
//!
//! An invalid value never stops the application: it is reported once (see
//! [`AgentConfig::warnings`]) and the default is used.

use std::fmt;
use std::path::PathBuf;

use baton_core::{LaunchConfig, Level, Nanos, Priority};
use baton_protocol::{Hint, MAX_DURATION_NS, WirePriority};

/// How many of a device's SMs: a number, or a share of the device's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmShare {
    /// This many SMs.
    Count(u32),
    /// This percentage of the device's SMs, 1–99.
    Percent(u32),
}

impl SmShare {
    /// 85 % of the device's SMs.
    pub const DEFAULT: SmShare = SmShare::Percent(85);

    /// `112` or `85%`; `None` for anything else, a count of 0 or a share outside 1–99 %.
    pub fn parse(v: &str) -> Option<SmShare> {
        let v = v.trim();
        match v.strip_suffix('%') {
            Some(p) => p
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|p| (1..=99).contains(p))
                .map(SmShare::Percent),
            None => v
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=100_000).contains(n))
                .map(SmShare::Count),
        }
    }

    /// The SMs this means on a device of `device_sms`: at least 1.
    pub fn of(self, device_sms: u32) -> u32 {
        match self {
            SmShare::Count(n) => n,
            SmShare::Percent(p) => {
                u32::try_from(u64::from(device_sms) * u64::from(p) / 100).unwrap_or(u32::MAX)
            }
        }
        .max(1)
    }
}

impl fmt::Display for SmShare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SmShare::Count(n) => write!(f, "{n}"),
            SmShare::Percent(p) => write!(f, "{p}%"),
        }
    }
}

/// The gang this process belongs to: `BATON_GANG`, else what its launcher says of the job
/// (see the table in the module documentation). Read once, at start-up.
fn gang(
    read: &impl Fn(&[&'static str]) -> Option<(&'static str, String)>,
    get: &impl Fn(&str) -> Option<String>,
) -> Option<String> {
    let var = |n: &str| {
        get(n)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    if let Some((_, v)) = read(&["BATON_GANG"]) {
        return Some(v.trim().to_string());
    }
    if let Some(job) = var("SLURM_JOB_ID") {
        let step = var("SLURM_STEP_ID").unwrap_or_default();
        return Some(format!("slurm:{job}.{step}"));
    }
    if let Some(run) = var("TORCHELASTIC_RUN_ID").filter(|r| r != "none") {
        return Some(format!("torchelastic:{run}"));
    }
    let world = var("WORLD_SIZE").and_then(|w| w.parse::<u32>().ok());
    match (var("MASTER_ADDR"), var("MASTER_PORT"), world) {
        (Some(addr), Some(port), Some(2..)) => Some(format!("torch:{addr}:{port}")),
        _ => None,
    }
}

/// Who decides which queues run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SchedulerMode {
    /// Nobody: the application suspends and resumes its own queues.
    App,
    /// A scheduler inside this process.
    #[default]
    Local,
    /// The daemon, across processes.
    Global,
}

impl fmt::Display for SchedulerMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SchedulerMode::App => "app",
            SchedulerMode::Local => "local",
            SchedulerMode::Global => "global",
        })
    }
}

/// The agent's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentConfig {
    /// Whether Baton schedules at all (off: every call passes straight through).
    pub enabled: bool,
    /// Priority of this process's queues.
    pub priority: Priority,
    /// Requested preemption level.
    pub level: Level,
    /// Launch window of new queues.
    pub launch: LaunchConfig,
    /// Keep the window even for queues no decision can suspend now.
    pub keep_window: bool,
    /// Commands a queue buffers before its submitter waits.
    pub max_buffered: usize,
    /// The time slice of a context none of whose queues runs freely, in µs, if set; see
    /// [`AgentConfig::yield_slice_us`].
    pub yield_slice: Option<u64>,
    /// The time slice of a controlled context while one of its queues runs freely, in µs, if
    /// set (else the driver's).
    pub run_slice_us: Option<u64>,
    /// The time slice of a controlled context while one of its queues runs freely and
    /// outranks other work on its device, in µs; see [`AgentConfig::lead_slice_us`].
    pub lead_slice: Option<u64>,
    /// The device time a queue's work in flight may take while a more urgent queue could
    /// hold it, in µs (0: no bound); see [`AgentConfig::inflight_budget_us`].
    pub inflight_budget: Option<u64>,
    /// Sync points every half of what the in-flight budget admits (`BATON_EARLY_REFILL`;
    /// [`XQueueBuilder::early_refill`](baton_core::XQueueBuilder::early_refill)).
    pub early_refill: bool,
    /// Take a controlled context's channel group off the GPU's run list while every queue of
    /// it is suspended at Level 3 (`BATON_L3_OFF`).
    pub l3_off: bool,
    /// Yield by time slice (or, under MPS, by SMs) instead of being held back for other
    /// processes (`BATON_YIELD`): `Some` when set on or off, `None` (`auto`) to yield by SMs
    /// under MPS only.
    pub yield_to_others: Option<bool>,
    /// The SMs kept to while yielding under MPS, if set (`BATON_YIELD_SMS`); see
    /// [`AgentConfig::confines_while_outranked`].
    pub yield_sms: Option<SmShare>,
    /// Tell the scheduler how long each queue's commands take and how each queue is used
    /// (`BATON_COMMAND_TIME`).
    pub command_time: bool,
    /// SMs the kernels of normal-priority streams are confined to, if set.
    pub sms: Option<u32>,
    /// Whether the process shares the GPU through MPS: `Some` when `BATON_MPS` says, `None`
    /// to look for the control pipe.
    pub mps: Option<bool>,
    /// Where the MPS control pipe would be (`CUDA_MPS_PIPE_DIRECTORY`, else the default).
    pub mps_pipe: PathBuf,
    /// Seconds without progress after which the queues' states are printed, if set.
    pub stall_report_s: Option<u64>,
    /// Count intercepted calls and their time, per function, for the report.
    pub profile: bool,
    /// Who schedules.
    pub scheduler: SchedulerMode,
    /// The local policy's name (validated against the registry).
    pub policy: String,
    /// This process's share of the device, in percent, if set.
    pub utilization: Option<u8>,
    /// The relative deadline of this process's work, if set.
    pub deadline: Option<Nanos>,
    /// The gang (multi-process job) this process belongs to, by name (`slurm:JOB.STEP`, …).
    pub gang: Option<String>,
    /// The daemon's socket, if set.
    pub socket: Option<PathBuf>,
    /// The real CUDA driver library, if set.
    pub cuda_lib: Option<PathBuf>,
    /// The log filter, if set.
    pub log: Option<String>,
    warnings: Vec<String>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            enabled: true,
            priority: Priority::DEFAULT,
            level: Level::L1,
            launch: LaunchConfig::default(),
            keep_window: false,
            max_buffered: baton_core::DEFAULT_MAX_BUFFERED,
            yield_slice: None,
            run_slice_us: None,
            lead_slice: None,
            inflight_budget: None,
            early_refill: true,
            l3_off: false,
            yield_to_others: None,
            yield_sms: None,
            command_time: true,
            sms: None,
            mps: None,
            mps_pipe: PathBuf::from("/tmp/nvidia-mps"),
            stall_report_s: None,
            profile: false,
            scheduler: SchedulerMode::Local,
            policy: baton_policies::DEFAULT_POLICY.into(),
            utilization: None,
            deadline: None,
            gang: None,
            socket: None,
            cuda_lib: None,
            log: None,
            warnings: Vec::new(),
        }
    }
}

impl AgentConfig {
    /// Reads the settings through `get` (normally `std::env::var`), `BATON_*` first, then the
    /// `XSCHED_*` alias.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> AgentConfig {
        let mut c = AgentConfig::default();
        let read = |names: &[&'static str]| -> Option<(&'static str, String)> {
            names
                .iter()
                .find_map(|n| get(n).filter(|v| !v.trim().is_empty()).map(|v| (*n, v)))
        };

        if let Some((name, v)) = read(&["BATON_ENABLE", "XSCHED_AUTO_XQUEUE"]) {
            c.enabled = c.switch(name, &v, true);
        }
        if let Some((name, v)) = read(&["BATON_KEEP_WINDOW"]) {
            c.keep_window = c.switch(name, &v, false);
        }
        if let Some((name, v)) = read(&["BATON_PRIORITY", "XSCHED_AUTO_XQUEUE_PRIORITY"]) {
            match v
                .trim()
                .parse::<i64>()
                .ok()
                .and_then(|p| Priority::new(p).ok())
            {
                Some(p) => c.priority = p,
                None => c.warn(name, &v, "use an integer from -100 to 100", "0"),
            }
        }
        if let Some((name, v)) = read(&["BATON_LEVEL", "XSCHED_AUTO_XQUEUE_LEVEL"]) {
            match v.parse::<Level>() {
                Ok(l) => c.level = l,
                Err(_) => c.warn(name, &v, "use 1, 2 or 3", "1"),
            }
        }
        let threshold = read(&["BATON_THRESHOLD", "XSCHED_AUTO_XQUEUE_THRESHOLD"]);
        let batch = read(&["BATON_BATCH", "XSCHED_AUTO_XQUEUE_BATCH_SIZE"]);
        if threshold.is_some() || batch.is_some() {
            let parse = |x: &Option<(&str, String)>, dflt: u32| {
                x.as_ref()
                    .map_or(Some(dflt), |(_, v)| v.trim().parse::<u32>().ok())
            };
            let t = parse(&threshold, LaunchConfig::DEFAULT_THRESHOLD);
            let b = parse(
                &batch,
                LaunchConfig::DEFAULT_BATCH.min(t.unwrap_or(16).saturating_sub(1).max(1)),
            );
            match (t, b) {
                (Some(t), Some(b)) => match LaunchConfig::new(t, b) {
                    Ok(l) => c.launch = l,
                    Err(e) => c.warnings.push(format!(
                        "baton: ignoring BATON_THRESHOLD/BATON_BATCH ({e}); using threshold 16, batch 8"
                    )),
                },
                _ => c.warnings.push(
                    "baton: ignoring BATON_THRESHOLD/BATON_BATCH: not whole numbers; using threshold 16, batch 8"
                        .into(),
                ),
            }
        }
        if let Some(n) = c.whole(
            read(&["BATON_MAX_BUFFERED"]),
            1..=1_000_000,
            "use a whole number from 1 to 1000000",
            "1024",
        ) {
            c.max_buffered = n;
        }
        if let Some(n) = c.whole(
            read(&["BATON_YIELD_SLICE_US"]),
            1..=2_000_000,
            "use a whole number of µs from 1 to 2000000",
            "100",
        ) {
            c.yield_slice = Some(n);
        }
        c.run_slice_us = c
            .whole(
                read(&["BATON_RUN_SLICE_US"]),
                1..=2_000_000,
                "use a whole number of µs from 1 to 2000000",
                "the driver's",
            )
            .or(c.run_slice_us);
        c.lead_slice = c
            .whole(
                read(&["BATON_LEAD_SLICE_US"]),
                1..=2_000_000,
                "use a whole number of µs from 1 to 2000000",
                "10000",
            )
            .or(c.lead_slice);
        c.inflight_budget = c
            .whole(
                read(&["BATON_INFLIGHT_US"]),
                0..=10_000_000,
                "use a whole number of µs from 0 (no bound) to 10000000",
                "250",
            )
            .or(c.inflight_budget);
        if let Some((name, v)) = read(&["BATON_YIELD"]) {
            c.yield_to_others = match v.trim().to_ascii_lowercase().as_str() {
                "auto" | "" => None,
                "1" | "on" | "yes" | "true" => Some(true),
                "0" | "off" | "no" | "false" => Some(false),
                _ => {
                    c.warn(name, &v, "use on, off or auto", "auto");
                    None
                }
            };
        }
        if let Some((name, v)) = read(&["BATON_YIELD_SMS"]) {
            match SmShare::parse(&v) {
                Some(s) => c.yield_sms = Some(s),
                // What is used instead: `--yield`'s default share; held back, no confinement.
                None => c.warn(
                    name,
                    &v,
                    "use a number of SMs (at least 1) or a share of them from 1% to 99%",
                    if c.yield_to_others == Some(true) {
                        "85%"
                    } else {
                        "none (not confined)"
                    },
                ),
            }
        }
        if let Some((name, v)) = read(&["BATON_COMMAND_TIME"]) {
            c.command_time = c.switch(name, &v, true);
        }
        if let Some((name, v)) = read(&["BATON_L3_OFF"]) {
            c.l3_off = c.switch(name, &v, false);
        }
        if let Some((name, v)) = read(&["BATON_EARLY_REFILL"]) {
            c.early_refill = c.switch(name, &v, true);
        }
        c.sms = c
            .whole(
                read(&["BATON_SMS"]),
                1..=100_000,
                "use a whole number of SMs, at least 1",
                "the whole GPU",
            )
            .or(c.sms);
        if let Some((name, v)) = read(&["BATON_MPS"]) {
            match v.trim().to_ascii_lowercase().as_str() {
                "on" | "1" | "yes" => c.mps = Some(true),
                "off" | "0" | "no" => c.mps = Some(false),
                "auto" | "" => c.mps = None,
                _ => c.warnings.push(format!(
                    "ignoring {name}={v:?}: use on, off or auto; looking for the MPS control pipe"
                )),
            }
        }
        if let Some(d) = get("CUDA_MPS_PIPE_DIRECTORY").filter(|d| !d.trim().is_empty()) {
            c.mps_pipe = PathBuf::from(d);
        }
        c.stall_report_s = c
            .whole(
                read(&["BATON_STALL_REPORT_S"]),
                1..=3600,
                "use a whole number of seconds from 1 to 3600",
                "off",
            )
            .or(c.stall_report_s);
        if let Some((name, v)) = read(&["BATON_PROFILE"]) {
            c.profile = c.switch(name, &v, false);
        }
        if let Some((name, v)) = read(&["BATON_SCHEDULER", "XSCHED_SCHEDULER"]) {
            match v.trim().to_ascii_lowercase().as_str() {
                "app" => c.scheduler = SchedulerMode::App,
                "local" | "lcl" => c.scheduler = SchedulerMode::Local,
                "global" | "glb" => c.scheduler = SchedulerMode::Global,
                _ => c.warn(name, &v, "use app, local or global", "local"),
            }
        }
        if let Some((name, v)) = read(&["BATON_POLICY", "XSCHED_POLICY"]) {
            match baton_policies::by_name(&v) {
                Ok(p) => {
                    c.policy = p.name().to_string();
                    if name == "XSCHED_POLICY" {
                        // XSched: setting a policy selects the local scheduler.
                        c.scheduler = SchedulerMode::Local;
                    }
                }
                Err(e) => c.warnings.push(format!(
                    "baton: ignoring {name}={v:?}: {e}; using {}",
                    baton_policies::DEFAULT_POLICY
                )),
            }
        }
        if let Some((name, v)) = read(&["BATON_UTILIZATION"]) {
            match v.trim().trim_end_matches('%').parse::<u8>() {
                Ok(p @ 1..=100) => c.utilization = Some(p),
                _ => c.warn(name, &v, "use a whole percentage from 1 to 100", "no share"),
            }
        }
        if let Some((name, v)) = read(&["BATON_DEADLINE_US"]) {
            let max_us = MAX_DURATION_NS / 1_000;
            match v.trim().parse::<u64>() {
                Ok(us @ 1..) if us <= max_us => c.deadline = Some(Nanos::from_micros(us)),
                _ => c.warn(
                    name,
                    &v,
                    &format!("use whole microseconds from 1 to {max_us}"),
                    "no deadline",
                ),
            }
        }
        c.gang = gang(&read, &get);
        if let Some((_, v)) = read(&["BATON_SOCKET"]) {
            c.socket = Some(PathBuf::from(v));
        }
        if let Some((name, v)) = read(&["BATON_CUDA_LIB", "XSCHED_CUDA_LIB"]) {
            let p = PathBuf::from(&v);
            if p.is_absolute() {
                c.cuda_lib = Some(p);
            } else {
                c.warn(
                    name,
                    &v,
                    "give an absolute path",
                    "a search of the usual driver locations",
                );
            }
        }
        if let Some((_, v)) = read(&["BATON_LOG"]) {
            c.log = Some(v);
        }
        c
    }

    /// Reads the settings from this process's environment.
    pub fn from_env() -> AgentConfig {
        AgentConfig::from_lookup(|n| std::env::var(n).ok())
    }

    /// The process-wide hints these settings give the daemon: the priority (when not the
    /// default), the utilization share and the deadline, when set.
    pub fn process_hints(&self) -> Vec<Hint> {
        let mut h = Vec::new();
        if self.priority != Priority::DEFAULT {
            h.push(Hint::Priority(WirePriority::from(self.priority)));
        }
        if let Some(percent) = self.utilization {
            h.push(Hint::Utilization { percent });
        }
        if let Some(d) = self.deadline {
            h.push(Hint::Deadline { deadline_ns: d.0 });
        }
        if let Some(g) = &self.gang {
            h.push(Hint::Gang {
                id: baton_policies::GangId::of_name(g).0,
            });
        }
        h
    }

    /// Whether the process shares the GPU through MPS: as `BATON_MPS` says, else whether the
    /// MPS control daemon's pipe exists (a CUDA program then becomes its client).
    pub fn under_mps(&self) -> bool {
        self.mps
            .unwrap_or_else(|| self.mps_pipe.join("control").exists())
    }

    /// The SMs this process's kernels are to keep to, away from other processes' work, when
    /// that is so: `BATON_SMS` under MPS. (Without MPS, processes take turns on the whole GPU,
    /// and confining kernels frees nothing for the others.) The interposer claims isolation
    /// (`Hint::Isolated`) once the partition exists.
    pub fn isolated_sms(&self) -> Option<u32> {
        self.sms
            .filter(|_| self.under_mps())
            .map(|n| n.min(baton_protocol::MAX_SMS))
    }

    /// The time slice of a context none of whose queues runs freely (each suspended, or
    /// outranked by a more urgent queue), in µs: `BATON_YIELD_SLICE_US`, else 100. A context
    /// whose slice is that short hands the GPU over within the hardware's switch time (about
    /// 0.2–0.4 ms on Hopper) whenever another context has work, mid-kernel.
    pub fn yield_slice_us(&self) -> u64 {
        self.yield_slice.unwrap_or(100)
    }

    /// The time slice of a context one of whose queues runs freely and outranks other work
    /// on its device (a service beside a job), in µs: `BATON_LEAD_SLICE_US`, else 10 000.
    /// Only the running context's slice decides when the GPU switches, so once the service
    /// has the GPU the job's runnable work does not take it back before the service's work
    /// pauses or this long has passed.
    pub fn lead_slice_us(&self) -> u64 {
        self.lead_slice.unwrap_or(10_000)
    }

    /// The device time a queue's commands in flight may take while it keeps its launch window
    /// (a more urgent queue could hold it), in µs: `BATON_INFLIGHT_US`, else 250; 0: no bound.
    /// A hold at Level 1 waits for what is in flight; bounded by time, that wait is short
    /// whatever the commands' length (one 1.5 ms GEMM, or two or three 110 µs kernels).
    pub fn inflight_budget_us(&self) -> u64 {
        self.inflight_budget.unwrap_or(250)
    }

    /// Whether the process gives way to more urgent processes by its contexts' time slices
    /// (`Hint::Yielding`) instead of being held back: the default under the daemon without
    /// MPS (`BATON_YIELD` auto or on; `--hold` turns it off). Each context's slice is then
    /// short while a more urgent program is registered on its device and long while the
    /// process outranks the others there; other processes' work holds it back only while
    /// that work keeps the device busy (not for a program bound by its launching). Under
    /// MPS the server owns the one context every client shares: no slice of the process's own
    /// to shorten, so it is held back instead.
    pub fn yields_to_others(&self) -> bool {
        self.yield_to_others.unwrap_or(true)
            && self.scheduler == SchedulerMode::Global
            && !self.under_mps()
    }

    /// The SMs the kernels of normal-priority streams keep to while a more urgent queue
    /// exists, when the process asked to yield that way under MPS (`--yield`, `BATON_YIELD`
    /// on): `BATON_YIELD_SMS`, else 85 % of the device's SMs. Not the default: a held job
    /// whose work in flight is bounded by time protected a graph-replayed ResNet-50 beside a
    /// GEMM flood (×1.35 of alone) where confining the flood to 85 % left the service a
    /// sixth of the SMs (×53), and confinement is what `--yield` asks for.
    ///
    /// Held back by default (`auto`), a process that names `BATON_YIELD_SMS` keeps its kernels
    /// to those SMs while outranked as well, and is still held back while more urgent work
    /// runs ([`AgentConfig::claims_confining`] is false): SMs kept for a service before its
    /// requests arrive, and no new work started once one has.
    pub fn confines_while_outranked(&self) -> Option<SmShare> {
        let asked = match self.yield_to_others {
            Some(on) => on,
            None => self.yield_sms.is_some(),
        };
        (asked && self.scheduler == SchedulerMode::Global && self.under_mps() && self.sms.is_none())
            .then(|| self.yield_sms.unwrap_or(SmShare::DEFAULT))
    }

    /// Whether a queue confined while outranked ([`AgentConfig::confines_while_outranked`])
    /// tells the daemon so (`Hint::Confining`), which then no longer holds it back for other
    /// processes: only when it yields (`BATON_YIELD=on`). Confined by `BATON_YIELD_SMS` alone,
    /// it is held back as well.
    pub fn claims_confining(&self) -> bool {
        self.yield_to_others == Some(true)
    }

    /// One line per invalid value, saying what was ignored and what is used instead. The
    /// interposer prints them once on stderr.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// A whole number in `range` from a variable `read` found, or `None` (with a warning if
    /// it was set to anything else).
    fn whole<T: std::str::FromStr + PartialOrd>(
        &mut self,
        found: Option<(&str, String)>,
        range: std::ops::RangeInclusive<T>,
        how: &str,
        default: &str,
    ) -> Option<T> {
        let (name, v) = found?;
        match v.trim().parse::<T>() {
            Ok(n) if range.contains(&n) => Some(n),
            _ => {
                self.warn(name, &v, how, default);
                None
            }
        }
    }

    /// An on/off setting; anything else is reported and `default` used.
    fn switch(&mut self, name: &str, value: &str, default: bool) -> bool {
        match value.trim().to_ascii_lowercase().as_str() {
            "1" | "on" | "yes" | "true" => true,
            "0" | "off" | "no" | "false" => false,
            _ => {
                self.warn(
                    name,
                    value,
                    "use on or off",
                    if default { "on" } else { "off" },
                );
                default
            }
        }
    }

    fn warn(&mut self, name: &str, value: &str, how: &str, default: &str) {
        self.warnings.push(format!(
            "baton: ignoring {name}={value:?}: {how}; using {default}"
        ));
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn cfg(pairs: &[(&str, &str)]) -> AgentConfig {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        AgentConfig::from_lookup(|n| m.get(n).cloned())
    }

    #[test]
    fn the_gang_is_declared_or_read_from_the_launcher() {
        let gang = |pairs: &[(&str, &str)]| cfg(pairs).gang;
        assert_eq!(gang(&[]), None);
        assert_eq!(
            gang(&[("BATON_GANG", " train-7 ")]).as_deref(),
            Some("train-7")
        );
        let slurm = [("SLURM_JOB_ID", "812"), ("SLURM_STEP_ID", "0")];
        assert_eq!(gang(&slurm).as_deref(), Some("slurm:812.0"));
        let mut declared = slurm.to_vec();
        declared.push(("BATON_GANG", "mine"));
        assert_eq!(gang(&declared).as_deref(), Some("mine"));
        assert_eq!(gang(&[("TORCHELASTIC_RUN_ID", "none")]), None);
        assert_eq!(
            gang(&[("TORCHELASTIC_RUN_ID", "3f2a")]).as_deref(),
            Some("torchelastic:3f2a")
        );
        let torch = [("MASTER_ADDR", "10.0.0.1"), ("MASTER_PORT", "29500")];
        assert_eq!(
            gang(&torch),
            None,
            "no world size: not known to be a job of ranks"
        );
        let mut world = torch.to_vec();
        world.push(("WORLD_SIZE", "4"));
        assert_eq!(gang(&world).as_deref(), Some("torch:10.0.0.1:29500"));
        // Every rank derives the same id from the same name.
        let hints = cfg(&[("BATON_GANG", "job")]).process_hints();
        assert_eq!(
            hints,
            [Hint::Gang {
                id: baton_policies::GangId::of_name("job").0
            }]
        );
    }

    #[test]
    fn confined_kernels_under_mps_make_the_process_isolated() {
        let dir = std::env::temp_dir().join(format!("baton-mps-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pipe = dir.to_str().unwrap();
        let isolated = |pairs: &[(&str, &str)]| cfg(pairs).isolated_sms();
        // No control pipe where CUDA would look: not MPS, so --sms isolates nothing.
        let sms = [("BATON_SMS", "112"), ("CUDA_MPS_PIPE_DIRECTORY", pipe)];
        assert_eq!(isolated(&sms), None);
        std::fs::write(dir.join("control"), b"").unwrap();
        assert_eq!(isolated(&sms), Some(112));
        // Claimed by the interposer once confined, not at hello.
        assert_eq!(cfg(&sms).process_hints(), []);
        // MPS without confinement: nothing to claim.
        assert_eq!(isolated(&[("CUDA_MPS_PIPE_DIRECTORY", pipe)]), None);
        // BATON_MPS decides over the pipe; a bad value warns and looks.
        let off = [
            ("BATON_SMS", "112"),
            ("CUDA_MPS_PIPE_DIRECTORY", pipe),
            ("BATON_MPS", "off"),
        ];
        assert_eq!(isolated(&off), None);
        assert_eq!(
            isolated(&[("BATON_SMS", "64"), ("BATON_MPS", "on")]),
            Some(64)
        );
        let bad = cfg(&[("BATON_MPS", "maybe"), ("CUDA_MPS_PIPE_DIRECTORY", pipe)]);
        assert_eq!(bad.warnings().len(), 1, "{:?}", bad.warnings());
        assert!(bad.under_mps());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn no_process_claims_to_be_merely_time_sliced_any_more() {
        // Time-sliced processes yield by their slices by default: none tells the daemon it
        // is only time-sliced (`Hint::TimeSliced`, which spared it beside launch-bound
        // services).
        let global = ("BATON_SCHEDULER", "global");
        let alone = ("BATON_MPS", "off");
        for pairs in [
            vec![global, alone],
            vec![global, alone, ("BATON_YIELD", "off")],
        ] {
            assert!(!cfg(&pairs).process_hints().contains(&Hint::TimeSliced));
        }
    }

    #[test]
    fn under_mps_a_yielding_process_confines_its_kernels_while_outranked() {
        let global = ("BATON_SCHEDULER", "global");
        let (mps, on) = (("BATON_MPS", "on"), ("BATON_YIELD", "on"));
        let confines = |pairs: &[(&str, &str)]| cfg(pairs).confines_while_outranked();
        assert_eq!(confines(&[global, mps, on]), Some(SmShare::Percent(85)));
        assert!(
            !cfg(&[global, mps, on]).yields_to_others(),
            "no slice of its own"
        );
        // Only when asked: by default (auto) it is held back under MPS, its work in flight
        // bounded by time; only against other processes, under MPS, and not isolated for good.
        assert_eq!(confines(&[global, mps]), None);
        assert_eq!(confines(&[global, mps, ("BATON_YIELD", "auto")]), None);
        assert_eq!(confines(&[global, mps, ("BATON_YIELD", "off")]), None);
        assert!(cfg(&[global, mps, on]).claims_confining());
        // Held back (auto) with BATON_YIELD_SMS named: confined while outranked and held
        // back too, so it claims nothing; `--hold` (off) is never confined.
        let sms = ("BATON_YIELD_SMS", "50%");
        assert_eq!(confines(&[global, mps, sms]), Some(SmShare::Percent(50)));
        assert!(!cfg(&[global, mps, sms]).claims_confining());
        assert_eq!(confines(&[global, mps, ("BATON_YIELD", "off"), sms]), None);
        assert_eq!(confines(&[global, ("BATON_MPS", "off"), sms]), None);
        // A share that does not parse confines nothing where only it asked for confinement,
        // and the warning says so.
        let bad = cfg(&[global, mps, ("BATON_YIELD_SMS", "lots")]);
        assert_eq!(bad.confines_while_outranked(), None);
        assert!(
            bad.warnings()[0].contains("not confined"),
            "{:?}",
            bad.warnings()
        );
        assert_eq!(cfg(&[global, mps]).inflight_budget_us(), 250);
        assert_eq!(confines(&[mps, on]), None);
        assert_eq!(confines(&[global, ("BATON_MPS", "off"), on]), None);
        assert_eq!(confines(&[global, mps, on, ("BATON_SMS", "64")]), None);
        // How many: a count or a share; anything else warns and keeps 85 %.
        for (v, want) in [
            ("112", SmShare::Count(112)),
            ("50%", SmShare::Percent(50)),
            (" 90 % ", SmShare::Percent(90)),
        ] {
            assert_eq!(
                confines(&[global, mps, on, ("BATON_YIELD_SMS", v)]),
                Some(want),
                "{v}"
            );
        }
        for v in ["0", "100%", "0%", "lots", "-8"] {
            let c = cfg(&[global, mps, on, ("BATON_YIELD_SMS", v)]);
            assert_eq!(c.confines_while_outranked(), Some(SmShare::DEFAULT), "{v}");
            assert_eq!(c.warnings().len(), 1, "{v}: {:?}", c.warnings());
        }
        assert_eq!(SmShare::Percent(85).of(132), 112);
        assert_eq!(SmShare::Percent(1).of(8), 1);
        assert_eq!(SmShare::Count(64).of(132), 64);
    }

    #[test]
    fn a_process_yields_by_time_slice_when_asked_under_the_daemon_without_mps() {
        let no_mps = ("BATON_MPS", "off");
        let global = ("BATON_SCHEDULER", "global");
        let on = ("BATON_YIELD", "on");
        assert!(cfg(&[global, no_mps, on]).yields_to_others());
        // By default too (auto); `--hold` turns it off.
        assert!(cfg(&[global, no_mps]).yields_to_others());
        assert!(!cfg(&[global, no_mps, ("BATON_YIELD", "off")]).yields_to_others());
        // Only against other processes: not for the local scheduler, nor under MPS.
        assert!(!cfg(&[no_mps, on]).yields_to_others());
        assert!(!cfg(&[global, ("BATON_MPS", "on"), on]).yields_to_others());
        let bad = cfg(&[global, no_mps, ("BATON_YIELD", "sometimes")]);
        assert_eq!(bad.warnings().len(), 1, "{:?}", bad.warnings());
        assert!(bad.yields_to_others());
        assert!(
            bad.warnings()[0].contains("on, off or auto"),
            "{:?}",
            bad.warnings()
        );
        assert_eq!(
            bad.yield_to_others, None,
            "a bad value keeps the default, auto"
        );
        // Outranked, the slice is short (the GPU hands over within its switch time); leading,
        // long; either as set; the in-flight bound likewise.
        assert_eq!(cfg(&[global, no_mps, on]).yield_slice_us(), 100);
        assert_eq!(cfg(&[global, ("BATON_LEVEL", "3")]).yield_slice_us(), 100);
        assert_eq!(cfg(&[]).lead_slice_us(), 10_000);
        assert_eq!(
            cfg(&[("BATON_LEAD_SLICE_US", "4000")]).lead_slice_us(),
            4000
        );
        assert_eq!(cfg(&[("BATON_INFLIGHT_US", "0")]).inflight_budget_us(), 0);
        assert!(!cfg(&[]).l3_off);
        assert!(cfg(&[("BATON_L3_OFF", "on")]).l3_off);
        assert!(cfg(&[]).early_refill);
        assert!(!cfg(&[("BATON_EARLY_REFILL", "off")]).early_refill);
        let bad = cfg(&[("BATON_EARLY_REFILL", "soon")]);
        assert!(bad.early_refill && bad.warnings()[0].contains("BATON_EARLY_REFILL"));
        let bad = cfg(&[("BATON_LEAD_SLICE_US", "0"), ("BATON_INFLIGHT_US", "x")]);
        assert_eq!(bad.warnings().len(), 2, "{:?}", bad.warnings());
        assert_eq!(
            (bad.lead_slice_us(), bad.inflight_budget_us()),
            (10_000, 250)
        );
        assert_eq!(
            cfg(&[("BATON_YIELD_SLICE_US", "250")]).yield_slice_us(),
            250
        );
        assert_eq!(cfg(&[]).run_slice_us, None);
        assert_eq!(
            cfg(&[("BATON_RUN_SLICE_US", "300")]).run_slice_us,
            Some(300)
        );
    }

    #[test]
    fn defaults_when_nothing_is_set() {
        let c = cfg(&[]);
        assert_eq!(c, AgentConfig::default());
        assert!(c.warnings().is_empty());
    }

    #[test]
    fn baton_names_and_xsched_aliases() {
        let c = cfg(&[
            ("BATON_PRIORITY", "10"),
            ("BATON_LEVEL", "2"),
            ("BATON_THRESHOLD", "4"),
            ("BATON_BATCH", "2"),
            ("BATON_SCHEDULER", "global"),
            ("BATON_POLICY", "HPF"),
            ("BATON_CUDA_LIB", "/usr/lib/libcuda.so.1"),
            ("BATON_ENABLE", "off"),
            ("BATON_UTILIZATION", "30%"),
            ("BATON_DEADLINE_US", "2500"),
            ("BATON_KEEP_WINDOW", "on"),
            ("BATON_MAX_BUFFERED", "64"),
            ("BATON_YIELD_SLICE_US", "5"),
            ("BATON_SMS", "112"),
            ("BATON_STALL_REPORT_S", "5"),
            ("BATON_PROFILE", "on"),
            ("BATON_COMMAND_TIME", "off"),
        ]);
        assert!(c.profile && !AgentConfig::default().profile);
        assert!(!c.command_time && AgentConfig::default().command_time);
        assert_eq!((c.sms, c.stall_report_s), (Some(112), Some(5)));
        assert_eq!(c.priority.get(), 10);
        assert_eq!((c.max_buffered, c.yield_slice_us()), (64, 5));
        assert!(c.keep_window && !AgentConfig::default().keep_window);
        assert_eq!(c.utilization, Some(30));
        assert_eq!(c.deadline, Some(Nanos::from_micros(2500)));
        assert_eq!(
            c.process_hints(),
            vec![
                Hint::Priority(WirePriority(10)),
                Hint::Utilization { percent: 30 },
                Hint::Deadline {
                    deadline_ns: 2_500_000
                }
            ]
        );
        assert!(AgentConfig::default().process_hints().is_empty());
        assert_eq!(c.level, Level::L2);
        assert_eq!(c.launch, LaunchConfig::new(4, 2).unwrap());
        assert_eq!(c.scheduler, SchedulerMode::Global);
        assert_eq!(c.policy, "hpf");
        assert_eq!(AgentConfig::default().policy, "hpf");
        assert!(!c.enabled);
        assert!(c.warnings().is_empty(), "{:?}", c.warnings());

        let x = cfg(&[
            ("XSCHED_AUTO_XQUEUE_PRIORITY", "-3"),
            ("XSCHED_AUTO_XQUEUE_LEVEL", "3"),
            ("XSCHED_AUTO_XQUEUE_THRESHOLD", "1"),
            ("XSCHED_AUTO_XQUEUE_BATCH_SIZE", "1"),
            ("XSCHED_SCHEDULER", "APP"),
            ("XSCHED_CUDA_LIB", "/opt/libcuda.so.1"),
        ]);
        assert_eq!(x.priority.get(), -3);
        assert_eq!(x.level, Level::L3);
        assert_eq!(x.launch, LaunchConfig::new(1, 1).unwrap());
        assert_eq!(x.scheduler, SchedulerMode::App);
        assert!(x.warnings().is_empty(), "{:?}", x.warnings());
        // BATON_* wins over the alias.
        let both = cfg(&[
            ("BATON_PRIORITY", "5"),
            ("XSCHED_AUTO_XQUEUE_PRIORITY", "7"),
        ]);
        assert_eq!(both.priority.get(), 5);
        // XSCHED_POLICY selects the local scheduler, as in XSched.
        let p = cfg(&[("XSCHED_SCHEDULER", "GLB"), ("XSCHED_POLICY", "HPF")]);
        assert_eq!(p.scheduler, SchedulerMode::Local);
    }

    #[test]
    fn invalid_values_warn_once_each_and_keep_the_default() {
        let c = cfg(&[
            ("BATON_PRIORITY", "1000"),
            ("BATON_LEVEL", "9"),
            ("BATON_THRESHOLD", "8"),
            ("BATON_BATCH", "8"),
            ("BATON_SCHEDULER", "cluster"),
            ("BATON_POLICY", "fastest"),
            ("BATON_CUDA_LIB", "libcuda.so.1"),
            ("BATON_ENABLE", "maybe"),
            ("BATON_UTILIZATION", "0"),
            ("BATON_DEADLINE_US", "soon"),
            ("BATON_KEEP_WINDOW", "sometimes"),
            ("BATON_MAX_BUFFERED", "0"),
            ("BATON_YIELD_SLICE_US", "forever"),
            ("BATON_SMS", "0"),
            ("BATON_STALL_REPORT_S", "0"),
        ]);
        assert_eq!((c.sms, c.stall_report_s), (None, None));
        let d = AgentConfig::default();
        assert!(!c.keep_window);
        assert_eq!(c.max_buffered, baton_core::DEFAULT_MAX_BUFFERED);
        assert_eq!(
            (
                c.priority,
                c.level,
                c.launch,
                c.scheduler,
                &c.policy,
                &c.cuda_lib,
                c.enabled
            ),
            (
                d.priority,
                d.level,
                d.launch,
                d.scheduler,
                &d.policy,
                &d.cuda_lib,
                d.enabled
            )
        );
        assert_eq!((c.utilization, c.deadline), (None, None));
        // Fourteen settings, fourteen lines: threshold and batch are judged together.
        assert_eq!(c.warnings().len(), 14, "{:#?}", c.warnings());
        for w in c.warnings() {
            assert!(w.starts_with("baton: ignoring"), "{w}");
            assert!(w.contains("using"), "{w}");
        }
        let only_threshold = cfg(&[("BATON_THRESHOLD", "4")]);
        assert_eq!(only_threshold.launch, LaunchConfig::new(4, 3).unwrap());
    }
}
