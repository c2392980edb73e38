//! `BATON_REPORT`: what the interposer did in this process, written as JSON at exit.
//!
//! Totals (kernels, commands, how many were deferred, launched in order or bypassed), the
//! hooks' profile when `BATON_PROFILE` is on, how long submitting threads were held back, the
//! Level-3 contexts' time-slice changes, and the busiest queues. `BATON_REPORT` names a file,
//! or a directory that gets `baton-report-<pid>.json` (made if need be when the name ends with
//! `/`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use serde::Serialize;

use baton_agent::{AgentConfig, LinkTraffic};
use baton_cuda::core::locks;

use crate::registry::{Registry, StreamEntry};

/// Launch calls whose thread a queue held back.
#[derive(Debug, Default)]
pub(crate) struct HeldCounts {
    /// How many.
    pub(crate) calls: AtomicU64,
    /// For how long in all (ns).
    pub(crate) ns: AtomicU64,
    /// How many of them while the thread held Python's interpreter lock.
    pub(crate) with_gil: AtomicU64,
}

/// What the report says of cuBLAS GEMMs (`blas/`).
#[derive(Default)]
pub(crate) struct GemmStats {
    /// GEMM calls made through the hooks while Baton schedules.
    pub(crate) calls: AtomicU64,
    /// Of them, those made in pieces, and the pieces.
    pub(crate) split_calls: AtomicU64,
    pub(crate) pieces: AtomicU64,
    /// Shapes checked on the device, and the time the checks took on the calling threads.
    pub(crate) checks: AtomicU64,
    pub(crate) check_ns: AtomicU64,
    /// Of the checks, those whose stream was held through every timing (checked again later).
    pub(crate) held_checks: AtomicU64,
    /// cuBLASLt calls on a stream that may be held whose arguments rule pieces out (an
    /// epilogue, scaling or layout that spans columns, `C` apart from `D`: `blas/lt.rs`).
    pub(crate) ruled_out: AtomicU64,
    /// How many of them each rule ruled out.
    pub(crate) ruled_out_why: Mutex<BTreeMap<&'static str, u64>>,
    /// The first [`GEMM_SHAPES`] checked shapes and what was found.
    pub(crate) shapes: Mutex<Vec<GemmShape>>,
}

/// How many checked GEMM shapes the report lists.
pub(crate) const GEMM_SHAPES: usize = 32;

/// One checked GEMM shape: the entry point, its dimensions and types (`Atype`, `Btype`,
/// `Ctype`, `computeType`, `algo`; zeros for the typed calls; for cuBLASLt the types of `A`,
/// `B` and `D`, `computeType` and `scaleType`), and what the check found.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct GemmShape {
    pub(crate) entry: &'static str,
    pub(crate) m: i32,
    pub(crate) n: i32,
    pub(crate) k: i32,
    pub(crate) batch: i32,
    pub(crate) types: [i32; 5],
    /// `short`, `split`, `differs`, `costly` or `unchecked`.
    pub(crate) verdict: &'static str,
    pub(crate) pieces: u32,
    pub(crate) whole_us: f64,
    pub(crate) split_us: f64,
    /// For `unchecked`: the driver's error, or 10 000 plus cuBLAS's status.
    pub(crate) code: u32,
}

impl GemmStats {
    /// Counts a cuBLASLt call whose arguments rule pieces out, by `why`.
    pub(crate) fn ruled_out(&self, why: &'static str) {
        self.ruled_out.fetch_add(1, Ordering::Relaxed);
        *locks::lock(&self.ruled_out_why).entry(why).or_default() += 1;
    }

    /// Keeps `shape` for the report, if there is room.
    pub(crate) fn checked(&self, shape: GemmShape) {
        let mut s = baton_cuda::core::locks::lock(&self.shapes);
        if s.len() < GEMM_SHAPES {
            s.push(shape);
        }
    }
}

/// The report's `gemm` section.
#[derive(Serialize)]
struct GemmReport {
    calls: u64,
    split_calls: u64,
    pieces: u64,
    checks: u64,
    check_ms: f64,
    held_checks: u64,
    ruled_out: u64,
    ruled_out_why: BTreeMap<&'static str, u64>,
    shapes: Vec<GemmShape>,
}

