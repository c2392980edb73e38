//! Highest priority first, per device: the default policy, stated as one model in
//! docs/POLICIES.md ("hpf") and written here as that statement ([`Hpf`], `GivesWay`,
//! `holds_back`).

use std::collections::{HashMap, HashSet};

use baton_core::{Nanos, Priority};

use crate::{Decision, DeviceId, Policy, QueuePlan, QueueView, Snapshot};

/// The bound under which another process's queue counts as giving way by its short commands
/// (`GivesWay::ShortCommands`), unless
/// [`GlobalHint::ShortCommand`](crate::GlobalHint::ShortCommand) sets another
/// (`baton daemon --short-command-us`). Zero: no command is short. Kernel length is not what
/// a more urgent program waits for: between time-sliced contexts it waits for the job's slice
/// whatever its kernels' length, and under MPS for its work in flight, which the device-time
/// budget (`BATON_INFLIGHT_US`) bounds instead (docs/POLICIES.md, "hpf", for the
/// measurements). The bound stays for operators who want streams of short kernels left alone.
pub const SHORT_COMMAND: Nanos = Nanos::ZERO;

/// How long one of several yielding processes outranked on a device runs before the next
/// one's turn ([`Hpf`], rule 3). At each turn the outgoing process's work in flight still
/// trades short slices with the incoming one's until it drains, so a turn must be long
/// against that drain: ten times the longest drain measured (docs/POLICIES.md, "hpf").
pub const YIELD_TURN: Nanos = Nanos::from_millis(200);

/// How a queue gives the device up by itself to another process's more urgent work, if it
/// does: what its process claims of it ([`Hint::Isolated`](crate::Hint::Isolated),
/// [`Hint::Confining`](crate::Hint::Confining), [`Hint::Yielding`](crate::Hint::Yielding)) or
/// measured of its commands ([`Hint::CommandTime`](crate::Hint::CommandTime)). Where several
/// apply, the first of isolated, short, confining, by its slice: a short queue needs no
/// window, so it is not confined either.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GivesWay {
    /// It does not: its kernels share the SMs and keep them until they end, and its context
    /// keeps the GPU for a whole slice. Only a hold keeps it off.
    No,
    /// Its kernels run on SMs other processes' work is kept off: it never meets that work.
    Isolated,
    /// Its kernels keep to part of the SMs while it is outranked, which it knows only while
    /// it stays suspendable: the rest are free for more urgent kernels.
    Confining,
    /// Its context's slice is short while it is outranked: the GPU is handed over within a
    /// switch when more urgent work arrives, and taken back in each of that work's pauses.
    BySlice,
    /// Its commands were measured shorter than the short-command bound ([`SHORT_COMMAND`]):
    /// each holds the device only briefly. Only where `short` commands are spared.
    ShortCommands,
}

/// How `queue` gives way ([`GivesWay`]); `short`: whether short commands are spared (HPF
/// itself, not the policies built on its rank order for other ends).
pub(crate) fn gives_way(queue: &QueueView, snap: &Snapshot<'_>, short: bool) -> GivesWay {
    let h = &queue.hints;
    if h.isolated.is_some() {
        GivesWay::Isolated
    } else if short && short_commands(queue, snap) {
        GivesWay::ShortCommands
    } else if h.confining.is_some() {
        GivesWay::Confining
    } else if h.yielding.is_some() {
        GivesWay::BySlice
    } else {
        GivesWay::No
    }
}

/// Whether `above`, a queue that outranks `queue` on its device and has work, needs `queue`
/// off the device ([`Hpf`], rule 1): it is of `queue`'s own process, whose context they share;
/// or `queue` does not give way by itself; or `queue` gives way by its slice and `above`'s
/// program keeps the device busy while it has work ([`keeps_busy`]), so that only a hold
/// keeps `queue` off through `above`'s pauses.
pub(crate) fn holds_back(above: &QueueView, queue: &QueueView, way: GivesWay) -> bool {
    above.pid == queue.pid
        || match way {
            GivesWay::No => true,
            GivesWay::BySlice => keeps_busy(above),
            GivesWay::Isolated | GivesWay::Confining | GivesWay::ShortCommands => false,
        }
}

/// **HPF** — highest priority first, per device. The model (docs/POLICIES.md, "hpf", with the
/// measurements behind each rule):
///
/// 1. **Held.** On each device a queue is held back (suspended) while a queue that outranks it
///    has work (is ready, lingers after a job, or announced work: [`PrePreempt`]) and needs it
///    off the device (`holds_back`): a queue of its own process always does; another
///    process's does unless the queue gives way by itself (`GivesWay`): its kernels keep
///    off that work's SMs, its commands are short (only where a bound is set), or its context
///    hands the GPU over by its slice and the more urgent program does not keep the device
///    busy while it has work. Nothing else is held: some ready queue on each device always
///    runs, and queues of one priority run together.
/// 2. **Bounded.** A queue that a queue ranked above it could hold, or make give way, keeps
///    its launch window; only a queue it could hold has its work in flight bounded by device
///    time (`BATON_INFLIGHT_US`), so a hold waits for little. A queue counts as ranked above
///    only once it has had work, or while its process has run none: programs create streams
///    they never use (PyTorch makes pools at every priority), but another process's queues
///    stand for a client that registered to be served.
/// 3. **Turns.** Yielding processes outranked on one device run one at a time, in turns of
///    [`YIELD_TURN`] in pid order, the highest priority among them first, unless every one of
///    them waits for its work at most `1 − 1/n` of its time (`n` processes): such a program
///    progresses while its host launches and keeps at least the `1/n` a turn would give.
///
/// The measured term ([`Hint::Readiness`](crate::Hint::Readiness)): a program *keeps the
/// device busy* unless it is bound by its own launching. **Until measured** (the first
/// measurement comes after half a second of work), a program is taken for whichever mistake
/// costs less: the more urgent program for one that does not keep the device busy (a yielding
/// job is not held for it: wrongly held beside a launch-bound service, a job is starved), a
/// job for one that does (it takes turns: wrongly left to trade slices, two floods lose most
/// of the device). [`Hint::TimeSliced`](crate::Hint::TimeSliced) is not read: a queue that only
/// says its context is time-sliced is held back as any other.
///
/// [`PrePreempt`]: crate::PrePreempt
#[derive(Clone, Copy, Debug, Default)]
pub struct Hpf;

impl Policy for Hpf {
    fn name(&self) -> &'static str {
        "hpf"
    }

    fn decide(&mut self, snap: &Snapshot<'_>) -> Decision {
        let mut d = rank_first_sparing(snap, Scope::PerDevice, |q| q.hints.priority, true);
        take_turns(snap, &mut d);
        d.plans = self.plans(snap);
        d
    }
}

impl Hpf {
    /// The plan for every queue of `snap`, in its order: what [`Hpf::attention`],
    /// [`Hpf::holds`] and [`Hpf::remeasures`] answer.
    pub(crate) fn plans(self, snap: &Snapshot<'_>) -> Vec<QueuePlan> {
        let holds = self.holds(snap);
        snap.queues
            .iter()
            .zip(self.attention(snap))
            .zip(holds)
            .map(|((q, (report, may_suspend)), may_hold)| QueuePlan {
                report,
                may_suspend,
                may_hold,
                remeasure: !may_suspend
                    && q.hints.command_time.is_some()
                    && self.remeasures(snap, q),
            })
            .collect()
    }

    #[cfg(test)]
    /// Only a queue that outranks another queue on its device can make HPF suspend anything,
    /// or a yielding queue that may take turns with another process's (see [`Hpf`]).
    pub(crate) fn wants_events(self, snap: &Snapshot<'_>, queue: &QueueView) -> bool {
        outranks_another(snap, queue)
            || TurnRanges::new(snap, &working_processes(snap)).may_take_turns(queue)
    }

