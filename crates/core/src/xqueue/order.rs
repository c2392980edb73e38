//! Dependencies and ordering: what other queues (and the driver) must wait for before a
//! command of this queue, and running work in the queue's order.

use super::queue::XQueue;
use super::shared::{Pending, State};
use crate::dependency::Dependency;
use crate::sync::{self};
use crate::{CommandSeq, HwError, HwQueue, Level, XQueueError};

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

    /// Runs `f` on the hardware queue once everything submitted before has been launched, with
    /// nothing else launched in between: an operation the queue does not buffer keeps its place
    /// in the command order. Blocks while a suspended queue holds earlier commands.
    pub fn run_in_order<R>(&self, f: impl FnOnce(&H) -> R) -> Result<R, XQueueError> {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        while !st.buffer.is_empty() {
            st = self.wait_for_progress(st, &mut ev)?;
        }
        let r = f(&sh.hw);
        sh.unlock_and_emit(st, ev);
        Ok(r)
    }

    /// Synchronizes with the hardware through `f` (e.g. the driver's own stream
    /// synchronization) once everything submitted before has been launched; if `f` succeeds,
    /// every command launched before it counts as complete, and if it blocked, its end is a
    /// sample of the command time (see [`XQueue::saw_complete`]). Returns `f`'s value, or an
    /// error from work launched on the application's behalf since the last wait.
    pub fn synchronize_with<R>(
        &self,
        f: impl FnOnce(&H) -> Result<R, HwError>,
    ) -> Result<R, XQueueError> {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        while !st.buffer.is_empty() {
            st = self.wait_for_progress(st, &mut ev)?;
        }
        let end = st.launched;
        drop(st);
        ev.emit(&*sh.sink);
        let mut ev = Pending::new();
        let asked = sh.clock.now();
        let r = f(&sh.hw);
        let mut st = sync::lock(&sh.state);
        if r.is_ok() {
            sh.saw_complete(&mut st, end, asked, &mut ev);
        }
        let deferred = st.deferred_error.take();
        sh.unlock_and_emit(st, ev);
        let value = r?;
        match deferred {
            Some(e) => Err(e.into()),
            None => Ok(value),
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
}
