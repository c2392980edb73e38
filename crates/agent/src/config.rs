//! Process-wide settings from the environment: `BATON_*` variables, with XSched's `XSCHED_*`
//! names accepted as aliases.
//!
//! Every variable the agent reads is one entry of [`AgentConfig::SETTINGS`]: its name, its
//! XSched alias and its default. Each default is a named constant (`AgentConfig::DEFAULT_*`,
//! [`LaunchConfig::DEFAULT_THRESHOLD`], [`SmShare::DEFAULT`], …) that the table, the reading,
//! the warnings and the getters all use. What each setting means is written for users once, in
//! the table of `baton run`'s options in `docs/USAGE.md`, which states every default as
//! `(default 10000)`, ``(default `on`)`` or `(default: the driver's…)` (the form
//! `SettingDefault::documented` gives); `tests/settings_doc.rs` checks that table against
//! [`AgentConfig::SETTINGS`], variable by variable and default by default.
//!
//! The environment is read through one adapter, `Lookup`, around the lookup
//! (`Fn(&str) -> Option<String>`) that [`AgentConfig::from_lookup`] takes:
//! [`AgentConfig::from_env`] passes `std::env::var`, tests a map. A blank value counts as unset. An invalid value never stops the application: it is
//! reported once (see [`AgentConfig::warnings`]) and the default is used.

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

/// One variable the agent reads, an entry of [`AgentConfig::SETTINGS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    /// The variable, `BATON_…`.
    pub name: &'static str,
    /// XSched's name for it, read when the variable is unset.
    pub alias: Option<&'static str>,
    /// What applies while neither is set, or when the value is refused.
    pub default: SettingDefault,
}

impl Setting {
    const fn new(name: &'static str, default: SettingDefault) -> Setting {
        Setting {
            name,
            alias: None,
            default,
        }
    }

    const fn alias(self, alias: &'static str) -> Setting {
        Setting {
            alias: Some(alias),
            ..self
        }
    }
}

/// A setting's default. Displayed, it is what a warning says is used instead
/// (`using 10000`, `using on`, `using the driver's`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettingDefault {
    /// A number, in the variable's unit.
    Number(i64),
    /// `on` (true) or `off`.
    Switch(bool),
    /// One of the words the variable takes (`auto`, `local`, `hpf`).
    Word(&'static str),
    /// A number or share of SMs.
    Sms(SmShare),
    /// No value: what happens then, in words (`the driver's`, `the whole GPU`).
    Unset(&'static str),
}

impl SettingDefault {
    /// How `docs/USAGE.md` states it after `(default`: ` 10000`, `` `on` ``, `` `auto` ``,
    /// `` `85%` ``, or `: ` and the words of an unset one (which the text may go on from).
    pub fn documented(&self) -> String {
        match self {
            SettingDefault::Number(n) => format!(" {n}"),
            SettingDefault::Unset(what) => format!(": {what}"),
            v => format!(" `{v}`"),
        }
    }
}

impl fmt::Display for SettingDefault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingDefault::Number(n) => write!(f, "{n}"),
            SettingDefault::Switch(on) => f.write_str(if *on { "on" } else { "off" }),
            SettingDefault::Word(w) | SettingDefault::Unset(w) => f.write_str(w),
            SettingDefault::Sms(s) => write!(f, "{s}"),
        }
    }
}

use SettingDefault::{Number, Sms, Switch, Unset, Word};

// Each variable once, listed in `AgentConfig::SETTINGS`.
const PRIORITY: Setting = Setting::new("BATON_PRIORITY", Number(Priority::DEFAULT.get() as i64))
    .alias("XSCHED_AUTO_XQUEUE_PRIORITY");
