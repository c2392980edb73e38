//! The local scheduler: policy decisions applied to this process's queues.

use std::collections::BTreeMap;
use std::sync::Arc;

use baton_core::{
    Nanos, QueueControl, QueueEvent, QueueState, ResumeFlags, SuspendFlags, XQueueId,
};
use baton_policies::{DeviceId, Hint, Policy, QueueHints, QueueView, Snapshot};

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

struct Entry {
    ctl: Arc<dyn QueueControl>,
    view: QueueView,
    last_transition: u64,
}

/// Runs a policy over registered queues. Single-threaded: wrap it in [`SchedulerThread`](crate::SchedulerThread)
/// for live use, or call it from a virtual-time loop.
pub struct LocalScheduler {
    policy: Box<dyn Policy>,
    entries: BTreeMap<XQueueId, Entry>,
    wake_at: Option<Nanos>,
    ops: Option<Vec<OpRecord>>,
    decisions: u64,
}

impl LocalScheduler {
    /// A scheduler running `policy`.
    pub fn new(policy: Box<dyn Policy>) -> LocalScheduler {
        LocalScheduler {
            policy,
            entries: BTreeMap::new(),
            wake_at: None,
            ops: None,
            decisions: 0,
        }
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

    /// How many decisions were taken so far.
    pub fn decisions(&self) -> u64 {
        self.decisions
    }

    /// Starts managing `ctl`.
    pub fn register(&mut self, ctl: Arc<dyn QueueControl>, meta: QueueMeta, now: Nanos) {
        let status = ctl.status();
        let view = QueueView {
            id: status.id,
            pid: meta.pid,
            device: meta.device,
            ready: status.state == QueueState::Ready,
            since: now,
            suspended: status.suspended,
            hints: meta.hints,
        };
        self.entries.insert(
            status.id,
            Entry {
                ctl,
                view,
                last_transition: 0,
            },
        );
        self.reschedule(now);
    }

    /// Stops managing `id`; a suspended queue is resumed first so its work is not stranded.
    pub fn unregister(&mut self, id: XQueueId, now: Nanos) -> Result<(), UnknownQueue> {
        let e = self.entries.remove(&id).ok_or(UnknownQueue(id))?;
        if e.view.suspended {
            self.apply(&e.ctl, OpKind::Resume, now);
        }
        self.reschedule(now);
        Ok(())
    }

    /// Applies a hint to `id` and reschedules.
    pub fn set_hint(&mut self, id: XQueueId, hint: Hint, now: Nanos) -> Result<(), UnknownQueue> {
        let e = self.entries.get_mut(&id).ok_or(UnknownQueue(id))?;
        e.view.hints.apply(hint);
        self.reschedule(now);
        Ok(())
    }

    /// Replaces the policy; queues and hints are kept.
    pub fn set_policy(&mut self, policy: Box<dyn Policy>, now: Nanos) {
        self.policy = policy;
        self.wake_at = None;
        self.reschedule(now);
    }

    /// Takes in a queue event. Events older than the last one seen for the queue are ignored.
    pub fn on_event(&mut self, ev: QueueEvent, now: Nanos) {
        self.absorb(ev);
        self.reschedule(now);
    }

    /// Takes in several events, then decides once.
    pub fn on_events(&mut self, events: impl IntoIterator<Item = QueueEvent>, now: Nanos) {
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

    fn absorb(&mut self, ev: QueueEvent) -> bool {
        let Some(e) = self.entries.get_mut(&ev.queue) else {
            return false;
        };
        if ev.transition <= e.last_transition {
            return false;
        }
        e.last_transition = ev.transition;
        e.view.ready = ev.state == QueueState::Ready;
        e.view.since = ev.at;
        true
    }

    fn reschedule(&mut self, now: Nanos) {
        let views: Vec<QueueView> = self.entries.values().map(|e| e.view).collect();
        let decision = self.policy.decide(&Snapshot {
            now,
            queues: &views,
        });
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

#[cfg(test)]
mod tests {
    use baton_core::testing::{ScriptedHwQueue, TestCommand};
    use baton_core::{Drive, Level, Priority, XQueue};
    use baton_policies::Hpf;

    use super::*;
    use crate::Inbox;

    fn queue(inbox: &Arc<Inbox>) -> (ScriptedHwQueue, Arc<XQueue<ScriptedHwQueue>>) {
        let hw = ScriptedHwQueue::new(Level::L1);
        let q = XQueue::builder(hw.clone())
            .drive(Drive::External)
            .sink(inbox.clone())
            .build()
            .unwrap();
        (hw, Arc::new(q))
    }

    fn meta(p: i64) -> QueueMeta {
        QueueMeta {
            pid: 1,
            device: DeviceId(0),
            hints: QueueHints {
                priority: Priority::new(p).unwrap(),
            },
        }
    }

    #[test]
    fn hpf_suspends_be_while_hp_is_ready_and_resumes_it_after() {
        let inbox = Arc::new(Inbox::new());
        let (hp_hw, hp) = queue(&inbox);
        let (be_hw, be) = queue(&inbox);
        let mut s = LocalScheduler::new(Box::new(Hpf));
        s.record_ops(true);
        s.register(hp.clone(), meta(10), Nanos(0));
        s.register(be.clone(), meta(0), Nanos(0));
        be.submit(TestCommand(1)).unwrap();
        s.on_events(inbox.drain(), Nanos(1));
        assert!(!be.status().suspended);
        hp.submit(TestCommand(2)).unwrap();
        s.on_events(inbox.drain(), Nanos(2));
        assert!(be.status().suspended);
        // BE's next command waits while HP runs.
        be.submit(TestCommand(3)).unwrap();
        assert_eq!(be_hw.script().launched, vec![1]);
        hp_hw.complete_all();
        hp.poll();
        s.on_events(inbox.drain(), Nanos(3));
        assert!(!be.status().suspended);
        assert_eq!(be_hw.script().launched, vec![1, 3]);
        let ops: Vec<_> = s.take_ops().iter().map(|o| (o.at, o.kind)).collect();
        assert_eq!(
            ops,
            vec![(Nanos(2), OpKind::Suspend), (Nanos(3), OpKind::Resume)]
        );
    }

    #[test]
    fn stale_events_are_ignored() {
        let inbox = Arc::new(Inbox::new());
        let (_hw, hp) = queue(&inbox);
        let mut s = LocalScheduler::new(Box::new(Hpf));
        s.register(hp.clone(), meta(10), Nanos(0));
        let newer = QueueEvent {
            queue: hp.id(),
            state: QueueState::Ready,
            at: Nanos(5),
            transition: 3,
        };
        let older = QueueEvent {
            state: QueueState::Idle,
            at: Nanos(4),
            transition: 2,
            ..newer
        };
        s.on_event(newer, Nanos(5));
        s.on_event(older, Nanos(6));
        assert!(s.views()[0].ready);
    }

    #[test]
    fn hints_and_unknown_queues() {
        let inbox = Arc::new(Inbox::new());
        let (_a, a) = queue(&inbox);
        let (_b, b) = queue(&inbox);
        let mut s = LocalScheduler::new(Box::new(Hpf));
        s.register(a.clone(), meta(0), Nanos(0));
        s.register(b.clone(), meta(0), Nanos(0));
        a.submit(TestCommand(0)).unwrap();
        b.submit(TestCommand(0)).unwrap();
        s.on_events(inbox.drain(), Nanos(1));
        assert!(!a.status().suspended && !b.status().suspended);
        s.set_hint(b.id(), Hint::priority(5).unwrap(), Nanos(2))
            .unwrap();
        assert!(a.status().suspended && !b.status().suspended);
        assert_eq!(
            s.set_hint(XQueueId(u64::MAX), Hint::priority(1).unwrap(), Nanos(3)),
            Err(UnknownQueue(XQueueId(u64::MAX)))
        );
        assert!(Hint::priority(1_000).is_err());
        // Removing the queue that held a suspended peer back lets it run again.
        s.unregister(b.id(), Nanos(4)).unwrap();
        assert!(!a.status().suspended);
    }
}
