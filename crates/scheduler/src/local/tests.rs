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

fn sched_with_nice(policy: &str, nice: &[(u32, i32)]) -> LocalScheduler {
    let mut s = LocalScheduler::new(baton_policies::by_name(policy).unwrap());
    let facts = nice
        .iter()
        .map(|(pid, n)| {
            (
                *pid,
                crate::ProcessFacts {
                    uid: 1000,
                    nice: *n,
                },
            )
        })
        .collect();
    s.set_process_info_source(Box::new(crate::StaticProcessInfo(facts)));
    s
}

#[test]
fn chpf_reads_niceness_through_the_injected_source() {
    let inbox = Arc::new(Inbox::new());
    let (_a, a) = queue(&inbox);
    let (_b, b) = queue(&inbox);
    let mut s = sched_with_nice("chpf", &[(10, 5), (20, -5)]);
    s.register(a.clone(), QueueMeta { pid: 10, ..meta(0) }, Nanos(0));
    s.register(b.clone(), QueueMeta { pid: 20, ..meta(0) }, Nanos(0));
    a.submit(TestCommand(0)).unwrap();
    b.submit(TestCommand(0)).unwrap();
    s.on_events(inbox.drain(), Nanos(1));
    assert!(a.status().suspended && !b.status().suspended);
    assert_eq!(s.processes()[1].nice, -5);
    assert_eq!(s.processes()[1].uid, 1000);
}

#[test]
fn switching_policy_keeps_queues_hints_and_processes() {
    let inbox = Arc::new(Inbox::new());
    let (_a, a) = queue(&inbox);
    let mut s = sched_with_nice("hpf", &[]);
    s.register(a.clone(), meta(7), Nanos(0));
    s.set_hint(a.id(), Hint::utilization(40.0).unwrap(), Nanos(1))
        .unwrap();
    s.set_global_hint(baton_policies::GlobalHint::k(3).unwrap(), Nanos(2));
    s.set_policy(baton_policies::by_name("up").unwrap(), Nanos(3));
    assert_eq!(s.policy_name(), "up");
    let v = s.views()[0];
    assert_eq!(v.hints.priority, Priority::new(7).unwrap());
    assert_eq!(v.hints.utilization.unwrap().permille(), 400);
    assert_eq!(s.global_hints().k, Some(3));
    assert_eq!(s.processes().len(), 1);
}

#[test]
fn served_time_and_jobs_are_accounted() {
    let inbox = Arc::new(Inbox::new());
    let (a_hw, a) = queue(&inbox);
    let (b_hw, b) = queue(&inbox);
    let mut s = sched_with_nice("awf", &[]);
    s.register(a.clone(), meta(0), Nanos(0));
    s.register(b.clone(), meta(0), Nanos(0));
    a.submit(TestCommand(0)).unwrap();
    b.submit(TestCommand(0)).unwrap();
    s.on_events(inbox.drain(), Nanos(100));
    // Both ready and running from 100 to 401: 301 ns split 151 + 150.
    a_hw.complete_all();
    a.poll();
    s.on_events(inbox.drain(), Nanos(401));
    let v = s.views();
    assert_eq!((v[0].served, v[1].served), (Nanos(151), Nanos(150)));
    // Job latency comes from the events' own time stamps (the queue's clock).
    assert!(v[0].jobs == 1 && v[0].last_job.is_some() && v[1].jobs == 0);
    b_hw.complete_all();
    b.poll();
    s.on_events(inbox.drain(), Nanos(501));
    assert_eq!(s.views()[1].served, Nanos(250));
}

#[test]
fn dependencies_are_checked_and_dropped_once_satisfied() {
    let inbox = Arc::new(Inbox::new());
    let (_w, w) = queue(&inbox);
    let (b_hw, b) = queue(&inbox);
    let mut s = sched_with_nice("hpf", &[]);
    s.register(w.clone(), meta(10), Nanos(0));
    s.register(b.clone(), meta(0), Nanos(0));
    b.submit(TestCommand(1)).unwrap();
    w.submit(TestCommand(2)).unwrap();
    s.on_events(inbox.drain(), Nanos(1));
    assert!(b.status().suspended);
    let dep = baton_policies::Dependency {
        waiter: w.id(),
        on: b.id(),
        until: baton_policies::Until::Completed(baton_core::CommandSeq(0)),
    };
    assert_eq!(
        s.add_dependency(
            baton_policies::Dependency {
                on: XQueueId(999),
                ..dep
            },
            Nanos(2)
        ),
        Err(UnknownQueue(XQueueId(999)))
    );
    s.add_dependency(dep, Nanos(2)).unwrap();
    // B inherits W's right to run until its command 0 completes.
    assert!(!b.status().suspended);
    assert_eq!(s.inherited_resumes(), 1);
    b_hw.complete_all();
    b.poll();
    s.on_events(inbox.drain(), Nanos(3));
    assert!(s.dependencies().is_empty());
    b.submit(TestCommand(3)).unwrap();
    s.on_events(inbox.drain(), Nanos(4));
    assert!(b.status().suspended);
}