const LEVEL: Setting = Setting::new(
    "BATON_LEVEL",
    Number(AgentConfig::DEFAULT_LEVEL.number() as i64),
)
.alias("XSCHED_AUTO_XQUEUE_LEVEL");
const YIELD: Setting = Setting::new("BATON_YIELD", Word("auto"));
const YIELD_SMS: Setting = Setting::new("BATON_YIELD_SMS", Sms(SmShare::DEFAULT));
const YIELD_SLICE_US: Setting = Setting::new(
    "BATON_YIELD_SLICE_US",
    Number(AgentConfig::DEFAULT_YIELD_SLICE_US as i64),
);
const L3_OFF: Setting = Setting::new("BATON_L3_OFF", Switch(AgentConfig::DEFAULT_L3_OFF));
const LEAD_SLICE_US: Setting = Setting::new(
    "BATON_LEAD_SLICE_US",
    Number(AgentConfig::DEFAULT_LEAD_SLICE_US as i64),
);
const RUN_SLICE_US: Setting = Setting::new("BATON_RUN_SLICE_US", Unset("the driver's"));
const INFLIGHT_US: Setting = Setting::new(
    "BATON_INFLIGHT_US",
    Number(AgentConfig::DEFAULT_INFLIGHT_BUDGET_US as i64),
);
const GEMM_PIECE_US: Setting = Setting::new(
    "BATON_GEMM_PIECE_US",
    Number(AgentConfig::DEFAULT_GEMM_PIECE_US as i64),
);
const EARLY_REFILL: Setting = Setting::new(
    "BATON_EARLY_REFILL",
    Switch(AgentConfig::DEFAULT_EARLY_REFILL),
);
const COMMAND_TIME: Setting = Setting::new(
    "BATON_COMMAND_TIME",
    Switch(AgentConfig::DEFAULT_COMMAND_TIME),
);
const MAX_BUFFERED: Setting = Setting::new(
    "BATON_MAX_BUFFERED",
    Number(baton_core::DEFAULT_MAX_BUFFERED as i64),
);
const THRESHOLD: Setting = Setting::new(
    "BATON_THRESHOLD",
    Number(LaunchConfig::DEFAULT_THRESHOLD as i64),
)
.alias("XSCHED_AUTO_XQUEUE_THRESHOLD");
const BATCH: Setting = Setting::new("BATON_BATCH", Number(LaunchConfig::DEFAULT_BATCH as i64))
    .alias("XSCHED_AUTO_XQUEUE_BATCH_SIZE");
const KEEP_WINDOW: Setting = Setting::new(
    "BATON_KEEP_WINDOW",
    Switch(AgentConfig::DEFAULT_KEEP_WINDOW),
);
const UTILIZATION: Setting = Setting::new("BATON_UTILIZATION", Unset("no share"));
const DEADLINE_US: Setting = Setting::new("BATON_DEADLINE_US", Unset("no deadline"));
const GANG: Setting = Setting::new("BATON_GANG", Unset("detected"));
const SCHEDULER: Setting =
    Setting::new("BATON_SCHEDULER", Word(SchedulerMode::DEFAULT.name())).alias("XSCHED_SCHEDULER");
const SOCKET: Setting = Setting::new("BATON_SOCKET", Unset("per-user, then the system socket"));
const POLICY: Setting =
    Setting::new("BATON_POLICY", Word(baton_policies::DEFAULT_POLICY)).alias("XSCHED_POLICY");
const CUDA_LIB: Setting = Setting::new(
    "BATON_CUDA_LIB",
    Unset("a search of the usual driver locations"),
)
.alias("XSCHED_CUDA_LIB");
const ENABLE: Setting =
    Setting::new("BATON_ENABLE", Switch(AgentConfig::DEFAULT_ENABLED)).alias("XSCHED_AUTO_XQUEUE");
const LOG: Setting = Setting::new("BATON_LOG", Unset("only notices"));
const PROFILE: Setting = Setting::new("BATON_PROFILE", Switch(AgentConfig::DEFAULT_PROFILE));
const SMS: Setting = Setting::new("BATON_SMS", Unset("the whole GPU"));
const MPS: Setting = Setting::new("BATON_MPS", Word("auto"));
const STALL_REPORT_S: Setting = Setting::new("BATON_STALL_REPORT_S", Unset("off"));

