//! Model-checked interleavings of the XQueue's threads:
//! `RUSTFLAGS="--cfg loom" cargo test -p baton-core --release --lib loom`.

use loom::sync::Arc;

use super::*;
use crate::testing::{ScriptedHwQueue, TestCommand};
use crate::{LaunchConfig, Level};

#[test]
fn loom_submit_races_suspend_resume_and_worker() {
    loom::model(|| {
        let hw = ScriptedHwQueue::new(Level::L1);
        hw.set_auto_complete(true);
        let q = Arc::new(
            XQueue::builder(hw.clone())
                .config(LaunchConfig::new(1, 1).unwrap())
                .build()
                .unwrap(),
        );
        let ctl = {
            let q = q.clone();
            loom::thread::spawn(move || {
                q.suspend(SuspendFlags::default()).unwrap();
                q.resume(ResumeFlags::default()).unwrap();
            })
        };
        q.submit(TestCommand(0)).unwrap();
        q.submit(TestCommand(1)).unwrap();
        ctl.join().unwrap();
        q.wait_all().unwrap();
        assert_eq!(hw.script().launched, vec![0, 1]);
        drop(q);
    });
}

#[test]
fn loom_wait_on_buffered_command_sees_worker_launch() {
    loom::model(|| {
        let hw = ScriptedHwQueue::new(Level::L1);
        hw.set_auto_complete(true);
        let q = XQueue::builder(hw.clone())
            .config(LaunchConfig::new(1, 1).unwrap())
            .build()
            .unwrap();
        q.suspend(SuspendFlags::default()).unwrap();
        let seq = q.submit(TestCommand(5)).unwrap();
        q.resume(ResumeFlags::default()).unwrap();
        q.wait(seq).unwrap();
        assert_eq!(hw.script().launched, vec![5]);
    });
}

#[test]
fn loom_resume_alone_gets_buffered_work_launched() {
    loom::model(|| {
        let hw = ScriptedHwQueue::new(Level::L1);
        hw.set_auto_complete(true);
        let q = XQueue::builder(hw.clone())
            .config(LaunchConfig::new(1, 1).unwrap())
            .build()
            .unwrap();
        q.suspend(SuspendFlags::default()).unwrap();
        q.submit(TestCommand(1)).unwrap();
        q.submit(TestCommand(2)).unwrap();
        let ctl = loom::thread::spawn({
            let hw = hw.clone();
            move || hw.wait_launched(2)
        });
        // Nobody waits on the queue: only resume can get the worker going.
        q.resume(ResumeFlags::default()).unwrap();
        ctl.join().unwrap();
        assert_eq!(hw.script().launched, vec![1, 2]);
    });
}

#[test]
fn loom_flush_returns_after_a_concurrent_resume() {
    loom::model(|| {
        let hw = ScriptedHwQueue::new(Level::L1);
        hw.set_auto_complete(true);
        let q = Arc::new(
            XQueue::builder(hw.clone())
                .config(LaunchConfig::new(1, 1).unwrap())
                .build()
                .unwrap(),
        );
        q.suspend(SuspendFlags::default()).unwrap();
        q.submit(TestCommand(1)).unwrap();
        let ctl = {
            let q = q.clone();
            loom::thread::spawn(move || q.resume(ResumeFlags::default()).unwrap())
        };
        q.flush().unwrap();
        assert_eq!(hw.script().launched, vec![1]);
        ctl.join().unwrap();
    });
}

#[test]
fn loom_a_dependency_on_a_suspended_queue_never_deadlocks() {
    loom::model(|| {
        let (ha, hb) = (
            ScriptedHwQueue::new(Level::L1),
            ScriptedHwQueue::new(Level::L1),
        );
        ha.set_auto_complete(true);
        hb.set_auto_complete(true);
        let a = XQueue::builder(ha.clone())
            .config(LaunchConfig::new(1, 1).unwrap())
            .build()
            .unwrap();
        let b = XQueue::builder(hb.clone())
            .config(LaunchConfig::new(1, 1).unwrap())
            .build()
            .unwrap();
        a.suspend(SuspendFlags::default()).unwrap();
        let x = a.submit(TestCommand(1)).unwrap();
        let dep = a.dependency_on(x).unwrap();
        b.submit_after(vec![dep], crate::testing::Probe::new(9, Some(2)))
            .unwrap();
        hb.wait_launched(1);
        assert_eq!(ha.script().launched, vec![1]);
        drop(b);
        drop(a);
    });
}
