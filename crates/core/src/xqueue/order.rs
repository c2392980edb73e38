//! Dependencies and ordering: what other queues (and the driver) must wait for before a
//! command of this queue, and synchronizations made in the queue's order.

use super::queue::XQueue;
use super::shared::{Pending, State};
use crate::dependency::Dependency;
use crate::sync::{self};
use crate::{CommandSeq, HwQueue, Level, XQueueError};

/// A synchronization under way (see [`XQueue::begin_synchronize`]).
#[derive(Debug)]
#[must_use = "finish it with XQueue::synchronized"]
pub struct Synchronizing {
    /// Commands launched when it began: those it covers.
    end: u64,
    /// When it began, on the queue's clock.
    asked: crate::Nanos,
}

impl<H: HwQueue> XQueue<H> {
    /// A dependency on command `seq` of this queue reaching the hardware, or `None` if it
    /// already has (or was never submitted). At Level 2 a launched command may still sit
    /// behind the queue's closed gate: until it is known complete the dependency is returned
    /// anyway (already satisfied), so that demanding it opens the gate.
    pub fn dependency_on(&self, seq: CommandSeq) -> Option<Dependency> {
        let mut st = sync::lock(&self.shared.state);
        let pending = seq.0 >= st.launched || (st.level == Level::L2 && seq.0 >= st.completed);
        (pending && seq.0 < st.submitted).then(|| self.observed_until(&mut st, seq.0 + 1))
    }

    /// A dependency on the first `target` commands, made under the state lock: from now on
    /// every launch publishes its count (see `State::observed`).
    fn observed_until(&self, st: &mut State<H>, target: u64) -> Dependency {
        if !st.observed {
            st.observed = true;
            self.shared.progress.advance(st.launched);
        }
        Dependency::new(self.shared.progress.clone(), target)
    }

    /// A dependency on every command submitted so far reaching the hardware, or `None` if they
    /// all have.
    pub fn dependency_on_all(&self) -> Option<Dependency> {
        let mut st = sync::lock(&self.shared.state);
        let pending =
            st.launched < st.submitted || (st.level == Level::L2 && st.completed < st.submitted);
        let target = st.submitted;
        pending.then(|| self.observed_until(&mut st, target))
    }

    /// A dependency on the commands launched so far, if some are not known complete: what a
    /// caller about to wait for the whole device demands, so that a queue suspended at Level 2
    /// lets its launched commands through its gate (buffered ones stay buffered).
    pub fn dependency_on_launched(&self) -> Option<Dependency> {
        let mut st = sync::lock(&self.shared.state);
        let target = st.launched;
        (st.completed < target).then(|| self.observed_until(&mut st, target))
    }

    /// Whether the queue is suspended at Level 2: commands it launched may be held on the
    /// device behind its gate. Lock-free, like [`XQueue::has_pending`].
    pub fn is_gated(&self) -> bool {
        self.shared.gated.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether some submitted command has not been launched yet. Lock-free: an interposer asks
    /// this on every launch to learn whether another queue holds work that must go first.
    pub fn has_pending(&self) -> bool {
        self.shared
            .pending
            .load(std::sync::atomic::Ordering::Acquire)
            > 0
    }

    /// Whether a command still buffered (submitted, not yet launched) satisfies `pred`: what
    /// a caller about to change something the buffered commands depend on asks, to launch
    /// them first only when one is affected. Takes the state lock; not for the launch path.
    pub fn any_buffered(&self, pred: impl Fn(&H::Command) -> bool) -> bool {
        let st = sync::lock(&self.shared.state);
        st.buffer.iter().any(|b| pred(&b.cmd))
    }

    /// Blocks until command `seq` has been handed to the hardware (it may still be running).
    /// If the queue is suspended and the command is buffered, that means until it is resumed.
    pub fn wait_launched(&self, seq: CommandSeq) -> Result<(), XQueueError> {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        loop {
            if seq.0 >= st.submitted {
                return Err(XQueueError::UnknownCommand(seq));
            }
            if seq.0 < st.launched {
                break;
            }
            st = self.wait_for_progress(st, &mut ev)?;
        }
        sh.unlock_and_emit(st, ev);
        Ok(())
    }

    /// Blocks until every command submitted so far has been handed to the hardware.
    pub fn flush(&self) -> Result<(), XQueueError> {
        let last = {
            let st = sync::lock(&self.shared.state);
            if st.launched == st.submitted {
                return Ok(());
            }
            st.submitted - 1
        };
        self.wait_launched(CommandSeq(last))
    }

    /// The start of a synchronization with the hardware that the caller makes itself (the
    /// driver's own stream synchronization), once everything submitted before has been
    /// launched; finish it with [`XQueue::synchronized`]. Blocks while a suspended queue holds
    /// earlier commands.
    pub fn begin_synchronize(&self) -> Result<Synchronizing, XQueueError> {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        while !st.buffer.is_empty() {
            st = self.wait_for_progress(st, &mut ev)?;
        }
        let end = st.launched;
        sh.unlock_and_emit(st, ev);
        Ok(Synchronizing {
            end,
            asked: sh.clock.now(),
        })
    }

    /// The synchronization `s` returned, successfully (`ok`) or not. If it succeeded, every
    /// command launched before it counts as complete, and if it blocked, its end is a sample of
    /// the command time (see [`XQueue::saw_complete`]). Returns an error from work launched on
    /// the application's behalf since the last wait, which the synchronization reports.
    pub fn synchronized(&self, s: Synchronizing, ok: bool) -> Result<(), XQueueError> {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        if ok {
            sh.saw_complete(&mut st, s.end, s.asked, &mut ev);
        }
        let deferred = st.deferred_error.take();
        sh.unlock_and_emit(st, ev);
        match deferred {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// The application waited on the driver for command `seq` (e.g. for an event recorded
    /// there) from `asked` (on the queue's clock) until now, and it is done: every command up
    /// to it counts as complete. A wait that blocked saw the moment the device got there, as
    /// the worker's wait on a sync point does, and is a sample of the queue's command time; a
    /// program that keeps a few commands in flight by waiting on its own events (PyTorch's
    /// loops) never fills the queue's window, so its commands are measured only this way.
    pub fn saw_complete(&self, seq: CommandSeq, asked: crate::Nanos) {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        let end = (seq.0 + 1).min(st.launched);
        sh.saw_complete(&mut st, end, asked, &mut ev);
        sh.unlock_and_emit(st, ev);
    }

    /// The application waited from `asked` until `done` (on the queue's clock) for the
    /// queue's work, and learnt of its completion some other way than through the queue (a
    /// simulated host told of a completion by the device's model): counted in its
    /// [`usage`](XQueue::usage) only, as [`XQueue::saw_complete`] counts a wait.
    pub fn waited_for(&self, asked: crate::Nanos, done: crate::Nanos) {
        sync::lock(&self.shared.state).usage.waited(asked, done);
    }
}
