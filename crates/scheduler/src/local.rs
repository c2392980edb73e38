//! The local scheduler: policy decisions applied to this process's queues.
//!
//! Besides running the policy, the scheduler keeps what the policy may not compute itself:
//! - **served time**: device time attributed to each queue (while ready and not suspended,
//!   each moment split evenly between the ready, running queues of its device);
//! - **jobs**: each Idle→Ready→Idle period of a queue is a job; its count and the last one's
//!   latency (release to completion) feed latency-driven policies;
//! - **processes**: pid, uid and niceness, read once per process through a
//!   [`ProcessInfoSource`], plus process hints;
//! - **global hints** and announced upcoming work (dropped when the work arrives);
//! - **dependencies**: "queue W cannot progress until queue B has launched/completed command
//!   S". After every decision the scheduler applies [`inherit`]: a queue that a running queue
//!   waits on is run too, whatever the policy said, until the dependency is satisfied. This
//!   is what makes circular waits impossible under every policy.

use std::collections::BTreeMap;
use std::sync::Arc;

use baton_core::{
    Attention, Nanos, QueueControl, QueueEvent, QueueState, ResumeFlags, SuspendFlags, XQueueId,
};
use baton_policies::{
    Decision, Dependency, DeviceId, GlobalHint, GlobalHints, Hint, Policy, ProcessHint,
    ProcessHints, ProcessView, QueueHints, QueuePlan, QueueView, Snapshot, inherit,
};

use crate::procinfo::{ProcFs, ProcessInfoSource};

/// What the scheduler knows about a queue besides its live state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueMeta {
    /// The owning process.
    pub pid: u32,
    /// The device the queue runs on.
    pub device: DeviceId,
    /// Its initial hints.
    pub hints: QueueHints,
}

/// A suspend or resume the scheduler applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// The queue was suspended.
    Suspend,
    /// The queue was resumed.
    Resume,
}

/// One applied operation, for traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpRecord {
    /// When.
    pub at: Nanos,
    /// Which queue.
    pub queue: XQueueId,
    /// What.
    pub kind: OpKind,
}

/// The queue is not registered with this scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown queue {0}: it was never registered or has been removed")]
pub struct UnknownQueue(pub XQueueId);

/// No registered queue belongs to this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown process {0}: no queue of it is registered with this scheduler")]
pub struct UnknownProcess(pub u32);

struct Entry {
    ctl: Arc<dyn QueueControl>,
    view: QueueView,
    last_transition: u64,
    /// What it was last told ([`QueueControl::set_attention`]).
    attention: Attention,
}

/// Runs a policy over registered queues. Single-threaded: wrap it in [`SchedulerThread`](crate::SchedulerThread)
/// for live use, or call it from a virtual-time loop.
pub struct LocalScheduler {
    policy: Box<dyn Policy>,
    entries: BTreeMap<XQueueId, Entry>,
    processes: BTreeMap<u32, ProcessView>,
    proc_info: Box<dyn ProcessInfoSource>,
    global: GlobalHints,
    deps: Vec<Dependency>,
    accounted_to: Option<Nanos>,
    wake_at: Option<Nanos>,
    ops: Option<Vec<OpRecord>>,
    decisions: u64,
    inherited: u64,
    /// The queues the last decision kept running by inheritance.
    inheriting: Vec<XQueueId>,
}

impl LocalScheduler {
    /// A scheduler running `policy`, reading process facts from `/proc`.
    pub fn new(policy: Box<dyn Policy>) -> LocalScheduler {
        LocalScheduler {
            policy,
            entries: BTreeMap::new(),
            processes: BTreeMap::new(),
            proc_info: Box::new(ProcFs),
            global: GlobalHints::default(),
            deps: Vec::new(),
            accounted_to: None,
            wake_at: None,
            ops: None,
            decisions: 0,
            inherited: 0,
            inheriting: Vec::new(),
        }
    }

    /// Reads process facts from `source` from now on (tests, virtual time).
    pub fn set_process_info_source(&mut self, source: Box<dyn ProcessInfoSource>) {
        self.proc_info = source;
    }

    /// Keeps a log of every applied operation (see [`LocalScheduler::take_ops`]).
    pub fn record_ops(&mut self, on: bool) {
        self.ops = on.then(Vec::new);
    }

    /// The operations applied since the last call.
    pub fn take_ops(&mut self) -> Vec<OpRecord> {
        self.ops.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// The running policy's name.
    pub fn policy_name(&self) -> &'static str {
        self.policy.name()
    }

    /// The running policy's counters (deadline misses, feedback state…).
    pub fn policy_counters(&self) -> Vec<(&'static str, u64)> {
        self.policy.counters()
    }

    /// How many decisions were taken so far.
    pub fn decisions(&self) -> u64 {
        self.decisions
    }