#[test]
fn process_level_scheduling_moves_a_process_as_a_unit() {
    let inbox = Arc::new(Inbox::new());
    let (_a1, a1) = queue(&inbox);
    let (_a2, a2) = queue(&inbox);
    let (_c, c) = queue(&inbox);
    let mut s = sched_with_nice("process:hpf", &[]);
    s.register(a1.clone(), QueueMeta { pid: 5, ..meta(9) }, Nanos(0));
    s.register(a2.clone(), QueueMeta { pid: 5, ..meta(0) }, Nanos(0));
    s.register(c.clone(), QueueMeta { pid: 6, ..meta(3) }, Nanos(0));
    for q in [&a1, &a2, &c] {
        q.submit(TestCommand(0)).unwrap();
    }
    s.on_events(inbox.drain(), Nanos(1));
    // HPF alone would run a1 only; process 5 runs whole, process 6 waits.
    assert!(!a1.status().suspended && !a2.status().suspended && c.status().suspended);
}

#[test]
fn only_queues_whose_events_matter_report_them() {
    let inbox = Arc::new(Inbox::new());
    let (a_hw, a) = queue(&inbox);
    let (_b, b) = queue(&inbox);
    let mut s = LocalScheduler::new(Box::new(Hpf));
    s.register(a.clone(), meta(0), Nanos(0));
    s.register(b.clone(), meta(0), Nanos(0));
    // Equal priorities: HPF can never suspend either, so neither reports, but for its first
    // Ready (that it has run work at all).
    a.submit(TestCommand(0)).unwrap();
    b.submit(TestCommand(0)).unwrap();
    s.on_events(inbox.drain(), Nanos(1));
    assert!(s.views().iter().all(|v| v.ready));
    a_hw.complete_all();
    a.poll();
    a.submit(TestCommand(2)).unwrap();
    assert!(inbox.drain().is_empty());
    // B now outranks A: B reports (and its current state is taken at once), A stays muted.
    s.set_hint(b.id(), Hint::priority(9).unwrap(), Nanos(1))
        .unwrap();
    assert!(a.status().suspended);
    assert!(s.views().iter().any(|v| v.id == b.id() && v.ready));
    s.on_events(inbox.drain(), Nanos(2));
    a.submit(TestCommand(1)).unwrap();
    assert!(
        inbox.drain().is_empty(),
        "A's events cannot change a decision"
    );
}