/// Where CUDA looks for the MPS control pipe when `CUDA_MPS_PIPE_DIRECTORY` is unset.
const DEFAULT_MPS_PIPE_DIRECTORY: &str = "/tmp/nvidia-mps";

/// The environment, as a lookup (`std::env::var`, or a map in tests): the one way settings
/// are read.
struct Lookup<F>(F);

impl<F: Fn(&str) -> Option<String>> Lookup<F> {
    /// What `setting` is set to, by its name, else by its alias: the name found, and the value
    /// as given.
    fn setting(&self, setting: &Setting) -> Option<(&'static str, String)> {
        std::iter::once(setting.name)
            .chain(setting.alias)
            .find_map(|n| self.var(n).map(|v| (n, v)))
    }

    /// A variable, as given, unless it is unset or blank; for the settings' own variables,
    /// [`Lookup::setting`].
    fn var(&self, name: &str) -> Option<String> {
        (self.0)(name).filter(|v| !v.trim().is_empty())
    }
}

/// The gang this process belongs to: `BATON_GANG`, else what its launcher says of the job:
/// the Slurm job step (`SLURM_JOB_ID`.`SLURM_STEP_ID`), else torchrun's `TORCHELASTIC_RUN_ID`,
/// else `MASTER_ADDR`:`MASTER_PORT` when `WORLD_SIZE` is above 1; else none. Read once, at
/// start-up.
fn gang(env: &Lookup<impl Fn(&str) -> Option<String>>) -> Option<String> {
    let var = |n: &str| env.var(n).map(|v| v.trim().to_string());
    if let Some((_, v)) = env.setting(&GANG) {
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedulerMode {
    /// Nobody: the application suspends and resumes its own queues.
    App,
    /// A scheduler inside this process.
    Local,
    /// The daemon, across processes.
    Global,
}

impl SchedulerMode {
    /// A scheduler inside this process.
    pub const DEFAULT: SchedulerMode = SchedulerMode::Local;

    /// `app`, `local` or `global`, as `BATON_SCHEDULER` takes it.
    pub const fn name(self) -> &'static str {
        match self {
            SchedulerMode::App => "app",
            SchedulerMode::Local => "local",
            SchedulerMode::Global => "global",
        }
    }
}

impl Default for SchedulerMode {
    fn default() -> Self {
        SchedulerMode::DEFAULT
    }
}

impl fmt::Display for SchedulerMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
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
    /// The device time each piece of a split cuBLAS GEMM should take, in µs (0: never split);
    /// see [`AgentConfig::gemm_piece_us`].
    pub gemm_piece: Option<u64>,
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
            enabled: Self::DEFAULT_ENABLED,
            priority: Priority::DEFAULT,
            level: Self::DEFAULT_LEVEL,
            launch: LaunchConfig::default(),
            keep_window: Self::DEFAULT_KEEP_WINDOW,
            max_buffered: baton_core::DEFAULT_MAX_BUFFERED,
            yield_slice: None,
            run_slice_us: None,
            lead_slice: None,
            inflight_budget: None,
            gemm_piece: None,
            early_refill: Self::DEFAULT_EARLY_REFILL,
            l3_off: Self::DEFAULT_L3_OFF,
            yield_to_others: None,
            yield_sms: None,
            command_time: Self::DEFAULT_COMMAND_TIME,
            sms: None,
            mps: None,
            mps_pipe: PathBuf::from(DEFAULT_MPS_PIPE_DIRECTORY),
            stall_report_s: None,
            profile: Self::DEFAULT_PROFILE,
            scheduler: SchedulerMode::DEFAULT,
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
    /// Every variable the agent reads, with its XSched alias and its default; `docs/USAGE.md`
    /// says what each means (a test holds the two together).
    pub const SETTINGS: &'static [Setting] = &[
        PRIORITY,
        LEVEL,
        YIELD,
        YIELD_SMS,
        YIELD_SLICE_US,
        L3_OFF,
        LEAD_SLICE_US,
        RUN_SLICE_US,
        INFLIGHT_US,
        GEMM_PIECE_US,
        EARLY_REFILL,
        COMMAND_TIME,
        MAX_BUFFERED,
        THRESHOLD,
        BATCH,
        KEEP_WINDOW,
        UTILIZATION,
        DEADLINE_US,
        GANG,
        SCHEDULER,
        SOCKET,
        POLICY,
        CUDA_LIB,
        ENABLE,
        LOG,
        PROFILE,
        SMS,
        MPS,
        STALL_REPORT_S,
    ];

    /// Whether Baton schedules (`BATON_ENABLE`).
    pub const DEFAULT_ENABLED: bool = true;
    /// The preemption level asked for (`BATON_LEVEL`).
    pub const DEFAULT_LEVEL: Level = Level::L1;
    /// Whether queues keep their launch window when nothing could suspend them
    /// (`BATON_KEEP_WINDOW`).
    pub const DEFAULT_KEEP_WINDOW: bool = false;
    /// The time slice of a context none of whose queues runs freely, in µs
    /// (`BATON_YIELD_SLICE_US`).
    pub const DEFAULT_YIELD_SLICE_US: u64 = 100;
    /// The time slice of a controlled context while one of its queues runs freely and
    /// outranks other work on its device, in µs (`BATON_LEAD_SLICE_US`).
    pub const DEFAULT_LEAD_SLICE_US: u64 = 10_000;
    /// The device time a queue's commands in flight may take while a more urgent queue could
    /// hold it, in µs (`BATON_INFLIGHT_US`).
    pub const DEFAULT_INFLIGHT_BUDGET_US: u64 = 250;
    /// The device time a piece of a split GEMM should take, in µs (`BATON_GEMM_PIECE_US`).
    pub const DEFAULT_GEMM_PIECE_US: u64 = 100;
    /// Whether sync points split what the in-flight budget admits (`BATON_EARLY_REFILL`).
    pub const DEFAULT_EARLY_REFILL: bool = true;
    /// Whether a context suspended at Level 3 also leaves the run list (`BATON_L3_OFF`).
    pub const DEFAULT_L3_OFF: bool = false;
    /// Whether command times and stream use are told to the scheduler
    /// (`BATON_COMMAND_TIME`).
    pub const DEFAULT_COMMAND_TIME: bool = true;
    /// Whether intercepted calls are counted and timed for the report (`BATON_PROFILE`).
    pub const DEFAULT_PROFILE: bool = false;

    /// Reads the settings through `get` (normally `std::env::var`), `BATON_*` first, then the
    /// `XSCHED_*` alias.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> AgentConfig {
        let mut c = AgentConfig::default();
        let env = Lookup(get);

        c.enabled = c.switch(&env, &ENABLE, Self::DEFAULT_ENABLED);
        c.keep_window = c.switch(&env, &KEEP_WINDOW, Self::DEFAULT_KEEP_WINDOW);
        if let Some((name, v)) = env.setting(&PRIORITY) {
            match v
                .trim()
                .parse::<i64>()
                .ok()
                .and_then(|p| Priority::new(p).ok())
            {
                Some(p) => c.priority = p,
                None => c.warn(
                    name,
                    &v,
                    "use an integer from -100 to 100",
                    PRIORITY.default,
                ),
            }
        }
        if let Some((name, v)) = env.setting(&LEVEL) {
            match v.parse::<Level>() {
                Ok(l) => c.level = l,
                Err(_) => c.warn(name, &v, "use 1, 2 or 3", LEVEL.default),
            }
        }
        let threshold = env.setting(&THRESHOLD);
        let batch = env.setting(&BATCH);
        if threshold.is_some() || batch.is_some() {
            let parse = |x: &Option<(&str, String)>, dflt: u32| {
                x.as_ref()
                    .map_or(Some(dflt), |(_, v)| v.trim().parse::<u32>().ok())
            };
            let t = parse(&threshold, LaunchConfig::DEFAULT_THRESHOLD);
            let b = parse(
                &batch,
                LaunchConfig::DEFAULT_BATCH.min(
                    t.unwrap_or(LaunchConfig::DEFAULT_THRESHOLD)
                        .saturating_sub(1)
                        .max(1),
                ),
            );
            let ignoring = format!("baton: ignoring {}/{}", THRESHOLD.name, BATCH.name);
            let using = format!(
                "using threshold {}, batch {}",
                THRESHOLD.default, BATCH.default
            );
            match (t, b) {
                (Some(t), Some(b)) => match LaunchConfig::new(t, b) {
                    Ok(l) => c.launch = l,
                    Err(e) => c.warnings.push(format!("{ignoring} ({e}); {using}")),
                },
                _ => c
                    .warnings
                    .push(format!("{ignoring}: not whole numbers; {using}")),
            }
        }
        if let Some(n) = c.whole(
            &env,
            &MAX_BUFFERED,
            1..=1_000_000,
            "use a whole number from 1 to 1000000",
        ) {
            c.max_buffered = n;
        }
        let slice_us = "use a whole number of µs from 1 to 2000000";
        if let Some(n) = c.whole(&env, &YIELD_SLICE_US, 1..=2_000_000, slice_us) {
            c.yield_slice = Some(n);
        }
        c.run_slice_us = c
            .whole(&env, &RUN_SLICE_US, 1..=2_000_000, slice_us)
            .or(c.run_slice_us);
        c.lead_slice = c
            .whole(&env, &LEAD_SLICE_US, 1..=2_000_000, slice_us)
            .or(c.lead_slice);
        c.inflight_budget = c
            .whole(
                &env,
                &INFLIGHT_US,
                0..=10_000_000,
                "use a whole number of µs from 0 (no bound) to 10000000",
            )
            .or(c.inflight_budget);
        c.gemm_piece = c
            .whole(
                &env,
                &GEMM_PIECE_US,
                0..=1_000_000,
                "use a whole number of µs from 0 (never split) to 1000000",
            )
            .or(c.gemm_piece);
        if let Some((name, v)) = env.setting(&YIELD) {
            c.yield_to_others = match v.trim().to_ascii_lowercase().as_str() {
                "auto" | "" => None,
                "1" | "on" | "yes" | "true" => Some(true),
                "0" | "off" | "no" | "false" => Some(false),
                _ => {
                    c.warn(name, &v, "use on, off or auto", YIELD.default);
                    None
                }
            };
        }
        if let Some((name, v)) = env.setting(&YIELD_SMS) {
            match SmShare::parse(&v) {
                Some(s) => c.yield_sms = Some(s),
                // What is used instead: `--yield`'s default share; held back, no confinement.
                None => {
                    let using = if c.yield_to_others == Some(true) {
                        YIELD_SMS.default.to_string()
                    } else {
                        "none (not confined)".to_string()
                    };
                    c.warn(
                        name,
                        &v,
                        "use a number of SMs (at least 1) or a share of them from 1% to 99%",
                        using,
                    );
                }
            }
        }
        c.command_time = c.switch(&env, &COMMAND_TIME, Self::DEFAULT_COMMAND_TIME);
        c.l3_off = c.switch(&env, &L3_OFF, Self::DEFAULT_L3_OFF);
        c.early_refill = c.switch(&env, &EARLY_REFILL, Self::DEFAULT_EARLY_REFILL);
        c.sms = c
            .whole(
                &env,
                &SMS,
                1..=100_000,
                "use a whole number of SMs, at least 1",
            )
            .or(c.sms);
        if let Some((name, v)) = env.setting(&MPS) {
            match v.trim().to_ascii_lowercase().as_str() {
                "on" | "1" | "yes" => c.mps = Some(true),
                "off" | "0" | "no" => c.mps = Some(false),
                "auto" | "" => c.mps = None,
                _ => c.warnings.push(format!(
                    "baton: ignoring {name}={v:?}: use on, off or auto; looking for the MPS control pipe"
                )),
            }
        }
        if let Some(d) = env.var("CUDA_MPS_PIPE_DIRECTORY") {
            c.mps_pipe = PathBuf::from(d);
        }
        c.stall_report_s = c
            .whole(
                &env,
                &STALL_REPORT_S,
                1..=3600,
                "use a whole number of seconds from 1 to 3600",
            )
            .or(c.stall_report_s);
        c.profile = c.switch(&env, &PROFILE, Self::DEFAULT_PROFILE);
        if let Some((name, v)) = env.setting(&SCHEDULER) {
            match v.trim().to_ascii_lowercase().as_str() {
                "app" => c.scheduler = SchedulerMode::App,
                "local" | "lcl" => c.scheduler = SchedulerMode::Local,
                "global" | "glb" => c.scheduler = SchedulerMode::Global,
                _ => c.warn(name, &v, "use app, local or global", SCHEDULER.default),
            }
        }
        if let Some((name, v)) = env.setting(&POLICY) {
            match baton_policies::by_name(&v) {
                Ok(p) => {
                    c.policy = p.name().to_string();
                    if Some(name) == POLICY.alias {
                        // XSched: setting a policy selects the local scheduler.
                        c.scheduler = SchedulerMode::Local;
                    }
                }
                Err(e) => c.warnings.push(format!(
                    "baton: ignoring {name}={v:?}: {e}; using {}",
                    POLICY.default
                )),
            }
        }
        if let Some((name, v)) = env.setting(&UTILIZATION) {
            match v.trim().trim_end_matches('%').parse::<u8>() {
                Ok(p @ 1..=100) => c.utilization = Some(p),
                _ => c.warn(
                    name,
                    &v,
                    "use a whole percentage from 1 to 100",
                    UTILIZATION.default,
                ),
            }
        }
        if let Some((name, v)) = env.setting(&DEADLINE_US) {
            let max_us = MAX_DURATION_NS / 1_000;
            match v.trim().parse::<u64>() {
                Ok(us @ 1..) if us <= max_us => c.deadline = Some(Nanos::from_micros(us)),
                _ => c.warn(
                    name,
                    &v,
                    &format!("use whole microseconds from 1 to {max_us}"),
                    DEADLINE_US.default,
                ),
            }
        }
        c.gang = gang(&env);
        if let Some((_, v)) = env.setting(&SOCKET) {
            c.socket = Some(PathBuf::from(v));
        }
        if let Some((name, v)) = env.setting(&CUDA_LIB) {
            let p = PathBuf::from(&v);
            if p.is_absolute() {
                c.cuda_lib = Some(p);
            } else {
                c.warn(name, &v, "give an absolute path", CUDA_LIB.default);
            }
        }
        if let Some((_, v)) = env.setting(&LOG) {
            c.log = Some(v);
        }
        c
    }

    /// Reads the settings from this process's environment.
    pub fn from_env() -> AgentConfig {
        AgentConfig::from_lookup(|n| std::env::var(n).ok())
    }

    /// The process-wide hints these settings give the daemon: the priority (when not the
    /// default), the utilization share, the deadline and the gang, when set, and under MPS
    /// that the process shares its GPU's context (`Hint::SharedContext`, for `baton list`).
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
        if self.under_mps() {
            h.push(Hint::SharedContext);
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
    /// outranked by a more urgent queue), in µs: `BATON_YIELD_SLICE_US`, else
    /// [`AgentConfig::DEFAULT_YIELD_SLICE_US`]. A context
    /// whose slice is that short hands the GPU over within the hardware's switch time (about
    /// 0.2–0.4 ms on Hopper) whenever another context has work, mid-kernel.
    pub fn yield_slice_us(&self) -> u64 {
        self.yield_slice.unwrap_or(Self::DEFAULT_YIELD_SLICE_US)
    }

    /// The time slice of a context one of whose queues runs freely and outranks other work
    /// on its device (a service beside a job), in µs: `BATON_LEAD_SLICE_US`, else
    /// [`AgentConfig::DEFAULT_LEAD_SLICE_US`]. Only the running context's slice decides when the GPU switches, so once the service
    /// has the GPU the job's runnable work does not take it back before the service's work
    /// pauses or this long has passed.
    pub fn lead_slice_us(&self) -> u64 {
        self.lead_slice.unwrap_or(Self::DEFAULT_LEAD_SLICE_US)
    }

    /// The device time a queue's commands in flight may take while it keeps its launch window
    /// (a more urgent queue could hold it), in µs: `BATON_INFLIGHT_US`, else
    /// [`AgentConfig::DEFAULT_INFLIGHT_BUDGET_US`]; 0: no bound.
    /// A hold at Level 1 waits for what is in flight; bounded by time, that wait is short
    /// whatever the commands' length (one 1.5 ms GEMM, or two or three 110 µs kernels).
    pub fn inflight_budget_us(&self) -> u64 {
        self.inflight_budget
            .unwrap_or(Self::DEFAULT_INFLIGHT_BUDGET_US)
    }

    /// The device time each piece of a cuBLAS GEMM should take when Baton splits it, in µs:
    /// `BATON_GEMM_PIECE_US`, else [`AgentConfig::DEFAULT_GEMM_PIECE_US`]; 0: never split.
    /// GEMMs are split only while a scheduler may hold their stream back (its work in flight
    /// bounded by [`AgentConfig::inflight_budget_us`]), and only shapes whose pieces were
    /// found bit-identical to the whole call on the device.
    pub fn gemm_piece_us(&self) -> u64 {
        self.gemm_piece.unwrap_or(Self::DEFAULT_GEMM_PIECE_US)
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
    /// on): `BATON_YIELD_SMS`, else [`SmShare::DEFAULT`]. Not the default: a held job
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

    /// A whole number in `range` that `setting` is set to, or `None` (with a warning naming
    /// its default if it is set to anything else).
    fn whole<T: std::str::FromStr + PartialOrd>(
        &mut self,
        env: &Lookup<impl Fn(&str) -> Option<String>>,
        setting: &Setting,
        range: std::ops::RangeInclusive<T>,
        how: &str,
    ) -> Option<T> {
        let (name, v) = env.setting(setting)?;
        match v.trim().parse::<T>() {
            Ok(n) if range.contains(&n) => Some(n),
            _ => {
                self.warn(name, &v, how, setting.default);
                None
            }
        }
    }

    /// An on/off setting: as set, else `default`; anything else is reported and `default`
    /// used.
    fn switch(
        &mut self,
        env: &Lookup<impl Fn(&str) -> Option<String>>,
        setting: &Setting,
        default: bool,
    ) -> bool {
        let Some((name, value)) = env.setting(setting) else {
            return default;
        };
        match value.trim().to_ascii_lowercase().as_str() {
            "1" | "on" | "yes" | "true" => true,
            "0" | "off" | "no" | "false" => false,
            _ => {
                self.warn(name, &value, "use on or off", Switch(default));
                default
            }
        }
    }

    fn warn(&mut self, name: &str, value: &str, how: &str, using: impl fmt::Display) {
        self.warnings.push(format!(
            "baton: ignoring {name}={value:?}: {how}; using {using}"
        ));
    }
}

#[cfg(test)]
mod tests;