    /// How many times a queue began to run only because a running queue waits on it (priority
    /// inheritance); a queue inheriting across several decisions counts once.
    pub fn inherited_resumes(&self) -> u64 {
        self.inherited
    }

    /// Starts managing `ctl`.
    pub fn register(&mut self, ctl: Arc<dyn QueueControl>, meta: QueueMeta, now: Nanos) {
        self.account(now);
        let status = ctl.status();
        let view = QueueView {
            id: status.id,
            pid: meta.pid,
            device: meta.device,
            ready: status.state == QueueState::Ready,
            since: now,
            suspended: status.suspended,
            served: Nanos::ZERO,
            jobs: 0,
            last_job: None,
            hints: meta.hints,
        };
        if !self.processes.contains_key(&meta.pid) {
            let facts = self.proc_info.read(meta.pid).unwrap_or_default();
            self.processes.insert(
                meta.pid,
                ProcessView {
                    pid: meta.pid,
                    uid: facts.uid,
                    nice: facts.nice,
                    hints: ProcessHints::default(),
                },
            );
        }
        self.entries.insert(
            status.id,
            Entry {
                ctl,
                view,
                last_transition: 0,
                attention: Attention::INITIAL,
            },
        );
        self.reschedule(now);
    }

    /// Stops managing `id`; a suspended queue is resumed first so its work is not stranded.
    /// Its dependencies go with it.
    pub fn unregister(&mut self, id: XQueueId, now: Nanos) -> Result<(), UnknownQueue> {
        self.account(now);
        let e = self.entries.remove(&id).ok_or(UnknownQueue(id))?;
        if e.view.suspended {
            self.apply(&e.ctl, OpKind::Resume, now);
        }
        self.deps.retain(|d| d.waiter != id && d.on != id);
        let pid = e.view.pid;
        if !self.entries.values().any(|e| e.view.pid == pid) {
            self.processes.remove(&pid);
        }
        self.reschedule(now);
        Ok(())
    }

    /// Applies a hint to `id` and reschedules.
    pub fn set_hint(&mut self, id: XQueueId, hint: Hint, now: Nanos) -> Result<(), UnknownQueue> {
        self.account(now);
        let e = self.entries.get_mut(&id).ok_or(UnknownQueue(id))?;
        e.view.hints.apply(hint, now);
        self.reschedule(now);
        Ok(())
    }

    /// Changes `id`'s hints with `change` (given the time) and reschedules: for callers that
    /// clear hints or set several at once.
    pub fn update_hints(
        &mut self,
        id: XQueueId,
        change: impl FnOnce(&mut QueueHints, Nanos),
        now: Nanos,
    ) -> Result<(), UnknownQueue> {
        self.account(now);
        let e = self.entries.get_mut(&id).ok_or(UnknownQueue(id))?;
        change(&mut e.view.hints, now);
        self.reschedule(now);
        Ok(())
    }

    /// Applies a hint to every queue of process `pid`, present and future, and reschedules.
    pub fn set_process_hint(
        &mut self,
        pid: u32,
        hint: ProcessHint,
        now: Nanos,
    ) -> Result<(), UnknownProcess> {
        self.account(now);
        let p = self.processes.get_mut(&pid).ok_or(UnknownProcess(pid))?;
        p.hints.apply(hint);
        self.reschedule(now);
        Ok(())
    }

    /// Applies a scheduler-wide hint (time slice, k, active window) and reschedules.
    pub fn set_global_hint(&mut self, hint: GlobalHint, now: Nanos) {
        self.account(now);
        self.global.apply(hint);
        self.reschedule(now);
    }

    /// The scheduler-wide hints in force.
    pub fn global_hints(&self) -> GlobalHints {
        self.global
    }

    /// Reads every known process's facts again (after a `renice`, say) and reschedules.
    pub fn refresh_processes(&mut self, now: Nanos) {
        self.account(now);
        for p in self.processes.values_mut() {
            if let Some(f) = self.proc_info.read(p.pid) {
                p.uid = f.uid;
                p.nice = f.nice;
            }
        }
        self.reschedule(now);
    }

    /// The processes known, by pid.
    pub fn processes(&self) -> Vec<ProcessView> {
        self.processes.values().copied().collect()
    }

    /// Declares that `dep.waiter` cannot progress until `dep.on` reaches `dep.until`: until
    /// then, whenever the waiter runs, `dep.on` runs too. The dependency is dropped once
    /// satisfied (checked at every decision), or by [`LocalScheduler::clear_dependency`].
    pub fn add_dependency(&mut self, dep: Dependency, now: Nanos) -> Result<(), UnknownQueue> {
        for q in [dep.waiter, dep.on] {
            if !self.entries.contains_key(&q) {
                return Err(UnknownQueue(q));
            }
        }
        self.account(now);
        if !self.deps.contains(&dep) {
            self.deps.push(dep);
        }
        self.reschedule(now);
        Ok(())
    }