#[test]
fn a_priority_posted_from_another_thread_takes_effect_on_the_scheduler_thread() {
    let t = crate::SchedulerThread::start(
        LocalScheduler::new(Box::new(Hpf)),
        Arc::new(baton_core::MonotonicClock::new()),
    )
    .unwrap();
    let inbox = t.inbox();
    let (_hp_hw, hp) = queue(&inbox);
    let (_be_hw, be) = queue(&inbox);
    t.lock().register(hp.clone(), meta(0), Nanos(0));
    t.lock().register(be.clone(), meta(0), Nanos(0));
    hp.submit(TestCommand(1)).unwrap();
    be.submit(TestCommand(2)).unwrap();
    // Equal priorities: nobody is held back.
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(!be.status().suspended);
    // An application thread raises one queue's priority: the scheduler's thread applies it
    // (the posting thread never runs the policy) and holds the other back.
    t.post_hints(hp.id(), |h, _| h.priority = Priority::new(10).unwrap());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !be.status().suspended {
        assert!(
            std::time::Instant::now() < deadline,
            "the posted priority never took effect"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let view = t
        .lock()
        .views()
        .into_iter()
        .find(|v| v.id == hp.id())
        .unwrap();
    assert_eq!(view.hints.priority.get(), 10);
}

#[test]
fn only_a_queue_let_go_for_its_short_commands_is_asked_to_be_measured_again() {
    let inbox = Arc::new(Inbox::new());
    let (_hp, hp) = queue(&inbox);
    let (_be, be) = queue(&inbox);
    let mut s = LocalScheduler::new(Box::new(Hpf));
    // The operator's bound (none is short by default).
    s.set_global_hint(
        baton_policies::GlobalHint::short_command(Nanos::from_micros(250)).unwrap(),
        Nanos(0),
    );
    s.register(hp.clone(), meta(10), Nanos(0));
    s.register(be.clone(), QueueMeta { pid: 2, ..meta(0) }, Nanos(0));
    // Both measured short. The job (another process, outranked) is let go for that measure
    // and must be measured again; the service is let go because nothing outranks it.
    for (q, us) in [(&hp, 130), (&be, 60)] {
        s.set_hint(
            q.id(),
            Hint::command_time(Nanos::from_micros(us)).unwrap(),
            Nanos(1),
        )
        .unwrap();
    }
    assert!(be.may_run_unbounded() && be.wants_remeasure());
    assert!(hp.may_run_unbounded() && !hp.wants_remeasure());
    // Once the service is gone, nothing outranks the job either: no more measuring.
    s.unregister(hp.id(), Nanos(2)).unwrap();
    assert!(be.may_run_unbounded() && !be.wants_remeasure());
}

#[test]
fn a_yielding_queue_keeps_the_device_time_budget_only_where_it_may_be_held() {
    let inbox = Arc::new(Inbox::new());
    let (_hp, hp) = queue(&inbox);
    let (_be, be) = queue(&inbox);
    let mut s = LocalScheduler::new(Box::new(Hpf));
    s.register(hp.clone(), meta(10), Nanos(0));
    let mut m = QueueMeta { pid: 2, ..meta(0) };
    m.hints.yielding = Some(Nanos::from_micros(100));
    s.register(be.clone(), m, Nanos(0));
    // Outranked, so suspendable (its slice short); the service not measured yet holds nothing.
    assert!(!be.may_run_unbounded());
    assert!(!be.holdable());
    // Measured bound by its launching: still not held, so still not budgeted.
    let launch_bound = baton_policies::Readiness {
        ready: 950,
        waiting: 40,
    };
    s.set_hint(hp.id(), Hint::Readiness(launch_bound), Nanos(1))
        .unwrap();
    assert!(!be.may_run_unbounded() && !be.holdable());
    // Keeping the device busy while it has work: the job may be held, its work in flight
    // bounded by device time.
    let busy = baton_policies::Readiness {
        ready: 300,
        waiting: 280,
    };
    s.set_hint(hp.id(), Hint::Readiness(busy), Nanos(2))
        .unwrap();
    assert!(be.holdable());
    // Alone, it is unbounded (and holdable, which then bounds nothing).
    s.unregister(hp.id(), Nanos(3)).unwrap();
    assert!(be.may_run_unbounded() && be.holdable());
}

#[test]
fn attention_is_computed_once_from_the_plan_and_what_the_scheduler_knows() {
    use baton_policies::QueuePlan;

    let mut view = QueueView::new(1, 1, 0, true);
    let free = QueuePlan {
        report: false,
        may_suspend: false,
        ..QueuePlan::DEFAULT
    };
    // Reporting only for a dependency: unbounded, but leading nothing.
    let a = super::attention(&free, &view, true, false, false);
    assert!(a.report && a.unbounded && !a.leading, "{a:?}");
    // Wanted by the policy and never suspended: it leads its device.
    let wanted = QueuePlan {
        report: true,
        ..free
    };
    let a = super::attention(&wanted, &view, false, false, false);
    assert!(a.report && a.unbounded && a.leading && a.hold, "{a:?}");
    // Measured again only where it has a measure, and only while unbounded.
    let measured = QueuePlan {
        remeasure: true,
        ..wanted
    };
    assert!(!super::attention(&measured, &view, false, false, false).remeasure);
    view.hints.command_time = Some(Nanos::from_micros(20));
    assert!(super::attention(&measured, &view, false, false, false).remeasure);
    view.suspended = true;
    let a = super::attention(&measured, &view, false, false, false);
    assert!(
        !a.unbounded && !a.leading && !a.remeasure && a.hold,
        "{a:?}"
    );
    // Watched while a queue is suspended and it is ready, and then while it reports.
    view.suspended = false;
    assert!(super::attention(&QueuePlan::DEFAULT, &view, false, false, true).watch);
    view.ready = false;
    assert!(super::attention(&QueuePlan::DEFAULT, &view, false, true, false).watch);
    assert!(!super::attention(&free, &view, false, true, false).watch);
}