impl GemmReport {
    fn of(g: &GemmStats) -> GemmReport {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        GemmReport {
            calls: n(&g.calls),
            split_calls: n(&g.split_calls),
            pieces: n(&g.pieces),
            checks: n(&g.checks),
            check_ms: n(&g.check_ns) as f64 / 1e6,
            held_checks: n(&g.held_checks),
            ruled_out: n(&g.ruled_out),
            ruled_out_why: locks::lock(&g.ruled_out_why).clone(),
            shapes: baton_cuda::core::locks::lock(&g.shapes).clone(),
        }
    }
}

/// Counters reported at exit when `BATON_REPORT` names a file.
#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) graphs: AtomicU64,
    pub(crate) deferred: AtomicU64,
    pub(crate) in_order: AtomicU64,
    pub(crate) bypassed: AtomicU64,
    pub(crate) streams: AtomicU64,
    /// Times the liveness guard let suspended queues through (see `guard_liveness`).
    pub(crate) liveness_releases: AtomicU64,
    /// Times held-back commands were launched before a function attribute changed.
    pub(crate) attribute_flushes: AtomicU64,
    /// Function attribute changes made while commands were held back that could affect none
    /// of them (they stayed held).
    pub(crate) attribute_changes_held_over: AtomicU64,
    /// The flushes by attribute (`CUfunction_attribute`; the last slot: any higher number),
    /// and how many of them were of a value the driver would not tell.
    pub(crate) attribute_flushes_by: [AtomicU64; ATTRIBUTE_SLOTS],
    pub(crate) attribute_flushes_unknown: AtomicU64,
    /// Held launches a lowered dynamic shared memory limit released because the driver would
    /// not tell their own function's limit (through the handle they were made with).
    pub(crate) attribute_limits_unknown: AtomicU64,
    /// Queues whose held work a call launched from their suspension, by the call's kind
    /// ([`Release`]).
    pub(crate) releases: [AtomicU64; Release::ALL.len()],
    /// The first attribute changes that launched held work: what changed, from what to what.
    pub(crate) attribute_flush_samples: Mutex<Vec<AttributeFlush>>,
    /// Launch calls whose thread a queue held back.
    pub(crate) held: HeldCounts,
    /// cuBLAS GEMMs split into pieces, and the checks of their shapes (`blas/`).
    pub(crate) gemm: GemmStats,
    /// The busiest queues whose streams or contexts were destroyed before exit, as they ended
    /// (kept only when `BATON_REPORT` asks for a report).
    retired: Mutex<Vec<Queue>>,
}

impl Stats {
    /// A queue whose stream or context is being destroyed: kept for the report, which would
    /// otherwise list only the queues alive at exit. Told again once it has drained, its
    /// figures replace those it was first kept with (a process may exit before a destroyed
    /// stream's background drain ends: then its figures are those of the destroy call).
    pub(crate) fn retire(&self, e: &StreamEntry) {
        if !asked() {
            return;
        }
        let Some(mut q) = Queue::of(e) else {
            return;
        };
        q.destroyed = true;
        q.key = e.xq.id().0;
        let mut retired = locks::lock(&self.retired);
        match retired.iter_mut().find(|r| r.key == q.key) {
            Some(r) => *r = q,
            None => retired.push(q),
        }
        if retired.len() > QUEUES_SHOWN {
            retired.sort_by_key(|q| std::cmp::Reverse(q.commands));
            retired.truncate(QUEUES_SHOWN);
        }
    }
}

/// The kinds of call that launch work a suspended queue holds, because natively the call
/// comes after it (see `Runtime::release`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Release {
    /// A function attribute change that could affect a held launch.
    Attribute,
    /// Freeing or unregistering memory.
    Free,
    /// Unloading a module or library.
    Unload,
    /// Changing or destroying an executable graph.
    Graph,
    /// An event recorded for, or waited by, a whole context; a launch across devices.
    Context,
    /// A context synchronization by a thread the held work may be waiting for.
    ContextSync,
    /// A stream starting to record into a graph.
    Capture,
    /// The liveness guard: no queue progressed while suspended ones held work.
    Liveness,
}