    /// Drops every dependency of `waiter` on `on`.
    pub fn clear_dependency(&mut self, waiter: XQueueId, on: XQueueId, now: Nanos) {
        self.account(now);
        self.deps.retain(|d| !(d.waiter == waiter && d.on == on));
        self.reschedule(now);
    }

    /// The dependencies in force.
    pub fn dependencies(&self) -> &[Dependency] {
        &self.deps
    }

    /// Replaces the policy; queues, hints, processes and dependencies are kept.
    pub fn set_policy(&mut self, policy: Box<dyn Policy>, now: Nanos) {
        self.account(now);
        self.policy = policy;
        self.wake_at = None;
        self.reschedule(now);
    }

    /// Takes in a queue event. Events older than the last one seen for the queue are ignored.
    pub fn on_event(&mut self, ev: QueueEvent, now: Nanos) {
        self.account(now);
        self.absorb(ev);
        self.reschedule(now);
    }

    /// Takes in several events, then decides once.
    pub fn on_events(&mut self, events: impl IntoIterator<Item = QueueEvent>, now: Nanos) {
        self.account(now);
        let mut any = false;
        for ev in events {
            any |= self.absorb(ev);
        }
        if any {
            self.reschedule(now);
        }
    }

    /// Decides again if the policy asked to be woken by `now`.
    pub fn on_timer(&mut self, now: Nanos) {
        if self.wake_at.is_some_and(|t| t <= now) {
            self.account(now);
            self.reschedule(now);
        }
    }

    /// When the policy next wants to be asked, if ever.
    pub fn next_wake(&self) -> Option<Nanos> {
        self.wake_at
    }

    /// The views the policy last saw, by id.
    pub fn views(&self) -> Vec<QueueView> {
        self.entries.values().map(|e| e.view).collect()
    }

    /// Attributes the time since the last call to the queues that were ready and running.
    fn account(&mut self, now: Nanos) {
        let from = self.accounted_to.unwrap_or(now);
        self.accounted_to = Some(from.max(now));
        let dt = now.saturating_sub(from);
        if dt == Nanos::ZERO {
            return;
        }
        let mut running: BTreeMap<DeviceId, u64> = BTreeMap::new();
        for e in self.entries.values() {
            if e.view.ready && !e.view.suspended {
                *running.entry(e.view.device).or_default() += 1;
            }
        }
        // Each running queue gets dt / n; the remainder goes to the first ones, so no time is
        // lost to rounding however short the interval.
        let mut handed: BTreeMap<DeviceId, u64> = BTreeMap::new();
        for e in self.entries.values_mut() {
            if e.view.ready && !e.view.suspended {
                let n = running.get(&e.view.device).copied().unwrap_or(1).max(1);
                let k = handed.entry(e.view.device).or_default();
                let extra = u64::from(*k < dt.0 % n);
                *k += 1;
                e.view.served += Nanos(dt.0 / n + extra);
            }
        }
    }

    fn absorb(&mut self, ev: QueueEvent) -> bool {
        let Some(e) = self.entries.get_mut(&ev.queue) else {
            return false;
        };
        if ev.transition <= e.last_transition {
            return false;
        }
        e.last_transition = ev.transition;
        let ready = ev.state == QueueState::Ready;
        if e.view.ready && !ready {
            e.view.jobs += 1;
            e.view.last_job = Some(ev.at.saturating_sub(e.view.since));
        }
        if ready {
            // The announced work (or other work) has arrived.
            e.view.hints.upcoming = None;
        }
        e.view.ready = ready;
        e.view.since = ev.at;
        true
    }

    /// Drops dependencies that are satisfied, and announcements that lapsed.
    fn prune(&mut self, now: Nanos) {
        let entries = &self.entries;
        self.deps.retain(|d| {
            entries.get(&d.on).is_some_and(|e| {
                let s = e.ctl.status();
                !d.satisfied_by(s.submitted - s.pending, s.completed)
            })
        });
        for e in self.entries.values_mut() {
            if e.view.hints.upcoming.is_some_and(|u| !u.live(now)) {
                e.view.hints.upcoming = None;
            }
        }
    }