    #[cfg(test)]
    /// HPF only suspends a queue that another queue on its device outranks — one that has
    /// had work, or that belongs to another process. Programs create streams they never use
    /// (PyTorch makes pools at every priority), and a queue that may be suspended keeps its
    /// launch window, which a launch-bound program pays for on every launch; another
    /// process's queues, though, stand for a client that registered to be served, and
    /// whatever runs unbounded before its first request is what that request waits behind.
    /// Once that process has run work, its unused queues count no more than the queue's own
    /// process's: every PyTorch process has pools of streams of higher CUDA priority, hence
    /// of higher Baton priority, and two services of one priority each kept the other
    /// bounded for good (docs/BENCHMARKS.md, "Earlier runs"). An unused queue that becomes
    /// ready is seen at once, and the outranked queue is bounded from its next launch.
    ///
    /// A queue of short commands is spared by other processes and runs without its window
    /// too, as an isolated one does: the window would cost it its speed (docs/BENCHMARKS.md,
    /// "Earlier runs") and only bounds a hold that never comes. Its process has
    /// it keep the window now and then to measure it again, so a stream that turns to long
    /// commands is heard and bounded again.
    pub(crate) fn may_suspend(self, snap: &Snapshot<'_>, queue: &QueueView) -> bool {
        may_suspend_sparing(snap, queue, true)
    }

    /// [`Hpf::wants_events`] and [`Hpf::may_suspend`] for every queue of `snap`, in its order,
    /// from one pass for each device's priority range.
    pub(crate) fn attention(self, snap: &Snapshot<'_>) -> Vec<(bool, bool)> {
        let working = working_processes(snap);
        let turns = TurnRanges::new(snap, &working);
        attention_among(snap, true, &working)
            .into_iter()
            .zip(snap.queues)
            .map(|((report, suspend), q)| (report || turns.may_take_turns(q), suspend))
            .collect()
    }

    #[cfg(test)]
    /// A queue that is not yielding, or a yielding one that its own process's work, a program
    /// that keeps the device busy while it has work (its readiness, not launch-bound) or
    /// turns with another yielding process can hold back: one outranked only by programs
    /// bound by their launching (or not measured yet) gives way by its slice alone, and
    /// bounding its work in flight by device time would only run its channel dry each time
    /// its host must launch more, each time a hand-over each way if the other program has
    /// work queued then.
    pub(crate) fn may_hold(self, snap: &Snapshot<'_>, queue: &QueueView) -> bool {
        if queue.hints.yielding.is_none() {
            return true;
        }
        let working = working_processes(snap);
        TurnRanges::new(snap, &working).may_take_turns(queue)
            || snap.on_device(queue.device).any(|q| {
                q.hints.priority > queue.hints.priority
                    && counts_against(q, queue, &working)
                    && holds_back(q, queue, GivesWay::BySlice)
            })
    }

    /// [`Hpf::may_hold`] for every queue of `snap`, in its order, in one pass.
    pub(crate) fn holds(self, snap: &Snapshot<'_>) -> Vec<bool> {
        if !snap.queues.iter().any(|q| q.hints.yielding.is_some()) {
            return vec![true; snap.queues.len()];
        }
        let working = working_processes(snap);
        let turns = TurnRanges::new(snap, &working);
        // Built only for a yielding queue that cannot take turns (beside one job, or jobs
        // of one process), which is the rarer case.
        let mut holders: Option<Holders> = None;
        let mut out = Vec::with_capacity(snap.queues.len());
        for q in snap.queues {
            out.push(
                q.hints.yielding.is_none()
                    || turns.may_take_turns(q)
                    || turns.outranked(q)
                        && holders
                            .get_or_insert_with(|| Holders::new(snap, &working))
                            .hold(q),
            );
        }
        out
    }

    /// A queue spared for its short commands, which another process's queue outranks.
    pub(crate) fn remeasures(self, snap: &Snapshot<'_>, queue: &QueueView) -> bool {
        let working = working_processes(snap);
        !may_suspend_among(snap, queue, true, &working)
            && may_suspend_among(snap, queue, false, &working)
    }
}

#[cfg(test)]
/// [`Hpf::may_suspend`], sparing queues of short commands (`short`) or not (as the policies
/// built on HPF's plain rank order must answer).
pub(crate) fn may_suspend_sparing(snap: &Snapshot<'_>, queue: &QueueView, short: bool) -> bool {
    may_suspend_among(snap, queue, short, &working_processes(snap))
}

/// [`may_suspend_sparing`], the processes that have run work (`working`) already known.
fn may_suspend_among(
    snap: &Snapshot<'_>,
    queue: &QueueView,
    short: bool,
    working: &HashSet<u32>,
) -> bool {
    let unbounded_across = unbounded_across(queue, snap, short);
    snap.on_device(queue.device).any(|q| {
        q.hints.priority > queue.hints.priority
            && counts_against(q, queue, working)
            && (q.pid == queue.pid || !unbounded_across)
    })
}

/// The processes with a queue that has had work (ready now, or a job done), on any device.
fn working_processes(snap: &Snapshot<'_>) -> HashSet<u32> {
    snap.queues
        .iter()
        .filter(|q| q.ready || q.jobs > 0)
        .map(|q| q.pid)
        .collect()
}

/// [`Hpf::attention`], sparing queues of short commands (`short`) or not: both answers from one
/// pass over the queues (per device: the lowest priority, the highest among queues that have
/// had work, and the highest unused ones of two processes).
pub(crate) fn attention_sparing(snap: &Snapshot<'_>, short: bool) -> Vec<(bool, bool)> {
    attention_among(snap, short, &working_processes(snap))
}

/// [`attention_sparing`], the processes that have run work (`working`) already known.
fn attention_among(snap: &Snapshot<'_>, short: bool, working: &HashSet<u32>) -> Vec<(bool, bool)> {
    let mut ranges: Vec<Range> = Vec::new();
    for q in snap.queues {
        let i = match ranges.iter().position(|r| r.device == q.device) {
            Some(i) => i,
            None => {
                ranges.push(Range::new(q));
                ranges.len() - 1
            }
        };
        ranges[i].add(q, working);
    }
    snap.queues
        .iter()
        .map(|q| {
            let a = ranges
                .iter()
                .find(|r| r.device == q.device)
                .map_or((false, false), |r| r.answer(q));
            // Queues other processes do not bound are few: their own scan.
            if unbounded_across(q, snap, short) {
                (a.0, may_suspend_among(snap, q, short, working))
            } else {
                a
            }
        })
        .collect()
}

/// Whether `q`, ranked above `queue`, can make HPF suspend it (see [`Hpf::may_suspend`]): it
/// has had work, or it belongs to another process that has not run any yet (`working` lists
/// those that have).
fn counts_against(q: &QueueView, queue: &QueueView, working: &HashSet<u32>) -> bool {
    q.ready || q.jobs > 0 || (q.pid != queue.pid && !working.contains(&q.pid))
}

/// Whether `q` can make HPF suspend another process's queue ([`counts_against`] for any queue
/// of another process): it has had work, or its process has run none yet.
fn counts_across(q: &QueueView, working: &HashSet<u32>) -> bool {
    q.ready || q.jobs > 0 || !working.contains(&q.pid)
}

