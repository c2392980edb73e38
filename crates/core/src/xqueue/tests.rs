use std::sync::Arc as StdArc;
use std::sync::Mutex as StdMutex;

use proptest::prelude::*;

use super::*;
use crate::testing::{Probe, ScriptedHwQueue, TestCommand};
use crate::{
    CommandSeq, CommandState, EventSink, HwError, InflightRange, ManualClock, Nanos, QueueEvent,
};
use crate::{HwQueue, LaunchConfig, Level, QueueState, XQueueError};

/// Records every event it receives.
#[derive(Default)]
struct Recorder(StdMutex<Vec<QueueEvent>>);

impl EventSink for Recorder {
    fn on_queue_event(&self, event: QueueEvent) {
        self.0.lock().unwrap().push(event);
    }
}

impl Recorder {
    fn states(&self) -> Vec<QueueState> {
        let mut v = self.0.lock().unwrap().clone();
        v.sort_by_key(|e| e.transition);
        v.into_iter().map(|e| e.state).collect()
    }
}

fn external(hw: &ScriptedHwQueue, t: u32, b: u32) -> XQueue<ScriptedHwQueue> {
    XQueue::builder(hw.clone())
        .drive(Drive::External)
        .config(LaunchConfig::new(t, b).unwrap())
        .build()
        .unwrap()
}

fn submit_n(q: &XQueue<ScriptedHwQueue>, from: u64, n: u64) {
    for i in from..from + n {
        q.submit(TestCommand(i)).unwrap();
    }
}

#[test]
fn fast_path_launches_on_the_calling_thread() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let q = external(&hw, 16, 8);
    let seq = q.submit(TestCommand(7)).unwrap();
    assert_eq!(seq, CommandSeq(0));
    assert_eq!(hw.script().launched, vec![7]);
    assert_eq!(q.query(seq).unwrap(), CommandState::InFlight);
}

#[test]
fn inflight_never_exceeds_threshold() {
    let hw = ScriptedHwQueue::new(Level::L1);
    hw.with(|s| s.window = Some(4));
    let q = external(&hw, 4, 2);
    submit_n(&q, 0, 40);
    assert_eq!(hw.script().launched.len(), 4);
    let st = q.status();
    assert_eq!((st.pending, st.inflight, st.submitted), (36, 4, 40));
    // Completing one command frees nothing: completion is learnt at sync points (every 2).
    hw.complete(1);
    q.poll();
    assert_eq!(hw.script().launched.len(), 4);
    hw.complete(1);
    q.poll();
    assert_eq!(hw.script().launched.len(), 6);
    while q.status().completed < 40 {
        hw.complete(1);
        q.poll();
    }
    let s = hw.script();
    assert_eq!(s.launched, (0..40).collect::<Vec<_>>());
    assert!(s.violations.is_empty(), "{:?}", s.violations);
}

#[test]
fn a_sync_point_every_batch() {
    let hw = ScriptedHwQueue::new(Level::L1);
    hw.set_auto_complete(true);
    let q = external(&hw, 16, 8);
    submit_n(&q, 0, 24);
    assert_eq!(hw.script().sync_points, 3);
}

#[test]
fn an_unbounded_queue_launches_past_its_window_without_sync_points() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let q = external(&hw, 4, 2);
    q.set_unbounded(true);
    submit_n(&q, 0, 40);
    let s = hw.script();
    assert_eq!((s.launched.len(), s.sync_points), (40, 0));
    // Bounded again: the window applies at once; what was launched unbounded gets a sync
    // point when work waits behind it.
    q.set_unbounded(false);
    submit_n(&q, 40, 10);
    q.poll();
    let s = hw.script();
    assert_eq!((s.launched.len(), s.sync_points), (40, 1));
    hw.complete(40);
    q.poll();
    assert_eq!(hw.script().launched.len(), 44);
    while q.status().completed < 50 {
        hw.complete(1);
        q.poll();
    }
    assert_eq!(hw.script().launched, (0..50).collect::<Vec<_>>());
}

#[test]
fn a_queue_suspended_after_running_unbounded_learns_when_its_tail_is_done() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let q = external(&hw, 4, 2);
    q.set_unbounded(true);
    submit_n(&q, 0, 30);
    q.set_unbounded(false);
    q.suspend(SuspendFlags::default()).unwrap();
    q.poll();
    assert_eq!(hw.script().sync_points, 1);
    hw.complete(30);
    q.poll();
    assert_eq!(q.status().inflight, 0);
    // Resumed, it launches at once: the window is open.
    q.resume(ResumeFlags::default()).unwrap();
    submit_n(&q, 30, 1);
    assert_eq!(hw.script().launched.len(), 31);
}

#[test]
fn a_queue_that_keeps_its_window_ignores_unbounded() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let q = XQueue::builder(hw.clone())
        .drive(Drive::External)
        .config(LaunchConfig::new(4, 2).unwrap())
        .keep_window(true)
        .build()
        .unwrap();
    q.set_unbounded(true);
    submit_n(&q, 0, 40);
    let s = hw.script();
    assert_eq!((s.launched.len(), s.sync_points), (4, 2));
}

#[test]
fn suspend_stops_launching_and_resume_continues_in_order() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let q = external(&hw, 4, 2);
    submit_n(&q, 0, 3);
    q.suspend(SuspendFlags::default()).unwrap();
    submit_n(&q, 3, 5);
    hw.complete_all();
    q.poll();
    // Suspended: the three launched before suspension finished, nothing new launched.
    assert_eq!(hw.script().launched, vec![0, 1, 2]);
    assert!(q.status().suspended);
    assert_eq!(q.status().pending, 5);
    q.resume(ResumeFlags::default()).unwrap();
    assert_eq!(hw.script().launched, vec![0, 1, 2, 3, 4, 5, 6]);
    // Launched after the resume: none went through the suspension.
    assert_eq!(q.released_while_suspended(), 0);
    hw.complete_all();
    q.poll();
    assert_eq!(hw.script().launched, (0..8).collect::<Vec<_>>());
}

#[test]
fn suspend_bounds_inflight_work() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let q = external(&hw, 8, 4);
    submit_n(&q, 0, 100);
    q.suspend(SuspendFlags::default()).unwrap();
    let at_suspend = hw.script().launched.len();
    assert_eq!(at_suspend, 8);
    for _ in 0..20 {
        hw.complete_all();
        q.poll();
    }
    // Work after suspension is exactly what was in flight: no more than the threshold.
    assert_eq!(hw.script().launched.len(), at_suspend);
    assert_eq!(q.status().inflight, 0);
}

#[test]
fn level_two_and_three_use_the_hardware_and_pass_the_inflight_range() {
    for (level, names) in [
        (Level::L2, ["deactivate", "reactivate"]),
        (Level::L3, ["interrupt", "restore"]),
    ] {
        let hw = ScriptedHwQueue::new(Level::L3);
        let q = XQueue::builder(hw.clone())
            .drive(Drive::External)
            .level(level)
            .config(LaunchConfig::new(4, 2).unwrap())
            .build()
            .unwrap();
        submit_n(&q, 0, 6);
        hw.complete(2);
        q.poll();
        q.suspend(SuspendFlags::default()).unwrap();
        // The hardware is stopped: nothing completes until resumed.
        assert_eq!(hw.complete_all(), 0);
        q.resume(ResumeFlags::default()).unwrap();
        let s = hw.script();
        assert_eq!(s.level_calls.len(), 2);
        assert_eq!(s.level_calls[0], (names[0], None));
        let range = InflightRange {
            start: CommandSeq(2),
            end: CommandSeq(6),
        };
        assert_eq!(s.level_calls[1], (names[1], Some(range)));
        hw.complete_all();
        q.poll();
        hw.complete_all();
        q.poll();
        assert_eq!(q.status().completed, 6);
    }
}