    fn reschedule(&mut self, now: Nanos) {
        self.prune(now);
        let views: Vec<QueueView> = self.entries.values().map(|e| e.view).collect();
        let processes: Vec<ProcessView> = self.processes.values().copied().collect();
        let mut decision = self.policy.decide(&Snapshot {
            now,
            queues: &views,
            processes: &processes,
            global: self.global,
            deps: &self.deps,
        });
        let lifted = inherit(&mut decision, &views, &self.deps);
        self.inherited += lifted
            .iter()
            .filter(|id| !self.inheriting.contains(id))
            .count() as u64;
        self.inheriting = lifted;
        self.decisions += 1;
        self.wake_at = decision.wake_at;
        // Sorted once, so the lookups below stay O(n log n) across hundreds of queues.
        let mut suspend = decision.suspend.clone();
        suspend.sort_unstable();
        let mut changes = Vec::new();
        for (id, e) in &self.entries {
            let want = suspend.binary_search(id).is_ok();
            if want != e.view.suspended {
                changes.push((*id, want));
            }
        }
        // Suspend first, then resume, so a device never runs both sides of a switch at once.
        changes.sort_by_key(|(_, suspend)| !*suspend);
        for (id, suspend) in changes {
            let Some(e) = self.entries.get_mut(&id) else {
                continue;
            };
            e.view.suspended = suspend;
            let kind = if suspend {
                OpKind::Suspend
            } else {
                OpKind::Resume
            };
            let ctl = Arc::clone(&e.ctl);
            self.apply(&ctl, kind, now);
        }
        self.update_attention(&decision, now);
    }

    /// Tells each queue how to run until the next decision, from the policy's plan for it
    /// ([`Decision::plan`](baton_policies::Decision::plan)), computed here once for every
    /// scheduler (the daemon sends each queue what its proxy was told). A queue reports its
    /// transitions only if the policy says they can change a decision (each report wakes the
    /// scheduler) or it is in a dependency. A queue going idle matters only while some queue is
    /// suspended (it may be what holds that queue back): then every ready queue is watched, so
    /// it reports idle even if its application never synchronizes, and stays watched while it
    /// reports; a queue that never met a suspension is not polled for.
    fn update_attention(&mut self, decision: &Decision, now: Nanos) {
        let any_suspended = self.entries.values().any(|e| e.view.suspended);
        let mut stale = false;
        // The plans are in the snapshot's order, which is the entries' order.
        for (i, e) in self.entries.values_mut().enumerate() {
            let plan = decision.plan(i);
            let was = e.attention;
            let a = attention(
                &plan,
                &e.view,
                self.deps
                    .iter()
                    .any(|d| d.on == e.view.id || d.waiter == e.view.id),
                was.watch,
                any_suspended,
            );
            if a == was {
                continue;
            }
            e.attention = a;
            e.ctl.set_attention(a);
            if a.report && !was.report {
                // Its transitions went unreported: read its state now rather than wait for
                // the event it just re-sent.
                let st = e.ctl.status();
                if st.transitions > e.last_transition {
                    e.last_transition = st.transitions;
                    let ready = st.state == QueueState::Ready;
                    stale |= ready != e.view.ready;
                    e.view.ready = ready;
                    e.view.since = now;
                }
            }
        }
        if stale {
            // Decide again with the fresh states; reporting flags do not change twice in a row.
            self.reschedule(now);
        }
    }

    fn apply(&mut self, ctl: &Arc<dyn QueueControl>, kind: OpKind, now: Nanos) {
        let result = match kind {
            OpKind::Suspend => ctl.suspend(SuspendFlags::default()),
            OpKind::Resume => ctl.resume(ResumeFlags::default()),
        };
        if let Err(e) = result {
            // The queue still stopped or started launching (Level 1); only the hardware step
            // failed. Scheduling carries on.
            tracing::warn!(queue = %ctl.id(), ?kind, error = %e, "hardware step failed");
        }
        if let Some(ops) = &mut self.ops {
            ops.push(OpRecord {
                at: now,
                queue: ctl.id(),
                kind,
            });
        }
    }
}

/// How a queue is to run, from its policy's `plan` and what the scheduler knows of it: its
/// view after the decision, whether it is in a dependency, whether it was watched, and whether
/// any queue is suspended.
fn attention(
    plan: &QueuePlan,
    view: &QueueView,
    in_dependency: bool,
    watched: bool,
    any_suspended: bool,
) -> Attention {
    // A queue in a dependency reports too: its progress ends the dependency (and any priority
    // it inherited) whatever the policy reads.
    let report = plan.report || in_dependency;
    let unbounded = !view.suspended && !plan.may_suspend;
    // Once watched, a queue stays watched while it reports: the watch costs only a backing-off
    // poll while it has work in flight, whereas switching it with every suspension would send
    // every ready queue a message per decision.
    let watch = report && (watched || (any_suspended && view.ready));
    Attention {
        report,
        unbounded,
        // Only a queue the policy may hold keeps its work in flight to the device-time budget;
        // one it only keeps suspendable (its slice short) is bounded by count.
        hold: unbounded || view.suspended || plan.may_hold,
        // It outranks other work: the policy wants its events and nothing can suspend it.
        leading: unbounded && plan.report,
        // Only a queue with a measure can be let go for it.
        remeasure: unbounded && view.hints.command_time.is_some() && plan.remeasure,
        watch,
    }
}

#[cfg(test)]
mod tests;