impl Release {
    pub(crate) const ALL: [Release; 8] = [
        Release::Attribute,
        Release::Free,
        Release::Unload,
        Release::Graph,
        Release::Context,
        Release::ContextSync,
        Release::Capture,
        Release::Liveness,
    ];

    fn name(self) -> &'static str {
        match self {
            Release::Attribute => "attribute",
            Release::Free => "free",
            Release::Unload => "unload",
            Release::Graph => "graph",
            Release::Context => "context",
            Release::ContextSync => "context_sync",
            Release::Capture => "capture",
            Release::Liveness => "liveness",
        }
    }
}

/// One attribute change that launched held work.
#[derive(Clone, Copy, Debug, Serialize)]
pub(crate) struct AttributeFlush {
    pub(crate) attribute: u32,
    pub(crate) from: Option<i32>,
    pub(crate) to: i32,
    /// Through `cuKernelSetAttribute` (else `cuFuncSetAttribute`).
    pub(crate) kernel: bool,
}

/// How many [`AttributeFlush`]es the report keeps.
pub(crate) const ATTRIBUTE_FLUSH_SAMPLES: usize = 16;

/// Slots of [`Stats::attribute_flushes_by`]: the attributes CUDA 13 defines (0–15), and one
/// for any other.
pub(crate) const ATTRIBUTE_SLOTS: usize = 17;

/// Whether `BATON_REPORT` asks for a report (read once).
fn asked() -> bool {
    static ASKED: OnceLock<bool> = OnceLock::new();
    *ASKED.get_or_init(|| std::env::var_os("BATON_REPORT").is_some())
}

/// The version of this document's shape.
pub(crate) const SCHEMA: &str = "baton.interposer-report/1";

/// The whole report.
#[derive(Serialize)]
pub(crate) struct Report {
    schema: &'static str,
    pid: u32,
    kernels: u64,
    graph_launches: u64,
    commands: u64,
    deferred: u64,
    in_order: u64,
    bypassed: u64,
    streams: u64,
    liveness_releases: u64,
    attribute_flushes: u64,
    attribute_changes_held_over: u64,
    /// Flushes by attribute number (`"16"`: any higher), those that happened.
    attribute_flushes_by: std::collections::BTreeMap<String, u64>,
    attribute_flushes_unknown: u64,
    attribute_flush_samples: Vec<AttributeFlush>,
    attribute_limits_unknown: u64,
    /// Queues whose held work a call launched from their suspension, by the call's kind.
    held_releases: std::collections::BTreeMap<&'static str, u64>,
    hooks: Vec<Hook>,
    /// cuBLAS GEMMs: how many were split, and what the checks of their shapes found.
    gemm: GemmReport,
    submitter_held: u64,
    submitter_held_ms: f64,
    held_with_python_lock: u64,
    sync_points: u64,
    level: String,
    level3_contexts: Vec<Level3Context>,
    queues: Vec<Queue>,
    scheduler: String,
    /// Frames exchanged with the daemon (global scheduling only).
    #[serde(skip_serializing_if = "Option::is_none")]
    daemon_link: Option<DaemonLink>,
    enabled: bool,
}

/// The frames this process exchanged with the daemon.
#[derive(Serialize)]
struct DaemonLink {
    sent: u64,
    operations_received: u64,
    attention_received: u64,
    other_received: u64,
}

/// One hook's profile.
#[derive(Serialize)]
struct Hook {
    call: &'static str,
    calls: u64,
    us: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    driver_calls: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    driver_us: Option<f64>,
}

/// One context's Level-3 time-slice control.
#[derive(Serialize)]
struct Level3Context {
    channel_group: u32,
    normal_us: u64,
    yield_us: u64,
    changes: u64,
    /// Times the channel group was taken off the GPU's run list and put back (`BATON_L3_OFF`).
    offs: u64,
    ons: u64,
    busy_us: u64,
    longest_us: u64,
    failures: u64,
    error: Option<String>,
}