#[test]
fn asking_for_more_than_the_hardware_supports_is_an_error() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let err = XQueue::builder(hw.clone())
        .level(Level::L2)
        .build()
        .err()
        .unwrap();
    assert_eq!(
        err,
        XQueueError::LevelUnsupported {
            requested: Level::L2,
            max: Level::L1
        }
    );
    assert!(err.to_string().contains("its highest level is L1"));
    let q = external(&hw, 16, 8);
    assert!(q.set_level(Level::L3).is_err());
    q.suspend(SuspendFlags::default()).unwrap();
    assert_eq!(
        q.set_level(Level::L1),
        Err(XQueueError::SuspendedLevelChange)
    );
}

#[test]
fn idle_and_ready_events_carry_time_and_order() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let clock = StdArc::new(ManualClock::new(Nanos(100)));
    let rec = StdArc::new(Recorder::default());
    let q = XQueue::builder(hw.clone())
        .drive(Drive::External)
        .clock(clock.clone())
        .sink(rec.clone())
        .build()
        .unwrap();
    q.submit(TestCommand(0)).unwrap();
    q.submit(TestCommand(1)).unwrap();
    clock.set(Nanos(500));
    hw.complete_all();
    q.poll();
    clock.set(Nanos(900));
    q.submit(TestCommand(2)).unwrap();
    let events = rec.0.lock().unwrap().clone();
    assert_eq!(
        rec.states(),
        vec![QueueState::Ready, QueueState::Idle, QueueState::Ready]
    );
    assert_eq!(
        events
            .iter()
            .map(|e| (e.at, e.transition))
            .collect::<Vec<_>>(),
        vec![(Nanos(100), 1), (Nanos(500), 2), (Nanos(900), 3)]
    );
    assert!(events.iter().all(|e| e.queue == q.id()));
}

#[test]
fn query_and_unknown_commands() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let q = external(&hw, 2, 1);
    submit_n(&q, 0, 3);
    assert_eq!(q.query(CommandSeq(0)).unwrap(), CommandState::InFlight);
    assert_eq!(q.query(CommandSeq(2)).unwrap(), CommandState::Pending);
    assert_eq!(
        q.query(CommandSeq(3)),
        Err(XQueueError::UnknownCommand(CommandSeq(3)))
    );
    assert!(!q.query_all());
    hw.complete_all();
    assert_eq!(q.query(CommandSeq(0)).unwrap(), CommandState::Completed);
    q.poll();
    hw.complete_all();
    assert!(q.query_all());
    assert_eq!(
        q.wait(CommandSeq(9)),
        Err(XQueueError::UnknownCommand(CommandSeq(9)))
    );
}

#[test]
fn waiting_in_virtual_time_never_blocks() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let q = external(&hw, 4, 2);
    q.submit(TestCommand(0)).unwrap();
    assert_eq!(q.wait_all(), Err(XQueueError::Hw(HwError::WouldBlock)));
    hw.complete_all();
    assert_eq!(q.wait_all(), Ok(()));
}

#[test]
fn worker_drains_the_buffer_and_wait_returns_when_done() {
    let hw = ScriptedHwQueue::new(Level::L1);
    hw.with(|s| s.window = Some(4));
    let q = XQueue::builder(hw.clone())
        .config(LaunchConfig::new(4, 2).unwrap())
        .build()
        .unwrap();
    let device = {
        let hw = hw.clone();
        std::thread::spawn(move || {
            // Complete one command at a time until 100 are done.
            while hw.script().done < 100 {
                if hw.complete(1) == 0 {
                    std::thread::yield_now();
                }
            }
        })
    };
    submit_n(&q, 0, 100);
    q.wait_all().unwrap();
    device.join().unwrap();
    let s = hw.script();
    assert_eq!(s.launched, (0..100).collect::<Vec<_>>());
    assert!(s.violations.is_empty());
    assert_eq!(q.query(CommandSeq(99)).unwrap(), CommandState::Completed);
}

#[test]
fn wait_on_a_suspended_buffered_command_returns_after_resume() {
    let hw = ScriptedHwQueue::new(Level::L1);
    hw.set_auto_complete(true);
    let q = StdArc::new(XQueue::builder(hw.clone()).build().unwrap());
    q.suspend(SuspendFlags::default()).unwrap();
    let seq = q.submit(TestCommand(1)).unwrap();
    assert_eq!(q.query(seq).unwrap(), CommandState::Pending);
    let waiter = {
        let q = q.clone();
        std::thread::spawn(move || q.wait(seq))
    };
    // The command cannot run while suspended; the waiter must still be blocked.
    assert_eq!(q.query(seq).unwrap(), CommandState::Pending);
    q.resume(ResumeFlags::default()).unwrap();
    waiter.join().unwrap().unwrap();
    assert_eq!(hw.script().launched, vec![1]);
}

#[test]
fn fast_path_launch_errors_reach_the_caller_and_change_nothing() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let q = external(&hw, 4, 2);
    hw.with(|s| s.fail_next_launch = Some(1));
    let err = q.submit(TestCommand(0)).unwrap_err();
    assert!(matches!(
        err,
        XQueueError::Hw(HwError::Backend { code: 1, .. })
    ));
    assert_eq!(q.status().submitted, 0);
    assert_eq!(q.submit(TestCommand(1)).unwrap(), CommandSeq(0));
}

#[test]
fn deferred_launch_errors_are_reported_by_the_next_wait() {
    let hw = ScriptedHwQueue::new(Level::L1);
    hw.set_auto_complete(true);
    let q = XQueue::builder(hw.clone()).build().unwrap();
    q.suspend(SuspendFlags::default()).unwrap();
    q.submit(TestCommand(0)).unwrap();
    q.submit(TestCommand(1)).unwrap();
    hw.with(|s| s.fail_next_launch = Some(42));
    q.resume(ResumeFlags::default()).unwrap();
    let err = q.wait_all().unwrap_err();
    assert!(matches!(
        err,
        XQueueError::Hw(HwError::Backend { code: 42, .. })
    ));
    // Reported once; the other command ran.
    assert_eq!(q.wait_all(), Ok(()));
    assert_eq!(hw.script().launched, vec![1]);
}

#[test]
fn dropping_a_suspended_queue_runs_its_pending_work() {
    let hw = ScriptedHwQueue::new(Level::L1);
    hw.set_auto_complete(true);
    let q = XQueue::builder(hw.clone()).build().unwrap();
    q.suspend(SuspendFlags::default()).unwrap();
    submit_n_worker(&q, 10);
    drop(q);
    assert_eq!(hw.script().launched, (0..10).collect::<Vec<_>>());
}