#[cfg(test)]
/// Whether `queue` outranks another queue on its device: only then can its Idle/Ready
/// transitions change what HPF's rank order suspends ([`attention_sparing`]'s first answer).
pub(crate) fn outranks_another(snap: &Snapshot<'_>, queue: &QueueView) -> bool {
    snap.on_device(queue.device)
        .any(|q| q.hints.priority < queue.hints.priority)
}

/// Whether other processes' queues never make `queue` suspendable, so it runs without its
/// window for them: its kernels never meet their work ([`GivesWay::Isolated`]), or its
/// commands are short (when `short` commands are spared). A confining or yielding queue stays
/// suspendable: that is what keeps its kernels confined, or its slice short.
fn unbounded_across(queue: &QueueView, snap: &Snapshot<'_>, short: bool) -> bool {
    matches!(
        gives_way(queue, snap, short),
        GivesWay::Isolated | GivesWay::ShortCommands
    )
}

/// Whether `queue`'s commands were measured shorter than [`SHORT_COMMAND`] (or the bound
/// [`GlobalHint::ShortCommand`](crate::GlobalHint::ShortCommand) sets): HPF, the default
/// policy, does not hold it back for other processes. Policies whose purpose is to stop lower
/// work outright (the focused window's, laxity's critical phases) keep holding it.
fn short_commands(queue: &QueueView, snap: &Snapshot<'_>) -> bool {
    let bound = snap.global.short_command.unwrap_or(SHORT_COMMAND);
    queue.hints.command_time.is_some_and(|t| t < bound)
}

/// Turns among yielding processes (see [`Hpf`]): within each device, the yielding queues with
/// work that `d` lets run and that a more urgent queue may suspend; only those of the highest
/// priority among them run, and of those only one process's, which changes every
/// [`YIELD_TURN`]. Not where none of that priority would gain from turns
/// ([`gains_nothing_from_turns`]).
fn take_turns(snap: &Snapshot<'_>, d: &mut Decision) {
    if !snap
        .queues
        .iter()
        .any(|q| q.ready && q.hints.yielding.is_some())
    {
        return;
    }
    // Whether a more urgent queue may suspend each queue, for all of them in one pass.
    let suspendable = attention_sparing(snap, true);
    let held: HashSet<_> = d.suspend.iter().copied().collect();
    let candidates: Vec<&QueueView> = snap
        .queues
        .iter()
        .zip(&suspendable)
        .filter(|(q, (_, may))| {
            *may && q.ready && q.hints.yielding.is_some() && !held.contains(&q.id)
        })
        .map(|(q, _)| q)
        .collect();
    for dev in snap.devices() {
        let turning: Vec<&QueueView> = candidates
            .iter()
            .copied()
            .filter(|q| q.device == dev)
            .collect();
        let Some(top) = turning.iter().map(|q| q.hints.priority).max() else {
            continue;
        };
        let top_queues = || turning.iter().filter(|q| q.hints.priority == top);
        let mut pids: Vec<u32> = top_queues().map(|q| q.pid).collect();
        pids.sort_unstable();
        pids.dedup();
        if top_queues().all(|q| gains_nothing_from_turns(q, pids.len())) {
            continue;
        }
        let turn = snap.now.0 / YIELD_TURN.0;
        let holder = pids[(turn % pids.len() as u64) as usize];
        d.suspend
            .extend(turning.iter().filter(|q| q.pid != holder).map(|q| q.id));
        if pids.len() > 1 {
            d.wake(Nanos((turn + 1) * YIELD_TURN.0));
        }
    }
}

/// Which queues may take turns with another process's yielding queue (see [`Hpf`]), so that
/// their Idle/Ready transitions matter: a yielding queue that a queue on its device outranks,
/// where another process's yielding queue is outranked too. Only queues that can make HPF
/// suspend anything outrank here: those that have had work, and those of a process that has
/// run none yet ([`Hpf::may_suspend`]); a service's own pools of unused higher-priority
/// streams (PyTorch makes them) do not make the service an outranked yielding process. Built
/// in two passes: per device, the highest such priority, then the processes of the outranked
/// yielding queues (two are enough to know).
struct TurnRanges(Vec<(DeviceId, Priority, [Option<u32>; 2])>);

impl TurnRanges {
    /// `working` lists the processes that have run work ([`working_processes`]).
    fn new(snap: &Snapshot<'_>, working: &HashSet<u32>) -> TurnRanges {
        let mut out: Vec<(DeviceId, Priority, [Option<u32>; 2])> = Vec::new();
        for q in snap.queues {
            if !counts_across(q, working) {
                continue;
            }
            match out.iter_mut().find(|r| r.0 == q.device) {
                Some(r) => r.1 = r.1.max(q.hints.priority),
                None => out.push((q.device, q.hints.priority, [None, None])),
            }
        }
        for q in snap.queues.iter().filter(|q| q.hints.yielding.is_some()) {
            if let Some(r) = out
                .iter_mut()
                .find(|r| r.0 == q.device && q.hints.priority < r.1)
            {
                match r.2 {
                    [None, _] => r.2[0] = Some(q.pid),
                    [Some(a), None] if a != q.pid => r.2[1] = Some(q.pid),
                    _ => {}
                }
            }
        }
        TurnRanges(out)
    }

    /// Whether a queue on its device outranks `queue`.
    fn outranked(&self, queue: &QueueView) -> bool {
        self.0
            .iter()
            .any(|(dev, top, _)| *dev == queue.device && *top > queue.hints.priority)
    }

    fn may_take_turns(&self, queue: &QueueView) -> bool {
        queue.hints.yielding.is_some()
            && self.0.iter().any(|(dev, top, pids)| {
                *dev == queue.device
                    && *top > queue.hints.priority
                    && pids.iter().flatten().any(|&p| p != queue.pid)
            })
    }
}

/// One device's priorities, for [`Hpf::attention`].
struct Range {
    device: DeviceId,
    lo: Priority,
    /// The highest priority among queues that have had work.
    used: Option<Priority>,
    /// The highest priority among unused queues, and its process.
    unused: Option<(Priority, u32)>,
    /// The highest priority among unused queues of any other process than `unused`'s.
    unused_other: Option<Priority>,
}

impl Range {
    fn new(q: &QueueView) -> Range {
        Range {
            device: q.device,
            lo: q.hints.priority,
            used: None,
            unused: None,
            unused_other: None,
        }
    }

    /// Takes in `q`; `working` lists the processes that have run work, whose unused queues
    /// count for nobody.
    fn add(&mut self, q: &QueueView, working: &HashSet<u32>) {
        let p = q.hints.priority;
        self.lo = self.lo.min(p);
        if q.ready || q.jobs > 0 {
            self.used = self.used.max(Some(p));
            return;
        }
        if working.contains(&q.pid) {
            return;
        }
        match self.unused {
            None => self.unused = Some((p, q.pid)),
            Some((top, pid)) if pid == q.pid => self.unused = Some((top.max(p), pid)),
            Some((top, _)) if p > top => {
                self.unused_other = self.unused_other.max(Some(top));
                self.unused = Some((p, q.pid));
            }
            Some(_) => self.unused_other = self.unused_other.max(Some(p)),
        }
    }

    fn answer(&self, q: &QueueView) -> (bool, bool) {
        let p = q.hints.priority;
        let unused = match self.unused {
            Some((top, pid)) if pid != q.pid => Some(top),
            _ => self.unused_other,
        };
        let hi = self.used.max(unused);
        (self.lo < p, hi.is_some_and(|h| h > p))
    }
}

/// Where a rank order applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Each device on its own.
    PerDevice,
    /// One order across every device.
    Global,
}

