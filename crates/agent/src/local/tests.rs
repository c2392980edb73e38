//! Tests of the local scheduler.

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
        hints: QueueHints::with_priority(Priority::new(p).unwrap()),
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