#[test]
fn a_full_buffer_blocks_the_submitter_until_the_queue_drains() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let hw = ScriptedHwQueue::new(Level::L1);
    hw.set_auto_complete(true);
    let q = StdArc::new(XQueue::builder(hw.clone()).max_buffered(4).build().unwrap());
    q.suspend(SuspendFlags::default()).unwrap();
    let returned = StdArc::new(AtomicU64::new(0));
    let submitter = {
        let (q, returned) = (q.clone(), returned.clone());
        std::thread::spawn(move || {
            for i in 0..6 {
                q.submit(TestCommand(i)).unwrap();
                returned.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    // The fifth command enters the buffer, then its submitter waits for room.
    let start = std::time::Instant::now();
    while q.status().submitted < 5 {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "submitter stuck"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    std::thread::sleep(std::time::Duration::from_millis(30));
    assert_eq!(returned.load(Ordering::SeqCst), 4);
    assert_eq!(q.status().submitted, 5);
    assert!(hw.script().launched.is_empty());
    assert_eq!(q.submitter_held().0, 0, "not yet through a hold");
    q.resume(ResumeFlags::default()).unwrap();
    submitter.join().unwrap();
    q.wait_all().unwrap();
    assert_eq!(hw.script().launched, (0..6).collect::<Vec<_>>());
    // One hold (the fifth command's submitter), of at least the 30 ms it was kept waiting.
    let (holds, held) = q.submitter_held();
    assert_eq!(holds, 1);
    assert!(held >= Nanos::from_millis(30), "{held:?}");
}

fn submit_n_worker(q: &XQueue<ScriptedHwQueue>, n: u64) {
    for i in 0..n {
        q.submit(TestCommand(i)).unwrap();
    }
}

#[test]
fn suspend_with_sync_waits_for_inflight_work() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let q = StdArc::new(
        XQueue::builder(hw.clone())
            .config(LaunchConfig::new(4, 2).unwrap())
            .build()
            .unwrap(),
    );
    submit_n_worker(&q, 10);
    // The window full first, and nothing completed before the suspension begins: a
    // suspension that came earlier would find fewer than four in flight, and a completion
    // before it would let the worker launch a fifth; either way the device below would wait for
    // ever for a completion that never comes.
    while hw.script().launched.len() < 4 {
        std::thread::yield_now();
    }
    let device = {
        let (hw, q) = (hw.clone(), StdArc::clone(&q));
        std::thread::spawn(move || {
            while !q.status().suspended {
                std::thread::yield_now();
            }
            while hw.script().done < 4 {
                hw.complete(1);
                std::thread::yield_now();
            }
        })
    };
    q.suspend(SuspendFlags { sync_hw: true }).unwrap();
    device.join().unwrap();
    let st = q.status();
    assert_eq!(st.inflight, 0, "{st:?}");
    assert_eq!(hw.script().launched.len(), 4);
    hw.set_auto_complete(true);
}

#[test]
fn many_threads_submit_suspend_resume_and_wait_without_loss() {
    let hw = ScriptedHwQueue::new(Level::L1);
    hw.with(|s| s.window = Some(3));
    let q = StdArc::new(
        XQueue::builder(hw.clone())
            .config(LaunchConfig::new(3, 1).unwrap())
            .build()
            .unwrap(),
    );
    let stop = StdArc::new(std::sync::atomic::AtomicBool::new(false));
    let device = {
        let (hw, stop) = (hw.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                hw.complete(1);
                std::thread::yield_now();
            }
        })
    };
    let controller = {
        let (q, stop) = (q.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if i % 2 == 0 {
                    q.suspend(SuspendFlags::default()).unwrap();
                } else {
                    q.resume(ResumeFlags::default()).unwrap();
                }
                i += 1;
                std::thread::yield_now();
            }
            q.resume(ResumeFlags::default()).unwrap();
        })
    };
    let submitters: Vec<_> = (0..3u64)
        .map(|t| {
            let q = q.clone();
            std::thread::spawn(move || {
                let mut last = None;
                for i in 0..300u64 {
                    last = Some(q.submit(TestCommand(t * 1_000 + i)).unwrap());
                    if i % 50 == 49 {
                        q.wait(last.unwrap()).unwrap();
                    }
                }
                last
            })
        })
        .collect();
    for s in submitters {
        s.join().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    controller.join().unwrap();
    device.join().unwrap();
    hw.set_auto_complete(true);
    q.wait_all().unwrap();
    let s = hw.script();
    assert_eq!(s.launched.len(), 900);
    assert!(s.violations.is_empty(), "{:?}", s.violations);
    for t in 0..3u64 {
        let mine: Vec<u64> = s
            .launched
            .iter()
            .copied()
            .filter(|c| c / 1_000 == t)
            .collect();
        assert_eq!(mine, (0..300).map(|i| t * 1_000 + i).collect::<Vec<_>>());
    }
}

#[derive(Clone, Debug)]
enum Op {
    Submit(u8),
    Suspend,
    Resume,
    Complete(u8),
    Poll,
    Config(u8, u8),
    Query(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1u8..6).prop_map(Op::Submit),
        1 => Just(Op::Suspend),
        1 => Just(Op::Resume),
        3 => (0u8..8).prop_map(Op::Complete),
        2 => Just(Op::Poll),
        1 => (1u8..8, 1u8..8).prop_map(|(t, b)| Op::Config(t, b)),
        1 => any::<u8>().prop_map(Op::Query),
    ]
}

proptest! {
    /// Whatever the interleaving of submit/suspend/resume/completion/poll/config/query, every
    /// command is launched exactly once, in order; nothing is launched while suspended; the
    /// window is never exceeded; states only move forward.
    #[test]
    fn exactly_once_in_order_under_any_interleaving(
        ops in proptest::collection::vec(op(), 1..120),
        level in 1u8..=3,
    ) {
        let level = Level::try_from(level).unwrap();
        let hw = ScriptedHwQueue::new(Level::L3);
        let q = XQueue::builder(hw.clone())
            .drive(Drive::External)
            .level(level)
            .config(LaunchConfig::new(4, 2).unwrap())
            .build()
            .unwrap();
        let mut next = 0u64;
        let mut suspended = false;
        let mut threshold = 4u64;
        let mut seen = std::collections::HashMap::new();
        for op in ops {
            let before = hw.script().launched.len();
            hw.with(|s| s.window = Some(threshold));
            match op {
                Op::Submit(n) => for _ in 0..n {
                    prop_assert_eq!(q.submit(TestCommand(next)).unwrap(), CommandSeq(next));
                    next += 1;
                },
                Op::Suspend => { q.suspend(SuspendFlags::default()).unwrap(); suspended = true; }
                Op::Resume => { q.resume(ResumeFlags::default()).unwrap(); suspended = false; }
                Op::Complete(n) => { hw.complete(usize::from(n)); }
                Op::Poll => q.poll(),
                Op::Config(t, b) => {
                    if let Ok(c) = LaunchConfig::new(u32::from(t), u32::from(b)) {
                        threshold = u64::from(t);
                        hw.with(|s| s.window = Some(threshold));
                        q.set_launch_config(c);
                    }
                }
                Op::Query(s) => {
                    let seq = CommandSeq(u64::from(s));
                    match q.query(seq) {
                        Ok(state) => {
                            let prev = seen.insert(seq, state);
                            if let Some(prev) = prev { prop_assert!(prev <= state); }
                        }
                        Err(e) => prop_assert_eq!(e, XQueueError::UnknownCommand(seq)),
                    }
                }
            }
            let s = hw.script();
            if suspended && !matches!(op, Op::Resume) {
                prop_assert_eq!(s.launched.len(), before, "launched while suspended");
            }
            prop_assert!(s.violations.is_empty(), "window exceeded: {:?}", s.violations);
            prop_assert_eq!(&s.launched[..], &(0..s.launched.len() as u64).collect::<Vec<_>>()[..]);
        }
        q.resume(ResumeFlags::default()).unwrap();
        for _ in 0..(next + 2) {
            hw.complete_all();
            q.poll();
        }
        let s = hw.script();
        prop_assert_eq!(s.launched, (0..next).collect::<Vec<_>>());
        let st = q.status();
        prop_assert_eq!((st.submitted, st.completed, st.pending), (next, next, 0));
        prop_assert_eq!(st.state, QueueState::Idle);
    }
}

/// Regression: after the threshold was lowered below the in-flight count, the last in-flight
/// command had no sync point and an externally driven queue never drained.
#[test]
fn lowering_the_threshold_below_the_inflight_count_still_drains() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let q = external(&hw, 5, 2);
    submit_n(&q, 0, 6);
    q.set_launch_config(LaunchConfig::new(1, 1).unwrap());
    for _ in 0..10 {
        hw.complete_all();
        q.poll();
    }
    assert_eq!(hw.script().launched, (0..6).collect::<Vec<_>>());
    assert_eq!(q.status().state, QueueState::Idle);
}