/// The shared core of the priority policies: within each scope, find the highest rank among
/// ready queues and suspend every queue (ready or idle) ranked lower that a ready queue ranked
/// above it holds back ([`holds_back`], short commands not spared). Equal top ranks run
/// together; a scope with no ready queue runs everything.
pub(crate) fn rank_first<K: Ord>(
    snap: &Snapshot<'_>,
    scope: Scope,
    rank: impl Fn(&QueueView) -> K,
) -> Decision {
    rank_first_sparing(snap, scope, rank, false)
}

/// [`rank_first`], sparing `short` commands or not: [`holds_back`] for every queue in one pass
/// per scope, asked of the only ready queues ranked above it that can decide it: the highest
/// ranked, the highest ranked among those that keep the device busy, and its own process's
/// highest ranked.
fn rank_first_sparing<K: Ord>(
    snap: &Snapshot<'_>,
    scope: Scope,
    rank: impl Fn(&QueueView) -> K,
    short: bool,
) -> Decision {
    let mut d = Decision::default();
    let groups: Vec<Option<DeviceId>> = match scope {
        Scope::PerDevice => snap.devices().into_iter().map(Some).collect(),
        Scope::Global => vec![None],
    };
    for dev in groups {
        let in_scope = |q: &&QueueView| dev.is_none_or(|d| q.device == d);
        let ready = || snap.queues.iter().filter(in_scope).filter(|q| q.ready);
        let Some(top) = ready().max_by_key(|q| rank(q)) else {
            continue;
        };
        let busy_top = ready().filter(|p| keeps_busy(p)).max_by_key(|q| rank(q));
        let mut own_top: HashMap<u32, &QueueView> = HashMap::new();
        for p in ready() {
            let e = own_top.entry(p.pid).or_insert(p);
            if rank(p) > rank(e) {
                *e = p;
            }
        }
        d.suspend.extend(
            snap.queues
                .iter()
                .filter(in_scope)
                .filter(|q| {
                    let way = gives_way(q, snap, short);
                    [Some(top), busy_top, own_top.get(&q.pid).copied()]
                        .into_iter()
                        .flatten()
                        .any(|above| rank(above) > rank(q) && holds_back(above, q, way))
                })
                .map(|q| q.id),
        );
    }
    d
}

/// What can hold a yielding queue back (see [`Hpf::may_hold`]), for every queue in one pass:
/// per device, the two highest priorities, of two processes, among queues whose program keeps
/// the device busy and that count against another process's queues ([`counts_against`]); per
/// device and process, the highest priority among queues that have had work.
struct Holders {
    busy: Vec<(DeviceId, TopTwo)>,
    own: HashMap<(DeviceId, u32), Priority>,
}

/// The two highest priorities of two different processes, with their pids.
type TopTwo = [Option<(Priority, u32)>; 2];

impl Holders {
    fn new(snap: &Snapshot<'_>, working: &HashSet<u32>) -> Holders {
        let mut h = Holders {
            busy: Vec::new(),
            own: HashMap::new(),
        };
        for q in snap.queues {
            let p = q.hints.priority;
            if q.ready || q.jobs > 0 {
                let e = h.own.entry((q.device, q.pid)).or_insert(p);
                *e = (*e).max(p);
            }
            if !(keeps_busy(q) && counts_across(q, working)) {
                continue;
            }
            let i = match h.busy.iter().position(|b| b.0 == q.device) {
                Some(i) => i,
                None => {
                    h.busy.push((q.device, [None, None]));
                    h.busy.len() - 1
                }
            };
            let top = &mut h.busy[i].1;
            match top[0] {
                None => top[0] = Some((p, q.pid)),
                Some((bp, bpid)) if bpid == q.pid => top[0] = Some((bp.max(p), bpid)),
                Some((bp, _)) if p > bp => {
                    top[1] = top[0];
                    top[0] = Some((p, q.pid));
                }
                Some(_) => {
                    if top[1].is_none_or(|(sp, _)| p > sp) {
                        top[1] = Some((p, q.pid));
                    }
                }
            }
        }
        h
    }

    /// Whether a queue of `queue`'s own process that has had work, or another process's that
    /// keeps the device busy, outranks it on its device.
    fn hold(&self, queue: &QueueView) -> bool {
        let p = queue.hints.priority;
        if self
            .own
            .get(&(queue.device, queue.pid))
            .is_some_and(|&o| o > p)
        {
            return true;
        }
        let Some((_, top)) = self.busy.iter().find(|b| b.0 == queue.device) else {
            return false;
        };
        let other = match top[0] {
            Some((_, pid)) if pid == queue.pid => top[1],
            best => best,
        };
        other.is_some_and(|(o, _)| o > p)
    }
}

/// Whether `queue`'s program keeps the device busy while the queue has work: its process did
/// not measure it bound by its own launching ([`Hint::Readiness`](crate::Hint::Readiness),
/// [`launch_bound`](crate::Readiness::launch_bound)). Only for such work is a yielding queue
/// held back ([`holds_back`]): beside a program bound by its launching, which leaves the
/// device idle most of the time it has work, a hold would starve the job for nothing the slice
/// does not already give. One not measured yet is not taken for one ([`Hpf`], "Until
/// measured").
fn keeps_busy(queue: &QueueView) -> bool {
    queue.hints.readiness.is_some_and(|r| !r.launch_bound())
}