/// One of the busiest queues.
#[derive(Clone, Serialize)]
struct Queue {
    stream: String,
    priority: i32,
    commands: u64,
    deferred: u64,
    behind_other_streams: u64,
    submitter_held: u64,
    submitter_held_ms: f64,
    held_with_python_lock: u64,
    confined_sms: Option<u32>,
    confined_kernels: usize,
    /// Sync points recorded on it: how often it kept its launch window (the process's total
    /// is `sync_points` above).
    sync_points: u64,
    /// Commands launched while it was suspended, because a call or another queue needed them.
    released_while_suspended: u64,
    /// What its suspensions found in flight: what a more urgent program's work could find
    /// on the GPU when the hold came (absent if it was never suspended).
    #[serde(skip_serializing_if = "Option::is_none")]
    inflight_at_suspend: Option<AtSuspend>,
    /// How long one of its commands took on the GPU while it kept the GPU busy (µs, a moving
    /// average), if measured.
    command_us: Option<f64>,
    /// The readiness its scheduler was last told (`Hint::Readiness`), in ‰ of the period: the
    /// share the queue had work, and the share its program waited for it.
    ready_permille: Option<u16>,
    waiting_permille: Option<u16>,
    /// Its stream (or context) was destroyed before exit; these are its figures then.
    destroyed: bool,
    /// Which queue it was kept for, while retired (its id: never reused in the process).
    #[serde(skip)]
    key: u64,
}

/// A queue's suspensions and what they found in flight ([`baton_cuda::core::InflightAtSuspend`]).
#[derive(Clone, Serialize)]
struct AtSuspend {
    suspensions: u64,
    /// Suspensions that found its command time not measured yet (its window bounded by count).
    unmeasured: u64,
    /// Suspensions that found it bounded by the device-time budget (`BATON_INFLIGHT_US`).
    budgeted: u64,
    mean_commands: f64,
    max_commands: u64,
    /// By its measured command time, over the measured suspensions.
    mean_us: f64,
    max_us: f64,
}

impl AtSuspend {
    fn of(a: baton_cuda::core::InflightAtSuspend) -> Option<AtSuspend> {
        if a.suspensions == 0 {
            return None;
        }
        let measured = a.suspensions - a.unmeasured;
        Some(AtSuspend {
            suspensions: a.suspensions,
            unmeasured: a.unmeasured,
            budgeted: a.budgeted,
            mean_commands: a.commands as f64 / a.suspensions as f64,
            max_commands: a.max_commands,
            mean_us: if measured == 0 {
                0.0
            } else {
                a.device_ns as f64 / measured as f64 / 1e3
            },
            max_us: a.max_device_ns as f64 / 1e3,
        })
    }
}

impl Queue {
    /// The queue of `e` now, if it ever took a command.
    fn of(e: &StreamEntry) -> Option<Queue> {
        let c = &e.counts;
        let [commands, deferred, behind, held_with_gil] =
            [&c.commands, &c.deferred, &c.behind, &c.held_with_gil]
                .map(|n| n.load(Ordering::Relaxed));
        if commands == 0 {
            return None;
        }
        let (held, held_ns) = e.xq.submitter_held();
        let told = e.told_readiness();
        Some(Queue {
            stream: format!("{:?} {:#x}", e.kind, e.handle as usize),
            priority: e.priority.current(),
            commands,
            deferred,
            behind_other_streams: behind,
            submitter_held: held,
            submitter_held_ms: held_ns.0 as f64 / 1e6,
            held_with_python_lock: held_with_gil,
            confined_sms: e.xq.hw().confined_sms(),
            confined_kernels: e.xq.hw().confined_kernels(),
            sync_points: e.xq.hw().sync_points(),
            released_while_suspended: e.xq.released_while_suspended(),
            inflight_at_suspend: AtSuspend::of(e.xq.inflight_at_suspend()),
            command_us: e.xq.command_time().map(|t| t.0 as f64 / 1e3),
            ready_permille: told.map(|r| r.ready),
            waiting_permille: told.map(|r| r.waiting),
            destroyed: false,
            key: 0,
        })
    }
}

/// How many queues the report lists, busiest first.
const QUEUES_SHOWN: usize = 12;