#[test]
fn a_submission_is_copied_only_when_it_must_wait() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let q = external(&hw, 2, 1);
    let built = StdArc::new(std::sync::atomic::AtomicUsize::new(0));
    for i in 0..4u64 {
        let mut p = Probe::new(100 + i, Some(i));
        p.copies = Some(built.clone());
        q.submit_after(Vec::new(), p).unwrap();
    }
    // Two direct launches filled the window; the other two were built for the buffer.
    assert_eq!(built.load(std::sync::atomic::Ordering::Relaxed), 2);
    assert_eq!(hw.script().launched, vec![100, 101]);
    assert!(q.has_pending());
    for _ in 0..4 {
        hw.complete_all();
        q.poll();
    }
    assert_eq!(hw.script().launched, vec![100, 101, 2, 3]);
    assert!(!q.has_pending());
}

#[test]
fn a_turn_sees_every_earlier_command_launched() {
    let hw = ScriptedHwQueue::new(Level::L1);
    hw.set_auto_complete(true);
    let q = StdArc::new(XQueue::builder(hw.clone()).build().unwrap());
    q.suspend(SuspendFlags::default()).unwrap();
    submit_n_worker(&q, 5);
    let runner = {
        let q = q.clone();
        std::thread::spawn(move || {
            let turn = q.in_turn(Vec::new()).unwrap();
            turn.hw().script().launched.len()
        })
    };
    q.resume(ResumeFlags::default()).unwrap();
    assert_eq!(runner.join().unwrap(), 5);
}

#[test]
fn flush_and_wait_launched_return_once_the_commands_are_launched() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let q = StdArc::new(
        XQueue::builder(hw.clone())
            .config(LaunchConfig::new(2, 1).unwrap())
            .build()
            .unwrap(),
    );
    q.suspend(SuspendFlags::default()).unwrap();
    submit_n_worker(&q, 3);
    assert!(q.has_pending());
    let flusher = {
        let q = q.clone();
        std::thread::spawn(move || q.flush())
    };
    q.resume(ResumeFlags::default()).unwrap();
    // Launching the third needs room in the window: complete as the flusher waits.
    while !flusher.is_finished() {
        hw.complete(1);
        std::thread::yield_now();
    }
    flusher.join().unwrap().unwrap();
    assert_eq!(hw.script().launched, vec![0, 1, 2]);
    assert_eq!(q.wait_launched(CommandSeq(1)), Ok(()));
    assert_eq!(
        q.wait_launched(CommandSeq(3)),
        Err(XQueueError::UnknownCommand(CommandSeq(3)))
    );
    hw.set_auto_complete(true);
}

#[test]
fn synchronize_and_query_with_the_hardware() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let q = external(&hw, 4, 2);
    submit_n(&q, 0, 3);
    let IdleQuery::Ask(asking) = q.idle_query() else {
        panic!("launched, not known complete: ask the hardware")
    };
    q.answered(asking, true);
    assert_eq!(q.status().completed, 3);
    assert_eq!(q.status().state, QueueState::Idle);
    submit_n(&q, 3, 6);
    // Two are still buffered: not done, whatever the hardware says.
    assert_eq!(q.idle_query(), IdleQuery::Known(false));
    assert_eq!(
        q.begin_synchronize().map(|_| ()),
        Err(XQueueError::Hw(HwError::WouldBlock))
    );
    hw.complete_all();
    q.poll();
    hw.complete_all();
    let s = q.begin_synchronize().unwrap();
    assert_eq!(q.synchronized(s, true), Ok(()));
    assert_eq!(q.status().completed, 9);
}

#[test]
fn a_query_once_everything_is_known_done_does_not_ask_the_hardware() {
    // The hardware may still be running a sync point the queue placed after the application's
    // commands (a tail covered late): that is not the application's work.
    let hw = ScriptedHwQueue::new(Level::L1);
    let q = external(&hw, 4, 2);
    submit_n(&q, 0, 3);
    let s = q.begin_synchronize().unwrap();
    assert_eq!(q.synchronized(s, true), Ok(()));
    assert_eq!(q.status().completed, 3);
    assert_eq!(
        q.idle_query(),
        IdleQuery::Known(true),
        "the hardware is not asked when everything is known done"
    );
    submit_n(&q, 3, 1);
    let IdleQuery::Ask(asking) = q.idle_query() else {
        panic!("new work: ask again")
    };
    q.answered(asking, false);
    assert_eq!(q.status().completed, 3);
}

#[test]
fn a_sync_point_the_hardware_cannot_take_now_is_placed_later_without_an_error() {
    let hw = ScriptedHwQueue::new(Level::L1);
    hw.set_auto_complete(true);
    let q = external(&hw, 8, 2);
    hw.with(|s| s.refuse_sync_points = true);
    submit_n(&q, 0, 4);
    let refused = hw.script().busy_refusals;
    assert!(refused > 0, "the queue asked for a sync point");
    assert_eq!(hw.script().sync_points, 0);
    hw.with(|s| s.refuse_sync_points = false);
    submit_n(&q, 4, 2);
    assert!(hw.script().sync_points > 0, "asked again and placed later");
    q.poll();
    let s = q.begin_synchronize().unwrap();
    assert_eq!(q.synchronized(s, true), Ok(()), "no error was recorded");
    assert_eq!(q.status().completed, 6);
}

#[test]
fn a_closed_queue_refuses_new_work_and_drains_the_rest() {
    let hw = ScriptedHwQueue::new(Level::L1);
    hw.set_auto_complete(true);
    let q = XQueue::builder(hw.clone()).build().unwrap();
    q.suspend(SuspendFlags::default()).unwrap();
    submit_n_worker(&q, 3);
    q.close();
    assert_eq!(q.submit(TestCommand(9)), Err(XQueueError::ShuttingDown));
    q.wait_all().unwrap();
    assert_eq!(hw.script().launched, vec![0, 1, 2]);
}

#[test]
fn a_dependency_holds_a_command_in_its_buffer_without_blocking_the_caller() {
    let (ha, hb) = (
        ScriptedHwQueue::new(Level::L1),
        ScriptedHwQueue::new(Level::L1),
    );
    let a = external(&ha, 1, 1);
    let b = external(&hb, 4, 2);
    a.submit(TestCommand(1)).unwrap();
    let x = a.submit(TestCommand(2)).unwrap(); // buffered: A's window is full
    let dep = a.dependency_on(x).expect("not launched yet");
    assert!(!dep.is_satisfied());
    // B's command must follow A's #2 to the hardware: it waits in B's buffer.
    b.submit_after(vec![dep.clone()], Probe::new(99, Some(10)))
        .unwrap();
    b.submit(TestCommand(11)).unwrap();
    assert!(hb.script().launched.is_empty());
    ha.complete_all();
    a.poll();
    assert_eq!(ha.script().launched, vec![1, 2]);
    assert!(dep.is_satisfied());
    b.poll();
    assert_eq!(hb.script().launched, vec![10, 11]);
    assert!(a.dependency_on(x).is_none());
    assert!(a.dependency_on_all().is_none());
}

#[test]
fn a_suspended_queue_launches_what_another_queue_waits_for_and_no_more() {
    let (ha, hb) = (
        ScriptedHwQueue::new(Level::L1),
        ScriptedHwQueue::new(Level::L1),
    );
    let a = external(&ha, 8, 4);
    let b = external(&hb, 8, 4);
    a.suspend(SuspendFlags::default()).unwrap();
    let x = a.submit(TestCommand(1)).unwrap();
    let dep = a.dependency_on(x).unwrap();
    a.submit(TestCommand(2)).unwrap();
    b.submit_after(vec![dep], Probe::new(99, Some(10))).unwrap();
    a.poll();
    // Priority inheritance at launch: #1 goes out despite the suspension; #2 does not.
    assert_eq!(ha.script().launched, vec![1]);
    assert!(a.status().suspended);
    assert_eq!(
        a.released_while_suspended(),
        1,
        "one command let through the suspension"
    );
    b.poll();
    assert_eq!(hb.script().launched, vec![10]);
    // Resumed, #2 goes out as the queue's own: the count keeps the one let through.
    a.resume(ResumeFlags::default()).unwrap();
    a.poll();
    assert_eq!(ha.script().launched, vec![1, 2]);
    assert_eq!(a.released_while_suspended(), 1);
}