/// Whether `queue`'s program would progress no faster taking turns of the device with `n`
/// processes than running beside them, as its process last measured it
/// ([`Hint::Readiness`](crate::Hint::Readiness), over the time it was let run): a program
/// progresses while its host launches, not while it waits for its work, so one that waited at
/// most `1 − 1/n` of its time keeps at least the `1/n` a turn would give it. A program that
/// keeps the device busy waits nearly all the time and takes turns; one not measured yet is
/// taken for such a program.
fn gains_nothing_from_turns(queue: &QueueView, n: usize) -> bool {
    let n = n as u64;
    queue
        .hints
        .readiness
        .is_some_and(|r| u64::from(r.waiting) * n <= 1000 * n.saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use baton_core::{Nanos, Priority};
    use proptest::prelude::*;

    use super::*;

    fn q(id: u64, dev: u32, prio: i64, ready: bool) -> QueueView {
        let mut v = QueueView::new(id, 1, dev, ready);
        v.hints.priority = Priority::new(prio).unwrap();
        v
    }

    #[test]
    fn yielding_jobs_outranked_on_a_device_take_turns() {
        // Process 1's idle service beside the floods of processes 2, 3 and 4, each yielding;
        // process 3 has two streams.
        let mut qs = [
            q(1, 0, 10, false),
            q(2, 0, 0, true),
            q(3, 0, 0, true),
            q(4, 0, 0, true),
            q(5, 0, 0, true),
        ];
        for (i, pid) in [(1, 2), (2, 3), (3, 3), (4, 4)] {
            qs[i].pid = pid;
            qs[i].hints.yielding = Some(Nanos::from_micros(100));
        }
        let at = |ms: u64, qs: &[QueueView]| {
            let snap = Snapshot::new(Nanos::from_millis(ms), qs);
            let d = Hpf.decide(&snap);
            let running: Vec<u64> = qs[1..]
                .iter()
                .filter(|q| !d.suspends(q.id))
                .map(|q| q.id.0)
                .collect();
            (running, d.wake_at)
        };
        let turn = YIELD_TURN.0 / 1_000_000;
        assert_eq!(at(0, &qs), (vec![2], Some(YIELD_TURN)));
        assert_eq!(
            at(turn + 1, &qs),
            (vec![3, 4], Some(Nanos(2 * YIELD_TURN.0)))
        );
        assert_eq!(at(2 * turn, &qs).0, vec![5]);
        assert_eq!(at(3 * turn, &qs).0, vec![2]);
        // A process without work gives its turn up; alone, nothing is held and no wake-up.
        qs[1].ready = false;
        assert_eq!(at(0, &qs).0, vec![2, 3, 4]);
        qs[2].ready = false;
        qs[3].ready = false;
        assert_eq!(at(0, &qs), (vec![2, 3, 4, 5], None));
        // Every yielding job reports its Idle/Ready transitions, as the service does.
        let snap = Snapshot::new(Nanos::ZERO, &qs);
        for (q, (report, suspendable)) in qs.iter().zip(Hpf.attention(&snap)) {
            assert!(report, "{}", q.id);
            assert_eq!(suspendable, q.id.0 != 1);
            assert_eq!(Hpf.wants_events(&snap, q), report);
        }
    }

    #[test]
    fn yielding_jobs_that_would_gain_nothing_from_turns_take_none() {
        // An idle service beside two yielding jobs of processes 2 and 3.
        let mut qs = [q(1, 0, 10, false), q(2, 0, 0, true), q(3, 0, 0, true)];
        for (i, pid) in [(1, 2), (2, 3)] {
            qs[i].pid = pid;
            qs[i].hints.yielding = Some(Nanos::from_micros(100));
        }
        let bound = crate::Readiness {
            ready: 950,
            waiting: 50,
        };
        let busy = crate::Readiness {
            ready: 1000,
            waiting: 900,
        };
        let running = |qs: &[QueueView]| {
            let d = Hpf.decide(&Snapshot::new(Nanos::ZERO, qs));
            let r: Vec<u64> = qs[1..]
                .iter()
                .filter(|q| !d.suspends(q.id))
                .map(|q| q.id.0)
                .collect();
            (r, d.wake_at)
        };
        // Unmeasured, or one of them keeping the device busy: turns.
        assert_eq!(running(&qs).0, vec![2]);
        qs[1].hints.readiness = Some(bound);
        qs[2].hints.readiness = Some(busy);
        assert_eq!(running(&qs).0, vec![2]);
        // Both bound by their launching: both run, and no wake-up is asked for.
        qs[2].hints.readiness = Some(bound);
        assert_eq!(running(&qs), (vec![2, 3], None));
        // Two processes: up to half of the time waiting for its work, a program keeps what a
        // turn would give it; beyond that, turns.
        let waiting = |w| crate::Readiness {
            ready: 1000,
            waiting: w,
        };
        qs[2].hints.readiness = Some(waiting(500));
        assert_eq!(running(&qs).0, vec![2, 3]);
        qs[2].hints.readiness = Some(waiting(501));
        assert_eq!(running(&qs).0, vec![2]);
        qs[2].hints.readiness = Some(bound);
        // A third of a lower priority, busy, is not held back for them either, as a yielding
        // job is not for a program bound by its launching.
        let mut low = q(4, 0, -5, true);
        low.pid = 4;
        low.hints.yielding = Some(Nanos::from_micros(100));
        low.hints.readiness = Some(busy);
        let qs = [qs[0], qs[1], qs[2], low];
        assert_eq!(running(&qs).0, vec![2, 3, 4]);
    }

    #[test]
    fn yielding_jobs_take_no_turns_unless_outranked() {
        // No service: two yielding floods keep the driver's slices and run together, and a
        // lower one beside them is the only one whose slice is short; their programs not
        // measured yet, it is not held back for them, and takes no turns.
        let mut qs = [q(2, 0, 0, true), q(3, 0, 0, true), q(4, 0, -5, true)];
        for (i, pid) in [(0, 2), (1, 3), (2, 4)] {
            qs[i].pid = pid;
            qs[i].hints.yielding = Some(Nanos::from_micros(100));
        }
        let snap = Snapshot::new(Nanos::ZERO, &qs);
        let d = Hpf.decide(&snap);
        assert!(d.suspend.is_empty() && d.wake_at.is_none(), "{d:?}");
        assert!(!Hpf.may_suspend(&snap, &qs[0]) && Hpf.may_suspend(&snap, &qs[2]));
        // Measured keeping the device busy, they hold it back.
        let mut busy = qs;
        for q in &mut busy[..2] {
            q.hints.readiness = Some(crate::Readiness {
                ready: 1000,
                waiting: 900,
            });
        }
        assert_eq!(
            Hpf.decide(&Snapshot::new(Nanos::ZERO, &busy)).suspend,
            [qs[2].id]
        );
        // Beside a service, the higher one runs and the lower one waits for it.
        let mut svc = q(1, 0, 10, false);
        svc.pid = 1;
        let qs = [svc, qs[0], qs[2]];
        let snap = Snapshot::new(Nanos::ZERO, &qs);
        let d = Hpf.decide(&snap);
        assert_eq!(d.suspend, vec![qs[2].id]);
        assert!(d.wake_at.is_none());
        // On another device, nothing changes.
        let mut other = qs;
        other[2].device = DeviceId(1);
        let snap = Snapshot::new(Nanos::ZERO, &other);
        assert!(Hpf.decide(&snap).suspend.is_empty());
    }

    #[test]
    fn an_isolated_queue_is_held_back_by_its_own_process_only() {
        // Process 1's service beside process 2's flood, confined under MPS (isolated): the
        // service does not hold the flood back, and no window is kept for it; process 2's own
        // urgent stream still does.
        let mut qs = [q(1, 0, 10, true), q(2, 0, 0, true), q(3, 0, 5, false)];
        qs[1].pid = 2;
        qs[2].pid = 2;
        qs[1].hints.isolated = Some(112);
        let snap = Snapshot::new(Nanos::ZERO, &qs);
        assert!(Hpf.decide(&snap).suspend.iter().all(|&id| id != qs[1].id));
        assert!(!Hpf.may_suspend(&snap, &qs[1]));
        assert_eq!(Hpf.attention(&snap)[1], (false, false));
        qs[2].ready = true;
        let snap = Snapshot::new(Nanos::ZERO, &qs);
        assert!(Hpf.decide(&snap).suspend.contains(&qs[1].id));
        assert!(Hpf.may_suspend(&snap, &qs[1]));
        assert_eq!(Hpf.attention(&snap)[1], (false, true));
        // Not isolated, it is held back by the service, as ever.
        qs[1].hints.isolated = None;
        qs[2].ready = false;
        let snap = Snapshot::new(Nanos::ZERO, &qs);
        assert!(Hpf.decide(&snap).suspend.contains(&qs[1].id));
    }

    /// Process 1's service (queue 1) beside process 2's flood (queue 2, set up by `flood`)
    /// and process 2's idle urgent stream (queue 3): the service does not hold the flood
    /// back, and reports it `suspendable` or not; once process 2's own urgent stream is
    /// ready, it holds the flood back. The queues, that stream left ready.
    /// A snapshot of `qs` under the operator's short-command bound of 250 µs (`baton daemon
    /// --short-command-us 250`; none is short by default).
    fn short(qs: &[QueueView]) -> Snapshot<'_> {
        let mut snap = Snapshot::new(Nanos::ZERO, qs);
        snap.global.short_command = Some(Nanos::from_micros(250));
        snap
    }

    #[test]
    fn by_default_no_command_is_short() {
        let mut qs = [q(1, 0, 10, true), q(2, 0, 0, true)];
        qs[1].pid = 2;
        qs[1].hints.command_time = Some(Nanos::from_micros(60));
        let snap = Snapshot::new(Nanos::ZERO, &qs);
        assert!(Hpf.decide(&snap).suspend.contains(&qs[1].id));
        assert!(Hpf.may_suspend(&snap, &qs[1]) && !Hpf.remeasures(&snap, &qs[1]));
    }

    fn spared(flood: impl Fn(&mut QueueView), suspendable: bool) -> [QueueView; 3] {
        let mut qs = [q(1, 0, 10, true), q(2, 0, 0, true), q(3, 0, 5, false)];
        qs[1].pid = 2;
        qs[2].pid = 2;
        flood(&mut qs[1]);
        let snap = short(&qs);
        assert!(Hpf.decide(&snap).suspend.iter().all(|&id| id != qs[1].id));
        assert_eq!(Hpf.may_suspend(&snap, &qs[1]), suspendable);
        assert_eq!(Hpf.attention(&snap)[1], (false, suspendable));
        qs[2].ready = true;
        let snap = short(&qs);
        assert!(Hpf.decide(&snap).suspend.contains(&qs[1].id));
        qs
    }

    #[test]
    fn a_yielding_queue_is_held_back_by_another_process_as_any_other() {
        // Process 1's service beside process 2's flood in a time-sliced context of its own
        // (yielding): while the service has work and keeps the device busy with it, the flood
        // is held back too, so that its context does not take the GPU back in the pauses
        // between requests; it is suspendable, which keeps its slice short, and with the
        // service idle it runs.
        let mut qs = [q(1, 0, 10, true), q(2, 0, 0, true)];
        qs[1].pid = 2;
        qs[1].hints.yielding = Some(Nanos::from_micros(100));
        // Until the service's program is measured, and while it is measured bound by its
        // launching, the flood is only kept to its short slice.
        let snap = Snapshot::new(Nanos::ZERO, &qs);
        assert!(Hpf.decide(&snap).suspend.is_empty());
        qs[0].hints.readiness = Some(crate::Readiness {
            ready: 950,
            waiting: 40,
        });
        let snap = Snapshot::new(Nanos::ZERO, &qs);
        assert!(Hpf.decide(&snap).suspend.is_empty());
        // Measured waiting for its work (a graph replayed per request), it holds the flood.
        qs[0].hints.readiness = Some(crate::Readiness {
            ready: 300,
            waiting: 280,
        });
        let snap = Snapshot::new(Nanos::ZERO, &qs);
        assert!(Hpf.decide(&snap).suspend.contains(&qs[1].id));
        assert!(Hpf.may_suspend(&snap, &qs[1]));
        assert_eq!(Hpf.attention(&snap)[1], (false, true));
        qs[0].ready = false;
        let snap = Snapshot::new(Nanos::ZERO, &qs);
        assert!(Hpf.decide(&snap).suspend.is_empty());
        assert!(Hpf.may_suspend(&snap, &qs[1]), "its slice stays short");
        // Alone on the device, nothing outranks it: it runs with its normal slice.
        let alone = [qs[1]];
        let snap = Snapshot::new(Nanos::ZERO, &alone);
        assert!(!Hpf.may_suspend(&snap, &alone[0]));
        assert_eq!(Hpf.attention(&snap), vec![(false, false)]);
    }

    #[test]
    fn a_confining_queue_is_held_back_by_its_own_process_only_but_stays_suspendable() {
        // Process 2's GEMM flood under MPS keeps its kernels to 112 SMs while outranked
        // (confining): the service does not hold it back, yet the flood is reported
        // suspendable, which keeps it on its part of the SMs; process 2's own urgent stream
        // still holds it back. Alone, nothing outranks it, and it gets the whole GPU back.
        let qs = spared(
            |f| {
                f.hints.confining = Some(112);
                f.hints.command_time = Some(Nanos::from_micros(770));
            },
            true,
        );
        let alone = [qs[1]];
        let snap = short(&alone);
        assert!(!Hpf.may_suspend(&snap, &alone[0]));
        // Measured short, it is left alone as any stream of short commands is: unbounded (not
        // suspendable by the service), so it is not confined either.
        spared(
            |f| {
                f.hints.confining = Some(112);
                f.hints.command_time = Some(Nanos::from_micros(110));
            },
            false,
        );
    }

    #[test]
    fn a_queue_of_short_commands_is_held_back_by_its_own_process_only() {
        // Process 2's training job beside process 1's service: measured short, it is neither
        // held back for the service nor bounded for it (its own urgent stream, once used,
        // bounds it again); once its commands are measured long, the service holds it back.
        let mut qs = spared(
            |f| f.hints.command_time = Some(Nanos::from_micros(60)),
            false,
        );
        let snap = short(&qs);
        assert!(
            Hpf.may_suspend(&snap, &qs[1]),
            "its own ready urgent stream bounds it"
        );
        assert_eq!(Hpf.attention(&snap)[1], (false, true));
        // Guard holds by the plain rank order: for it the queue stays suspendable.
        qs[2].ready = false;
        let snap = short(&qs);
        assert!(crate::Guard::new().decide(&snap).plan(1).may_suspend);
        for long in [Nanos::from_micros(250), Nanos::from_micros(1600)] {
            qs[1].hints.command_time = Some(long);
            let snap = short(&qs);
            assert!(Hpf.decide(&snap).suspend.contains(&qs[1].id), "{long}");
        }
        // Another bound; none is short under a zero bound.
        let mut snap = short(&qs);
        snap.global.short_command = Some(Nanos::from_millis(2));
        assert!(!Hpf.decide(&snap).suspend.contains(&qs[1].id));
        qs[1].hints.command_time = Some(Nanos::from_micros(60));
        let mut snap = short(&qs);
        snap.global.short_command = Some(Nanos::ZERO);
        assert!(Hpf.decide(&snap).suspend.contains(&qs[1].id));
    }

    #[test]
    fn only_a_queue_spared_for_its_short_commands_is_measured_again() {
        // Process 1's service (queue 1, measured short too) beside process 2's training job
        // (queue 2, short) and its idle urgent stream (queue 3).
        let mut qs = spared(
            |f| f.hints.command_time = Some(Nanos::from_micros(60)),
            false,
        );
        qs[0].hints.command_time = Some(Nanos::from_micros(130));
        qs[2].ready = false;
        let snap = short(&qs);
        // The job runs unbounded only because it is short: were it long, the service would
        // hold it back. The service runs unbounded because nothing outranks it.
        assert!(!Hpf.may_suspend(&snap, &qs[1]) && Hpf.remeasures(&snap, &qs[1]));
        assert!(!Hpf.may_suspend(&snap, &qs[0]) && !Hpf.remeasures(&snap, &qs[0]));
        // Alone on its device, nothing outranks the job either.
        let alone = [qs[1]];
        assert!(!Hpf.remeasures(&short(&alone), &alone[0]));
        // Isolated, other processes never hold it back whatever its commands take.
        qs[1].hints.isolated = Some(112);
        assert!(!Hpf.remeasures(&short(&qs), &qs[1]));
        // Guard spares no short commands: nothing to measure again for it.
        qs[1].hints.isolated = None;
        assert!(!crate::Guard::new().decide(&short(&qs)).plan(1).remeasure);
        // The plan says so, and the wrappers keep what the policy they wrap says of the queue
        // itself.
        let snap = short(&qs);
        assert!(Hpf.decide(&snap).plan(1).remeasure);
        assert!(
            crate::ProcessUnits::new(Hpf)
                .decide(&snap)
                .plan(1)
                .remeasure
        );
        let d = (Box::new(Hpf) as Box<dyn Policy>).decide(&snap);
        assert!(d.plan(1).remeasure && !d.plan(0).remeasure);
    }

    #[test]
    fn a_queue_that_only_says_it_is_time_sliced_is_held_back_as_any_other() {
        // Process 1's decoder, bound by its own launching and saying so, beside process 2's
        // flood of long commands that says its context is time-sliced: held back as an
        // unhinted flood is. One that gives the GPU up by its slice (`Hint::Yielding`) is not
        // held back for a launch-bound program, and stays suspendable, its slice short.
        let mut qs = [q(1, 0, 10, true), q(2, 0, 0, true)];
        qs[1].pid = 2;
        qs[0].hints.readiness = Some(crate::Readiness {
            ready: 950,
            waiting: 40,
        });
        qs[1].hints.time_sliced = true;
        qs[1].hints.command_time = Some(Nanos::from_micros(900));
        let snap = Snapshot::new(Nanos::ZERO, &qs);
        assert!(Hpf.decide(&snap).suspend.contains(&qs[1].id));
        qs[1].hints.yielding = Some(Nanos::from_micros(100));
        let snap = Snapshot::new(Nanos::ZERO, &qs);
        assert!(!Hpf.decide(&snap).suspend.contains(&qs[1].id));
        assert!(
            Hpf.may_suspend(&snap, &qs[1]),
            "yielding keeps its slice short"
        );
        // The same yielding flood beside a service that keeps the device busy while it has
        // work (not launch-bound) is held back while it has.
        qs[0].hints.readiness = Some(crate::Readiness {
            ready: 300,
            waiting: 280,
        });
        let snap = Snapshot::new(Nanos::ZERO, &qs);
        assert!(Hpf.decide(&snap).suspend.contains(&qs[1].id));
    }

    #[test]
    fn a_yielding_job_may_be_held_only_for_what_can_hold_it() {
        // Process 1's service beside process 2's yielding flood: suspendable either way (its
        // slice stays short), held (its work in flight bounded) only once the service is
        // measured keeping the device busy while it has work.
        let mut qs = [q(1, 0, 10, false), q(2, 0, 0, true)];
        qs[1].pid = 2;
        qs[1].hints.yielding = Some(Nanos::from_micros(100));
        let hold = |qs: &[QueueView]| {
            let snap = Snapshot::new(Nanos::ZERO, qs);
            let each: Vec<bool> = qs.iter().map(|q| Hpf.may_hold(&snap, q)).collect();
            assert_eq!(Hpf.holds(&snap), each);
            assert!(Hpf.may_suspend(&snap, &qs[1]));
            each[1]
        };
        assert!(!hold(&qs), "a service not measured yet holds nothing");
        qs[0].hints.readiness = Some(crate::Readiness {
            ready: 950,
            waiting: 40,
        });
        assert!(!hold(&qs), "launch-bound");
        qs[0].hints.readiness = Some(crate::Readiness {
            ready: 300,
            waiting: 280,
        });
        assert!(hold(&qs), "keeps the device busy");
        // Beside the launch-bound service again, a more urgent queue of the job's own process
        // that has had work holds it; one that never had any does not.
        qs[0].hints.readiness = Some(crate::Readiness {
            ready: 950,
            waiting: 40,
        });
        let mut own = q(3, 0, 5, false);
        own.pid = 2;
        let with_own = [qs[0], qs[1], own];
        assert!(!hold(&with_own));
        own.jobs = 1;
        assert!(hold(&[qs[0], qs[1], own]));
        // A job that is not yielding is held as before.
        qs[1].hints.yielding = None;
        assert!(hold(&qs));
    }

    #[test]
    fn a_services_unused_pools_do_not_make_it_take_turns_with_the_job() {
        // Under `baton run` every process yields, the service too; PyTorch gives it pools of
        // higher-priority streams it never uses. Those do not outrank its own stream in use,
        // so the job has no other outranked yielding process to take turns with, and beside
        // a decoder bound by its launching nothing may hold it (its work in flight is bounded
        // by count only). Until this was so, every such job could be held for its turns.
        let yielding = Some(Nanos::from_micros(100));
        let mut service = q(1, 0, 10, true);
        service.hints.yielding = yielding;
        service.hints.readiness = Some(crate::Readiness {
            ready: 950,
            waiting: 40,
        });
        let mut pool = q(2, 0, 13, false);
        pool.hints.yielding = yielding;
        let mut job = q(3, 0, 0, true);
        job.pid = 2;
        job.hints.yielding = yielding;
        let qs = [service, pool, job];
        let snap = Snapshot::new(Nanos::ZERO, &qs);
        let turns = |snap: &Snapshot<'_>| TurnRanges::new(snap, &working_processes(snap));
        assert!(!turns(&snap).may_take_turns(&qs[2]));
        assert!(!Hpf.may_hold(&snap, &qs[2]));
        assert!(!Hpf.holds(&snap)[2]);
        assert!(!Hpf.decide(&snap).suspend.contains(&qs[2].id));
        // A second job does take turns with the first.
        let mut other = job;
        other.id = baton_core::XQueueId(4);
        other.pid = 3;
        let qs = [service, pool, job, other];
        let snap = Snapshot::new(Nanos::ZERO, &qs);
        assert!(turns(&snap).may_take_turns(&qs[2]));
    }

    #[test]
    fn readiness_is_a_share_of_its_period_and_launch_bound_needs_both_sides() {
        let ms = Nanos::from_millis;
        let r = crate::Readiness::over(ms(475), ms(20), ms(500)).unwrap();
        assert_eq!((r.ready, r.waiting), (950, 40));
        assert!(r.launch_bound());
        assert_eq!(crate::Readiness::over(ms(9), ms(9), Nanos::ZERO), None);
        let capped = crate::Readiness::over(ms(900), ms(600), ms(500)).unwrap();
        assert_eq!((capped.ready, capped.waiting), (1000, 1000));
        assert!(!capped.launch_bound());
        let edge = crate::Readiness {
            ready: crate::Readiness::LAUNCH_BOUND_READY,
            waiting: crate::Readiness::LAUNCH_BOUND_WAITING,
        };
        assert!(edge.launch_bound());
        assert!(
            !crate::Readiness {
                ready: edge.ready - 1,
                ..edge
            }
            .launch_bound()
        );
        assert!(
            !crate::Readiness {
                waiting: edge.waiting + 1,
                ..edge
            }
            .launch_bound()
        );
    }

    #[test]
    fn an_unused_higher_queue_leaves_lower_queues_unbounded() {
        // PyTorch creates pools of high-priority streams it never uses: they must not make the
        // stream in use (same process) pay for a launch window. Once a higher queue has had
        // work, it does; another process's queue does from the start.
        let unused = [q(1, 0, 5, false), q(2, 0, 1, true)];
        let snap = Snapshot::new(Nanos::ZERO, &unused);
        assert_eq!(Hpf.attention(&snap), vec![(true, false), (false, false)]);
        assert!(!Hpf.may_suspend(&snap, &unused[1]));
        let mut used = unused;
        used[0].jobs = 1;
        let snap = Snapshot::new(Nanos::ZERO, &used);
        assert_eq!(Hpf.attention(&snap), vec![(true, false), (false, true)]);
        assert!(Hpf.may_suspend(&snap, &used[1]));
        // Ready now counts as well.
        let mut ready = unused;
        ready[0].ready = true;
        let snap = Snapshot::new(Nanos::ZERO, &ready);
        assert_eq!(Hpf.attention(&snap), vec![(true, false), (false, true)]);
        let mut other = unused;
        other[0].pid = 2;
        let snap = Snapshot::new(Nanos::ZERO, &other);
        assert_eq!(Hpf.attention(&snap), vec![(true, false), (false, true)]);
        assert!(Hpf.may_suspend(&snap, &other[1]));
    }

    #[test]
    fn another_process_that_has_run_work_is_judged_by_its_queues_that_have() {
        // Two services of one priority (10), each a PyTorch process with an unused pool
        // stream of higher CUDA priority (15); process 1 has work.
        let mut qs = [
            q(1, 0, 10, true),
            q(2, 0, 15, false),
            q(3, 0, 10, false),
            q(4, 0, 15, false),
        ];
        (qs[0].pid, qs[1].pid, qs[2].pid, qs[3].pid) = (1, 1, 2, 2);
        // Process 2 has not run anything yet: its unused queues stand for a client about to
        // be served, and bound process 1's.
        let snap = Snapshot::new(Nanos::ZERO, &qs);
        assert!(Hpf.may_suspend(&snap, &qs[0]));
        assert_eq!(Hpf.attention(&snap)[0], (false, true));
        // Once it has, neither service bounds the other through queues that never had work.
        qs[2].jobs = 1;
        let snap = Snapshot::new(Nanos::ZERO, &qs);
        assert!(!Hpf.may_suspend(&snap, &qs[0]) && !Hpf.may_suspend(&snap, &qs[2]));
        assert_eq!(Hpf.attention(&snap)[0], (false, false));
        assert_eq!(Hpf.attention(&snap)[2], (false, false));
        // Its urgent stream, once used, does.
        qs[3].ready = true;
        let snap = Snapshot::new(Nanos::ZERO, &qs);
        assert!(Hpf.may_suspend(&snap, &qs[0]));
        assert_eq!(Hpf.attention(&snap)[0], (false, true));
    }

    fn decide(queues: &[QueueView]) -> Vec<u64> {
        let mut s: Vec<u64> = Hpf
            .decide(&Snapshot::new(Nanos::ZERO, queues))
            .suspend
            .into_iter()
            .map(|q| q.0)
            .collect();
        s.sort_unstable();
        s
    }

    #[test]
    fn lower_priorities_yield_to_a_ready_higher_one() {
        let qs = [q(1, 0, 10, true), q(2, 0, 0, true), q(3, 0, 0, false)];
        assert_eq!(decide(&qs), vec![2, 3]);
    }

    #[test]
    fn only_queues_that_outrank_another_need_to_report() {
        let qs = [
            q(1, 0, 10, true),
            q(2, 0, 0, true),
            q(3, 1, 5, false),
            q(4, 1, 5, true),
        ];
        let snap = Snapshot::new(Nanos::ZERO, &qs);
        let wants: Vec<bool> = qs.iter().map(|v| Hpf.wants_events(&snap, v)).collect();
        assert_eq!(wants, vec![true, false, false, false]);
        let may: Vec<bool> = qs.iter().map(|v| Hpf.may_suspend(&snap, v)).collect();
        assert_eq!(may, vec![false, true, false, false]);
    }

    #[test]
    fn an_idle_high_priority_queue_suspends_nobody() {
        let qs = [q(1, 0, 10, false), q(2, 0, 0, true)];
        assert!(decide(&qs).is_empty());
    }

    #[test]
    fn equal_priorities_share_and_devices_are_independent() {
        let qs = [
            q(1, 0, 5, true),
            q(2, 0, 5, true),
            q(3, 1, 0, true),
            q(4, 1, 9, false),
        ];
        assert!(decide(&qs).is_empty());
        let qs = [q(1, 0, 5, true), q(2, 1, 0, true), q(3, 1, 9, true)];
        assert_eq!(decide(&qs), vec![2]);
    }

    proptest! {
        /// HPF's one-pass answers (what may hold each queue; whether its events matter and
        /// whether it may be suspended) are the per-queue ones, and its plans carry them.
        #[test]
        fn answers_in_one_pass_as_queue_by_queue(
            spec in proptest::collection::vec(
                (
                    (0u32..2, 0u32..4, -3i64..=3, any::<bool>(), 0u64..2),
                    (any::<bool>(), 0u8..3, 0u8..3, any::<bool>()),
                ),
                1..24,
            ),
            short_us in proptest::option::of(1u64..200),
        ) {
            let qs: Vec<QueueView> = spec
                .iter()
                .enumerate()
                .map(|(i, &((d, pid, p, r, jobs), (y, busy, command, isolated)))| {
                    let mut v = q(i as u64, d, p, r);
                    v.pid = pid;
                    v.jobs = jobs;
                    if y {
                        v.hints.yielding = Some(Nanos::from_micros(100));
                    }
                    if isolated {
                        v.hints.isolated = Some(112);
                    }
                    v.hints.command_time = match command {
                        0 => None,
                        1 => Some(Nanos::from_micros(20)),
                        _ => Some(Nanos::from_micros(1500)),
                    };
                    v.hints.readiness = match busy {
                        0 => None,
                        1 => Some(crate::Readiness { ready: 950, waiting: 40 }),
                        _ => Some(crate::Readiness { ready: 300, waiting: 280 }),
                    };
                    v
                })
                .collect();
            let mut snap = Snapshot::new(Nanos::ZERO, &qs);
            snap.global.short_command = short_us.map(Nanos::from_micros);
            // The rank order holds back exactly what the model's rule 1 says, pair by pair.
            for short in [true, false] {
                let d = rank_first_sparing(&snap, Scope::PerDevice, |q| q.hints.priority, short);
                for q in &qs {
                    let way = gives_way(q, &snap, short);
                    let held = snap.on_device(q.device).any(|above| {
                        above.ready
                            && above.hints.priority > q.hints.priority
                            && holds_back(above, q, way)
                    });
                    prop_assert_eq!(d.suspends(q.id), held, "{} ({:?})", q.id, way);
                }
            }
            let each: Vec<bool> = qs.iter().map(|q| Hpf.may_hold(&snap, q)).collect();
            prop_assert_eq!(Hpf.holds(&snap), each);
            let each: Vec<(bool, bool)> = qs
                .iter()
                .map(|q| (Hpf.wants_events(&snap, q), Hpf.may_suspend(&snap, q)))
                .collect();
            prop_assert_eq!(Hpf.attention(&snap), each.clone());
            let d = Hpf.decide(&snap);
            prop_assert_eq!(d.plans.len(), qs.len());
            for (i, q) in qs.iter().enumerate() {
                let plan = d.plan(i);
                prop_assert_eq!((plan.report, plan.may_suspend), each[i]);
                prop_assert_eq!(plan.may_hold, Hpf.may_hold(&snap, q));
                prop_assert_eq!(
                    plan.remeasure,
                    !plan.may_suspend && q.hints.command_time.is_some() && Hpf.remeasures(&snap, q)
                );
                prop_assert!(plan.may_suspend || !d.suspends(q.id), "{} suspended", q.id);
            }
        }

        /// HPF is work-conserving per device and never suspends the top ready priority.
        #[test]
        fn work_conserving_and_top_priority_runs(
            spec in proptest::collection::vec((0u32..3, -100i64..=100, any::<bool>()), 1..40)
        ) {
            let qs: Vec<QueueView> = spec.iter().enumerate()
                .map(|(i, (d, p, r))| q(i as u64, *d, *p, *r)).collect();
            let suspended = decide(&qs);
            for dev in 0..3 {
                let ready: Vec<&QueueView> =
                    qs.iter().filter(|v| v.device.0 == dev && v.ready).collect();
                if let Some(top) = ready.iter().map(|v| v.hints.priority).max() {
                    prop_assert!(ready.iter().any(|v| !suspended.contains(&v.id.0)));
                    for v in &ready {
                        if v.hints.priority == top {
                            prop_assert!(!suspended.contains(&v.id.0));
                        } else {
                            prop_assert!(suspended.contains(&v.id.0));
                        }
                    }
                }
            }
        }
    }
}