impl Report {
    /// The report now, from the process's counters, its kernels and commands submitted, its
    /// queues and its settings.
    pub(crate) fn of(
        s: &Stats,
        (kernels, commands): (u64, u64),
        reg: &Registry,
        cfg: &AgentConfig,
        link: Option<LinkTraffic>,
    ) -> Report {
        let n = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
        let micros = |d: std::time::Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        let mut queues: Vec<Queue> = reg.all().iter().filter_map(|e| Queue::of(e)).collect();
        queues.extend(locks::lock(&s.retired).iter().cloned());
        queues.sort_by_key(|q| std::cmp::Reverse(q.commands));
        queues.truncate(QUEUES_SHOWN);
        let hooks = crate::profile::table()
            .into_iter()
            .map(|h| {
                let measured = h.driver_calls > 0;
                Hook {
                    call: h.name,
                    calls: h.calls,
                    us: h.us,
                    driver_calls: measured.then_some(h.driver_calls),
                    driver_us: measured.then_some(h.driver_us),
                }
            })
            .collect();
        let level3_contexts = reg
            .slices()
            .iter()
            .map(|c| {
                let (st, err) = c.stats();
                Level3Context {
                    channel_group: c.group().handle,
                    normal_us: c.normal_us(),
                    yield_us: c.yield_us(),
                    changes: st.changes,
                    offs: st.offs,
                    ons: st.ons,
                    busy_us: micros(st.busy),
                    longest_us: micros(st.longest),
                    failures: st.failures,
                    error: err.map(|e| e.to_string()),
                }
            })
            .collect();
        Report {
            schema: SCHEMA,
            pid: std::process::id(),
            kernels,
            graph_launches: n(&s.graphs),
            commands,
            deferred: n(&s.deferred),
            in_order: n(&s.in_order),
            bypassed: n(&s.bypassed),
            streams: n(&s.streams),
            liveness_releases: n(&s.liveness_releases),
            attribute_flushes: n(&s.attribute_flushes),
            attribute_changes_held_over: n(&s.attribute_changes_held_over),
            attribute_flushes_by: s
                .attribute_flushes_by
                .iter()
                .enumerate()
                .filter(|(_, c)| n(c) > 0)
                .map(|(a, c)| (a.to_string(), n(c)))
                .collect(),
            attribute_flushes_unknown: n(&s.attribute_flushes_unknown),
            attribute_flush_samples: locks::lock(&s.attribute_flush_samples).clone(),
            attribute_limits_unknown: n(&s.attribute_limits_unknown),
            held_releases: Release::ALL
                .iter()
                .zip(&s.releases)
                .filter(|(_, c)| n(c) > 0)
                .map(|(r, c)| (r.name(), n(c)))
                .collect(),
            hooks,
            gemm: GemmReport::of(&s.gemm),
            submitter_held: n(&s.held.calls),
            submitter_held_ms: n(&s.held.ns) as f64 / 1e6,
            held_with_python_lock: n(&s.held.with_gil),
            sync_points: reg.sync_points(),
            level: cfg.level.to_string(),
            level3_contexts,
            queues,
            scheduler: cfg.scheduler.to_string(),
            daemon_link: link.map(|t| DaemonLink {
                sent: t.sent,
                operations_received: t.operations,
                attention_received: t.attention,
                other_received: t.other,
            }),
            enabled: cfg.enabled,
        }
    }

    /// Writes the report where `BATON_REPORT` says, if it says.
    pub(crate) fn write_if_asked(
        s: &Stats,
        totals: (u64, u64),
        reg: &Registry,
        cfg: &AgentConfig,
        link: Option<LinkTraffic>,
    ) {
        let Some(path) = std::env::var_os("BATON_REPORT") else {
            return;
        };
        let mut p = std::path::PathBuf::from(&path);
        // A trailing slash names a directory, made if need be: one file per process, so that
        // the processes of one run do not overwrite each other's report.
        if std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()).ends_with(b"/") {
            let _ = std::fs::create_dir_all(&p);
        }
        if p.is_dir() {
            p.push(format!("baton-report-{}.json", std::process::id()));
        }
        if let Ok(mut text) = serde_json::to_string(&Report::of(s, totals, reg, cfg, link)) {
            text.push('\n');
            // At exit there is no one to tell: a report that cannot be written is lost.
            let _ = std::fs::write(p, text);
        }
    }
}