#[test]
fn worker_driven_queues_resolve_dependencies_on_a_suspended_queue() {
    let (ha, hb) = (
        ScriptedHwQueue::new(Level::L1),
        ScriptedHwQueue::new(Level::L1),
    );
    ha.set_auto_complete(true);
    hb.set_auto_complete(true);
    let a = XQueue::builder(ha.clone()).build().unwrap();
    let b = XQueue::builder(hb.clone()).build().unwrap();
    a.suspend(SuspendFlags::default()).unwrap();
    let x = a.submit(TestCommand(1)).unwrap();
    a.submit(TestCommand(2)).unwrap();
    let dep = a.dependency_on(x).unwrap();
    b.submit_after(vec![dep], Probe::new(99, Some(10))).unwrap();
    // B's wait returns although A stays suspended: A launched the command B needed.
    b.wait_all().unwrap();
    assert_eq!(hb.script().launched, vec![10]);
    assert_eq!(ha.script().launched, vec![1]);
    a.resume(ResumeFlags::default()).unwrap();
    a.wait_all().unwrap();
    assert_eq!(ha.script().launched, vec![1, 2]);
}

#[test]
fn a_command_that_cannot_be_copied_launches_in_place_after_the_buffer() {
    let hw = ScriptedHwQueue::new(Level::L1);
    hw.set_auto_complete(true);
    let q = StdArc::new(
        XQueue::builder(hw.clone())
            .config(LaunchConfig::new(2, 1).unwrap())
            .build()
            .unwrap(),
    );
    q.suspend(SuspendFlags::default()).unwrap();
    submit_n_worker(&q, 3);
    let t = {
        let q = q.clone();
        std::thread::spawn(move || q.submit_after(Vec::new(), Probe::new(50, None)))
    };
    q.resume(ResumeFlags::default()).unwrap();
    assert_eq!(t.join().unwrap().unwrap().seq, CommandSeq(3));
    q.wait_all().unwrap();
    assert_eq!(hw.script().launched, vec![0, 1, 2, 50]);
    assert_eq!(q.status().submitted, 4);
}

#[test]
fn a_synchronous_operation_adds_no_sync_point_and_completes_the_queue() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let rec = StdArc::new(Recorder::default());
    let q = XQueue::builder(hw.clone())
        .drive(Drive::External)
        .config(LaunchConfig::new(2, 1).unwrap())
        .sink(rec.clone())
        .build()
        .unwrap();
    // Idle before and after: no event, no sync point.
    let turn = q.in_turn(Vec::new()).unwrap();
    turn.hw().launch(TestCommand(7)).unwrap();
    let seq = turn.completed();
    assert_eq!(seq, CommandSeq(0));
    assert_eq!(hw.script().sync_points, 0);
    assert_eq!(q.status().state, QueueState::Idle);
    assert!(rec.states().is_empty());
    // Ready before: the synchronous operation completes everything, the queue turns Idle.
    q.submit(TestCommand(1)).unwrap();
    let points = hw.script().sync_points;
    hw.complete_all();
    let turn = q.in_turn(Vec::new()).unwrap();
    turn.hw().launch(TestCommand(2)).unwrap();
    turn.completed();
    assert_eq!(hw.script().sync_points, points);
    assert_eq!(q.status().completed, 3);
    assert_eq!(rec.states(), vec![QueueState::Ready, QueueState::Idle]);
    assert_eq!(hw.script().launched, vec![7, 1, 2]);
}

#[test]
fn a_turn_given_up_leaves_the_queue_as_it_was() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let q = external(&hw, 2, 1);
    q.submit(TestCommand(1)).unwrap();
    let before = q.status();
    let turn = q.in_turn(Vec::new()).unwrap();
    assert!(turn.held().is_none());
    drop(turn);
    assert_eq!(q.status().submitted, before.submitted);
    // The next turn is the next command.
    let turn = q.in_turn(Vec::new()).unwrap();
    turn.hw().launch(TestCommand(2)).unwrap();
    assert_eq!(turn.launched(), CommandSeq(1));
    assert_eq!(hw.script().launched, vec![1, 2]);
    // What cannot be copied is not buffered: with nothing before it, it goes out in place.
    q.suspend(SuspendFlags::default()).unwrap();
    let s = q.submit_after(Vec::new(), Probe::new(3, None)).unwrap();
    assert_eq!((s.seq, s.path), (CommandSeq(2), crate::SubmitPath::InPlace));
    let s = q.submit_after(Vec::new(), Probe::new(99, Some(4))).unwrap();
    assert_eq!(
        (s.seq, s.path),
        (CommandSeq(3), crate::SubmitPath::Buffered)
    );
    assert_eq!(hw.script().launched, vec![1, 2, 3]);
}

#[test]
fn muted_queues_count_transitions_and_reannounce_when_unmuted() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let rec = StdArc::new(Recorder::default());
    let q = XQueue::builder(hw.clone())
        .drive(Drive::External)
        .sink(rec.clone())
        .build()
        .unwrap();
    q.set_reporting(false);
    q.submit(TestCommand(0)).unwrap();
    // Its first Ready is told all the same: the queue has run work.
    assert_eq!(rec.states(), vec![QueueState::Ready]);
    hw.complete_all();
    q.poll();
    q.submit(TestCommand(1)).unwrap();
    assert_eq!(rec.states().len(), 1, "a muted queue reported");
    assert_eq!(q.status().transitions, 3);
    q.set_reporting(true);
    let events = rec.0.lock().unwrap().clone();
    assert_eq!(events.len(), 2);
    assert_eq!(
        (events[1].state, events[1].transition),
        (QueueState::Ready, 3)
    );
}

#[test]
fn an_unwatched_worker_leaves_idle_detection_to_the_application() {
    let hw = ScriptedHwQueue::new(Level::L1);
    hw.set_auto_complete(true);
    let rec = StdArc::new(Recorder::default());
    let q = XQueue::builder(hw.clone())
        .config(LaunchConfig::new(16, 8).unwrap())
        .sink(rec.clone())
        .build()
        .unwrap();
    q.set_idle_watch(false);
    q.submit(TestCommand(0)).unwrap();
    // Nothing makes the queue look at the finished command: it stays Ready…
    assert_eq!(q.status().state, QueueState::Ready);
    // …until someone watches (the worker then notices) or the application synchronizes.
    q.set_idle_watch(true);
    // Events are emitted after the state lock is released: wait for the report itself.
    let start = std::time::Instant::now();
    while rec.states().len() < 2 {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "no Idle report"
        );
        std::thread::yield_now();
    }
    assert_eq!(q.status().state, QueueState::Idle);
    assert_eq!(rec.states(), vec![QueueState::Ready, QueueState::Idle]);
}

#[test]
fn a_queue_suspended_at_level_two_reopens_its_gate_while_another_waits_for_its_commands() {
    let hw = ScriptedHwQueue::new(Level::L2);
    let a = XQueue::builder(hw.clone())
        .level(Level::L2)
        .build()
        .unwrap();
    submit_n_worker(&a, 3);
    hw.wait_launched(3);
    a.suspend(SuspendFlags::default()).unwrap();
    // Launched but not complete: at Level 2 it may sit behind the closed gate, so a
    // dependency on it still exists (already satisfied at launch level).
    let dep = a.dependency_on(CommandSeq(1)).expect("not complete yet");
    assert!(dep.is_satisfied() && a.is_gated());
    let calls = |hw: &ScriptedHwQueue| {
        hw.script()
            .level_calls
            .iter()
            .map(|(c, _)| *c)
            .collect::<Vec<_>>()
    };
    let until = |want: &[&str]| {
        let start = std::time::Instant::now();
        while calls(&hw) != want {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(10),
                "{:?}",
                calls(&hw)
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    };
    until(&["deactivate"]);
    // Another queue submits a command after it: the gate opens for it.
    let b_hw = ScriptedHwQueue::new(Level::L1);
    b_hw.set_auto_complete(true);
    let b = XQueue::builder(b_hw.clone()).build().unwrap();
    b.submit_after(vec![dep], Probe::new(99, Some(9))).unwrap();
    until(&["deactivate", "reactivate"]);
    // Once the commands complete, the gate closes again: the queue is still suspended.
    hw.complete_all();
    until(&["deactivate", "reactivate", "deactivate"]);
    a.resume(ResumeFlags::default()).unwrap();
    until(&["deactivate", "reactivate", "deactivate", "reactivate"]);
    assert!(!a.is_gated());
    // A queue at Level 1 keeps the old answer: launched means satisfied, no dependency.
    let c_hw = ScriptedHwQueue::new(Level::L1);
    let c = XQueue::builder(c_hw.clone()).build().unwrap();
    c.submit(TestCommand(1)).unwrap();
    c_hw.wait_launched(1);
    assert!(c.dependency_on(CommandSeq(0)).is_none());
    c_hw.complete_all();
}

#[test]
fn a_group_count_holds_the_queues_that_hold_commands_back() {
    let count = StdArc::new(crate::HeldBackCount::new());
    let hw = ScriptedHwQueue::new(Level::L2);
    let make = || {
        XQueue::builder(hw.clone())
            .drive(Drive::External)
            .level(Level::L2)
            .config(LaunchConfig::new(4, 2).unwrap())
            .held_back_count(count.clone())
            .build()
            .unwrap()
    };
    let q = make();
    // Launched directly: nothing held back.
    submit_n(&q, 0, 2);
    assert!(count.is_zero());
    // Suspended at level 2: its launched commands wait behind the gate.
    q.suspend(SuspendFlags::default()).unwrap();
    assert!(!count.is_zero());
    // Buffered as well: still counted once (a second queue makes it two).
    submit_n(&q, 2, 3);
    let other = make();
    other.suspend(SuspendFlags::default()).unwrap();
    submit_n(&other, 10, 1);
    assert_eq!(format!("{count:?}"), "HeldBackCount { queues: 2 }");
    drop(other);
    // Resumed and drained: counted out.
    q.resume(ResumeFlags::default()).unwrap();
    for _ in 0..4 {
        hw.complete_all();
        q.poll();
    }
    assert_eq!(q.status().pending, 0);
    assert!(count.is_zero(), "{count:?}");
    // A queue dropped while holding commands back leaves the count too.
    let dropped = make();
    dropped.suspend(SuspendFlags::default()).unwrap();
    submit_n(&dropped, 20, 1);
    assert!(!count.is_zero());
    drop(dropped);
    assert!(count.is_zero(), "{count:?}");
}

/// An externally driven queue on `clock`, window `t`, a sync point every `b`.
fn timed(
    hw: &ScriptedHwQueue,
    clock: &StdArc<ManualClock>,
    t: u32,
    b: u32,
) -> XQueue<ScriptedHwQueue> {
    timed_builder(hw, clock, t, b).build().unwrap()
}

/// [`timed`]'s queue, to be built with more settings.
fn timed_builder(
    hw: &ScriptedHwQueue,
    clock: &StdArc<ManualClock>,
    t: u32,
    b: u32,
) -> XQueueBuilder<ScriptedHwQueue> {
    XQueue::builder(hw.clone())
        .drive(Drive::External)
        .config(LaunchConfig::new(t, b).unwrap())
        .clock(StdArc::clone(clock) as StdArc<dyn crate::Clock>)
}

/// A scripted queue of window `t` with a sync point every `b` launches, its commands in flight
/// bounded to 500 µs of device time, on a manual clock.
fn budgeted_500(
    t: u32,
    b: u32,
) -> (
    ScriptedHwQueue,
    StdArc<ManualClock>,
    XQueueBuilder<ScriptedHwQueue>,
) {
    let hw = ScriptedHwQueue::new(Level::L1);
    let clock = StdArc::new(ManualClock::new(Nanos(1_000)));
    let builder = timed_builder(&hw, &clock, t, b).inflight_budget(Nanos::from_micros(500));
    (hw, clock, builder)
}

/// Completes everything until `n` commands are done, then checks they launched in order with
/// no violation.
fn finish_in_order(hw: &ScriptedHwQueue, q: &XQueue<ScriptedHwQueue>, n: u64) {
    while q.status().completed < n {
        hw.complete(1);
        q.poll();
    }
    let s = hw.script();
    assert_eq!(s.launched, (0..n).collect::<Vec<_>>());
    assert!(s.violations.is_empty(), "{:?}", s.violations);
}

/// Lets the device run `n` commands of `each`, noticing each batch of `b` as it completes.
fn run_commands(
    hw: &ScriptedHwQueue,
    q: &XQueue<ScriptedHwQueue>,
    clock: &ManualClock,
    n: usize,
    b: usize,
    each: Nanos,
) {
    for _ in 0..n / b {
        clock.advance(Nanos(each.0 * b as u64));
        hw.complete(b);
        q.poll();
    }
}

#[test]
fn a_busy_queue_measures_how_long_its_commands_take() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let clock = StdArc::new(ManualClock::new(Nanos(1_000)));
    let q = timed(&hw, &clock, 4, 2);
    submit_n(&q, 0, 40);
    assert_eq!(q.command_time(), None, "nothing completed yet");
    run_commands(&hw, &q, &clock, 20, 2, Nanos::from_micros(300));
    assert_eq!(q.command_time(), Some(Nanos::from_micros(300)));
    // Longer commands move the average towards them.
    run_commands(&hw, &q, &clock, 16, 2, Nanos::from_micros(900));
    let t = q.command_time().unwrap();
    assert!(
        t > Nanos::from_micros(600) && t < Nanos::from_micros(900),
        "{t}"
    );
}

#[test]
fn a_time_budget_bounds_the_work_in_flight_once_commands_are_measured() {
    let (hw, clock, builder) = budgeted_500(16, 2);
    let q = builder.build().unwrap();
    submit_n(&q, 0, 200);
    // Unmeasured, the count alone bounds it.
    assert_eq!(q.status().inflight, 16);
    run_commands(&hw, &q, &clock, 40, 2, Nanos::from_micros(110));
    assert_eq!(q.command_time(), Some(Nanos::from_micros(110)));
    // 110 µs commands: at most five in flight take under 500 µs (four take 440).
    let drain = |q: &XQueue<ScriptedHwQueue>| {
        while q.status().inflight > 0 {
            clock.advance(Nanos::from_micros(110));
            hw.complete(1);
            q.poll();
            if q.status().inflight >= 5 {
                break;
            }
        }
    };
    drain(&q);
    assert!(q.status().inflight <= 5, "{:?}", q.status());
    for _ in 0..10 {
        clock.advance(Nanos::from_micros(110));
        hw.complete(1);
        q.poll();
        assert!(q.status().inflight <= 5, "{:?}", q.status());
    }
    // Commands longer than the budget: one at a time, never none.
    let hw = ScriptedHwQueue::new(Level::L1);
    let q = XQueue::builder(hw.clone())
        .drive(Drive::External)
        .config(LaunchConfig::new(16, 8).unwrap())
        .clock(StdArc::clone(&clock) as StdArc<dyn crate::Clock>)
        .inflight_budget(Nanos::from_micros(500))
        .build()
        .unwrap();
    submit_n(&q, 0, 160);
    run_commands(&hw, &q, &clock, 32, 8, Nanos::from_micros(1_500));
    assert!(q.command_time().unwrap() > Nanos::from_micros(500));
    for _ in 0..20 {
        assert_eq!(q.status().inflight, 1, "{:?}", q.status());
        clock.advance(Nanos::from_micros(1_500));
        hw.complete(1);
        q.poll();
    }
    // The stream turns to short commands: measured one at a time, its window opens again.
    for _ in 0..80 {
        clock.advance(Nanos::from_micros(110));
        hw.complete(1);
        q.poll();
    }
    assert!(
        q.command_time().unwrap() < Nanos::from_micros(500),
        "{:?}",
        q.command_time()
    );
    assert!(q.status().inflight > 1, "{:?}", q.status());
    finish_in_order(&hw, &q, 160);
}

#[test]
fn a_queue_its_scheduler_will_not_hold_keeps_its_count_window_without_the_budget() {
    // 1.5 ms commands under a 500 µs budget: one in flight while the queue may be held.
    let (hw, clock, builder) = budgeted_500(16, 8);
    let q = builder.build().unwrap();
    assert!(q.holdable());
    submit_n(&q, 0, 160);
    run_commands(&hw, &q, &clock, 32, 8, Nanos::from_micros(1_500));
    assert_eq!(q.status().inflight, 1, "{:?}", q.status());
    // Kept suspendable but not held (a yielding queue beside launch-bound work): the count
    // window alone, its sync points every batch, at once.
    let points = hw.script().sync_points;
    q.set_holdable(false);
    assert!(!q.holdable());
    assert_eq!(q.status().inflight, 16, "{:?}", q.status());
    assert_eq!(hw.script().sync_points - points, 2);
    // Holdable again: no new launch until the work in flight is back under the budget.
    q.set_holdable(true);
    let launched = hw.script().launched.len();
    for i in 0..16 {
        assert_eq!(
            hw.script().launched.len(),
            launched,
            "after {i}: {:?}",
            q.status()
        );
        clock.advance(Nanos::from_micros(1_500));
        hw.complete(1);
        q.poll();
    }
    assert_eq!(q.status().inflight, 1, "{:?}", q.status());
    finish_in_order(&hw, &q, 160);
}

#[test]
fn suspensions_record_what_they_found_in_flight() {
    // Unmeasured: sixteen commands in flight, their time unknown.
    let (hw, clock, builder) = budgeted_500(16, 8);
    let q = builder.build().unwrap();
    submit_n(&q, 0, 160);
    q.suspend(SuspendFlags::default()).unwrap();
    let first = q.inflight_at_suspend();
    assert_eq!(
        (
            first.suspensions,
            first.unmeasured,
            first.budgeted,
            first.max_commands
        ),
        (1, 1, 0, 16)
    );
    q.resume(ResumeFlags::default()).unwrap();
    // Measured at 1.5 ms under the 500 µs budget: one command in flight, 1.5 ms of work.
    run_commands(&hw, &q, &clock, 32, 8, Nanos::from_micros(1_500));
    q.suspend(SuspendFlags::default()).unwrap();
    let a = q.inflight_at_suspend();
    assert_eq!(
        (a.suspensions, a.unmeasured, a.budgeted),
        (2, 1, 1),
        "{a:?}"
    );
    assert_eq!(a.commands, 17);
    assert_eq!(a.max_device_ns, Nanos::from_micros(1_500).0, "{a:?}");
    q.resume(ResumeFlags::default()).unwrap();
    // Not holdable: the count window again, measured but not budgeted.
    q.set_holdable(false);
    q.suspend(SuspendFlags::default()).unwrap();
    let b = q.inflight_at_suspend();
    assert_eq!(
        (b.suspensions, b.budgeted, b.max_commands),
        (3, 1, 16),
        "{b:?}"
    );
    // Sixteen commands at the measure then.
    let pace = q.command_time().unwrap().0;
    assert_eq!(b.max_device_ns, 16 * pace, "{b:?}");
    assert!(pace >= Nanos::from_micros(1_500).0, "{pace}");
    q.resume(ResumeFlags::default()).unwrap();
    finish_in_order(&hw, &q, 160);
}

/// A queue of `each`-long commands bound to 500 µs of device time in flight (five commands of
/// 110 µs), window 16 with a sync point every 8: measured, then run for 200 commands with the
/// device taking one command each `each` and the host looking after each completion. Returns
/// how many times the device ran out of launched work while commands waited, and the sync
/// points the steady state cost.
fn budget_drains(early_refill: bool, each: Nanos) -> (usize, usize) {
    let (hw, clock, builder) = budgeted_500(16, 8);
    let q = builder.early_refill(early_refill).build().unwrap();
    submit_n(&q, 0, 400);
    run_commands(&hw, &q, &clock, 48, 8, each);
    assert!(q.command_time().is_some(), "measured");
    let admitted = Nanos::from_micros(500).0.div_ceil(each.0).max(1);
    let (mut drains, points) = (0, hw.script().sync_points);
    for _ in 0..200 {
        clock.advance(each);
        hw.complete(1);
        let s = hw.script();
        if s.launched.len() == s.done && q.status().pending > 0 {
            drains += 1;
        }
        q.poll();
        assert!(q.status().inflight <= admitted, "{:?}", q.status());
    }
    let s = hw.script();
    assert!(s.violations.is_empty(), "{:?}", s.violations);
    assert!(s.launched.iter().copied().eq(0..s.launched.len() as u64));
    (drains, s.sync_points - points)
}

#[test]
fn early_refill_keeps_a_budgeted_window_from_draining_the_device() {
    // Without it: one sync point behind the five in flight, learnt only when the last is
    // done, so the device waits for the host once every five commands.
    let (drains, _) = budget_drains(false, Nanos::from_micros(110));
    assert!(
        drains >= 35,
        "the budgeted window drained {drains} times in 200 commands"
    );
    // A sync point every two commands: the host learns of the first two while three still run.
    let (drains, points) = budget_drains(true, Nanos::from_micros(110));
    assert_eq!(
        drains, 0,
        "with early refill the device ran dry {drains} times"
    );
    // Its cost: a sync point every two launches, and one behind the tail when the budget
    // closes the window between them (0.6 a command here, against 0.2).
    assert!(
        (90..=130).contains(&points),
        "about one sync point every two commands: {points} for 200"
    );
}

#[test]
fn early_refill_leaves_a_window_of_one_long_command_as_it_was() {
    // A GEMM longer than the budget is a window of its own: early refill has nothing to split,
    // and the queue places its sync points as it does without it (more of them would only let
    // the next GEMM start sooner after each, on the SMs when a request arrives).
    let long = Nanos::from_micros(1_700);
    assert_eq!(budget_drains(true, long), budget_drains(false, long));
}

#[test]
fn a_queue_bound_by_its_own_launching_is_not_measured() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let clock = StdArc::new(ManualClock::new(Nanos(1_000)));
    let q = timed(&hw, &clock, 4, 2);
    // Two commands at a time, each pair done long before the next arrives: nothing is ever
    // buffered behind the window, so the gaps are the launcher's, not the device's.
    for i in 0..20 {
        submit_n(&q, 2 * i, 2);
        clock.advance(Nanos::from_millis(5));
        hw.complete(2);
        q.poll();
    }
    assert_eq!(q.command_time(), None);
}

#[test]
fn time_spent_suspended_is_not_a_command_time() {
    let hw = ScriptedHwQueue::new(Level::L2);
    let clock = StdArc::new(ManualClock::new(Nanos(1_000)));
    let q = timed(&hw, &clock, 4, 2);
    q.set_level(Level::L2).unwrap();
    submit_n(&q, 0, 40);
    run_commands(&hw, &q, &clock, 8, 2, Nanos::from_micros(100));
    assert_eq!(q.command_time(), Some(Nanos::from_micros(100)));
    // Deactivated for 50 ms with commands in flight, then resumed.
    q.suspend(SuspendFlags::default()).unwrap();
    clock.advance(Nanos::from_millis(50));
    q.resume(ResumeFlags::default()).unwrap();
    run_commands(&hw, &q, &clock, 8, 2, Nanos::from_micros(100));
    assert_eq!(q.command_time(), Some(Nanos::from_micros(100)));
}

#[test]
fn a_queue_let_go_is_measured_again_only_while_measuring() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let clock = StdArc::new(ManualClock::new(Nanos(1_000)));
    let q = timed(&hw, &clock, 4, 2);
    submit_n(&q, 0, 20);
    run_commands(&hw, &q, &clock, 20, 2, Nanos::from_micros(100));
    assert_eq!(q.command_time(), Some(Nanos::from_micros(100)));
    // Let go for its short commands, it launches 2 ms ones past any window: nothing
    // measures them, and the old measure stands.
    q.set_unbounded(true);
    submit_n(&q, 20, 20);
    assert_eq!(hw.script().launched.len(), 40);
    clock.advance(Nanos::from_millis(40));
    hw.complete(20);
    q.poll();
    assert_eq!(q.command_time(), Some(Nanos::from_micros(100)));
    // Measuring, it keeps its window though its scheduler still lets it go, and the long
    // commands move the measure.
    q.set_measuring(true);
    assert!(q.may_run_unbounded());
    submit_n(&q, 40, 20);
    assert!(
        hw.script().launched.len() <= 44,
        "the window applies while measuring"
    );
    run_commands(&hw, &q, &clock, 20, 2, Nanos::from_millis(2));
    let t = q.command_time().unwrap();
    assert!(
        t > Nanos::from_millis(1),
        "measured {t} after 2 ms commands"
    );
    // Done measuring: past the window again.
    q.set_measuring(false);
    let before = hw.script().launched.len();
    submit_n(&q, 60, 20);
    assert_eq!(hw.script().launched.len(), before + 20);
}

#[test]
fn a_queue_no_longer_wanted_remeasured_stops_measuring_at_once() {
    let hw = ScriptedHwQueue::new(Level::L1);
    let clock = StdArc::new(ManualClock::new(Nanos(1_000)));
    let q = timed(&hw, &clock, 4, 2);
    assert!(!q.wants_remeasure(), "off until a scheduler asks");
    q.set_unbounded(true);
    q.set_remeasure(true);
    assert!(q.wants_remeasure());
    q.set_measuring(true);
    submit_n(&q, 0, 20);
    assert!(
        hw.script().launched.len() <= 4,
        "the window applies while measuring"
    );
    // Its scheduler no longer needs the measure (nothing outranks it now): the measurement
    // under way ends, and the queue runs past its window from its next launch.
    q.set_remeasure(false);
    assert!(!q.wants_remeasure());
    run_commands(&hw, &q, &clock, 20, 2, Nanos::from_micros(100));
    let before = hw.script().launched.len();
    submit_n(&q, 20, 20);
    assert_eq!(hw.script().launched.len(), before + 20);
}

#[test]
fn commands_marked_as_markers_do_not_count_in_the_command_time() {
    // Each 1 ms command is followed by an event record that takes no device time: two
    // commands per millisecond, and the measure is of the real ones.
    let hw = ScriptedHwQueue::new(Level::L1);
    let clock = StdArc::new(ManualClock::new(Nanos(1_000)));
    let q = timed(&hw, &clock, 4, 2);
    for i in 0..20 {
        q.submit(TestCommand(2 * i)).unwrap();
        let marker = q.submit(TestCommand(2 * i + 1)).unwrap();
        q.mark_marker(marker);
    }
    // Each batch of two commands (one real, one marker) takes 1 ms.
    run_commands(&hw, &q, &clock, 40, 2, Nanos::from_micros(500));
    assert_eq!(q.command_time(), Some(Nanos::from_millis(1)));
}

#[test]
fn a_program_waiting_on_its_own_records_is_measured_by_its_waits() {
    // A loop that keeps three 2 ms commands in flight by waiting on what it recorded three
    // steps back (PyTorch's GEMM flood does): it never fills its window of 16, no sync point
    // of the queue's is reached first, and only its own blocked waits can measure it.
    let hw = ScriptedHwQueue::new(Level::L1);
    let clock = StdArc::new(ManualClock::new(Nanos(1_000)));
    let q = timed(&hw, &clock, 16, 8);
    submit_n(&q, 0, 3);
    for i in 3..20 {
        let asked = crate::Clock::now(&*clock);
        clock.advance(Nanos::from_millis(2));
        hw.complete(1);
        q.saw_complete(CommandSeq(i - 3), asked);
        q.submit(TestCommand(i)).unwrap();
    }
    assert_eq!(q.command_time(), Some(Nanos::from_millis(2)));
    assert_eq!(q.status().inflight, 3);
    // A wait that returns at once found the work done some time ago: its commands complete,
    // but it is no sample (50 ms for one command would be).
    clock.advance(Nanos::from_millis(50));
    hw.complete(1);
    q.saw_complete(CommandSeq(17), crate::Clock::now(&*clock));
    assert_eq!(q.status().inflight, 2);
    assert_eq!(q.command_time(), Some(Nanos::from_millis(2)));
}

#[test]
fn a_queue_counts_how_long_it_had_work_and_how_long_its_program_waited_for_it() {
    // A token loop: 18 ms of launching, then a 2 ms wait for the last commands, then 1 ms
    // before the next token's first launch. The queue has work 20 of every 21 ms; its program
    // waited 2 of them.
    let hw = ScriptedHwQueue::new(Level::L1);
    let clock = StdArc::new(ManualClock::new(Nanos(1_000)));
    let q = timed(&hw, &clock, 16, 8);
    assert_eq!(q.usage(), crate::Usage::default());
    for token in 0..3u64 {
        let first = token * 4;
        q.submit(TestCommand(first)).unwrap();
        clock.advance(Nanos::from_millis(18));
        submit_n(&q, first + 1, 3);
        let asked = crate::Clock::now(&*clock);
        clock.advance(Nanos::from_millis(2));
        hw.complete(4);
        q.saw_complete(CommandSeq(first + 3), asked);
        assert_eq!(q.status().state, QueueState::Idle, "token {token}");
        clock.advance(Nanos::from_millis(1));
    }
    let u = q.usage();
    assert_eq!(
        (u.ready, u.waited, u.waits),
        (Nanos::from_millis(60), Nanos::from_millis(6), 3)
    );
    // While it has work, the time so far counts.
    q.submit(TestCommand(12)).unwrap();
    clock.advance(Nanos::from_millis(5));
    assert_eq!(q.usage().ready, Nanos::from_millis(65));
    // While it is suspended, neither its work nor its program's wait counts: both say what
    // holding it back does, not how its program uses it.
    q.suspend(SuspendFlags::default()).unwrap();
    let asked = crate::Clock::now(&*clock);
    clock.advance(Nanos::from_millis(7));
    q.resume(ResumeFlags::default()).unwrap();
    clock.advance(Nanos::from_millis(1));
    hw.complete(1);
    q.saw_complete(CommandSeq(12), asked);
    let u = q.usage();
    assert_eq!(
        (u.ready, u.waited, u.waits, u.held),
        (
            Nanos::from_millis(66),
            Nanos::from_millis(7),
            4,
            Nanos::from_millis(7)
        )
    );
}
