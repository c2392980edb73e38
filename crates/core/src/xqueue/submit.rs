//! Submission: the fast path that launches on the caller's thread, the buffer that holds
//! commands back, and the backpressure that bounds it.

use super::options::Drive;
use super::queue::XQueue;
use super::shared::{Buffered, Pending, State};
use crate::dependency::Dependency;
use crate::sync::{self, MutexGuard};
use crate::{CommandSeq, HwError, HwQueue, QueueState, XQueueError};

impl<H: HwQueue> XQueue<H> {
    /// Submits `cmd`, launching it at once when the buffer is empty, the queue runs and the
    /// in-flight window has room; buffering it otherwise.
    ///
    /// A launch the hardware refuses on this path is returned as the error and the command is
    /// not part of the queue (as when the application calls the driver directly).
    pub fn submit(&self, cmd: H::Command) -> Result<CommandSeq, XQueueError> {
        let slot = std::cell::Cell::new(Some(cmd));
        self.submit_with(
            |hw| slot.take().map_or(Ok(()), |c| hw.launch(c)),
            || slot.take(),
        )
    }

    /// Submits a command that is only built if it has to wait: on the fast path `direct`
    /// launches it straight from the caller's arguments (an interposer passes the application's
    /// own pointers, copying nothing); otherwise `defer` builds an owned command for the buffer.
    ///
    /// If `defer` cannot make a faithful copy (it returns `None`), the caller waits until every
    /// command before it has been launched, and `direct` launches it then, in its place: such a
    /// command is never reordered, only delayed, and counts like any other.
    pub fn submit_with<D, F>(&self, direct: D, defer: F) -> Result<CommandSeq, XQueueError>
    where
        D: FnOnce(&H) -> Result<(), HwError>,
        F: FnOnce() -> Option<H::Command>,
    {
        self.submit_after(Vec::new(), direct, defer)
    }

    /// [`XQueue::submit_with`] for a command that must reach the hardware only after
    /// `deps` (commands of other queues) have. While one is unsatisfied the command waits in the
    /// buffer — the caller does not block — and the queues depended on are asked to launch what
    /// is needed even if they are suspended.
    pub fn submit_after<D, F>(
        &self,
        mut deps: Vec<Dependency>,
        direct: D,
        defer: F,
    ) -> Result<CommandSeq, XQueueError>
    where
        D: FnOnce(&H) -> Result<(), HwError>,
        F: FnOnce() -> Option<H::Command>,
    {
        // A dependency already launched may still be waiting on its queue's device: its queue
        // learns that it must complete (Level 2 keeps such commands behind an open gate).
        if !deps.is_empty() {
            for d in deps.iter().filter(|d| d.is_satisfied()) {
                d.demand();
            }
            deps.retain(|d| !d.is_satisfied());
        }
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        if st.shutdown {
            return Err(XQueueError::ShuttingDown);
        }
        let seq = CommandSeq(st.submitted);
        let direct_ok = st.buffer.is_empty() && !st.suspended && deps.is_empty();
        if direct_ok && !st.window_open() {
            sh.reap(&mut st, &mut ev);
        }
        let was_idle = st.completed == st.submitted;
        if direct_ok && st.window_open() {
            direct(&sh.hw)?;
            st.submitted += 1;
            sh.after_launch(&mut st);
            if st.observed {
                sh.progress.advance(st.launched);
            }
            if was_idle {
                sh.transition(&mut st, QueueState::Ready, &mut ev);
                if st.watch_idle {
                    sh.wake_worker(&st);
                }
            }
            sh.unlock_and_emit(st, ev);
            return Ok(seq);
        }
        self.submit_deferred(st, ev, deps, direct, defer, was_idle)
    }

    /// The rest of [`XQueue::submit_after`] once its command has to wait: buffered as an owned
    /// copy, or launched in place when no copy can be made. Out of line, so that the fast
    /// path's stack frame does not hold a command.
    #[inline(never)]
    fn submit_deferred<D, F>(
        &self,
        mut st: MutexGuard<'_, State<H>>,
        mut ev: Pending,
        deps: Vec<Dependency>,
        direct: D,
        defer: F,
        was_idle: bool,
    ) -> Result<CommandSeq, XQueueError>
    where
        D: FnOnce(&H) -> Result<(), HwError>,
        F: FnOnce() -> Option<H::Command>,
    {
        let sh = &*self.shared;
        let seq = CommandSeq(st.submitted);
        let Some(cmd) = defer() else {
            // No faithful copy: wait for the dependencies and for everything before it to be
            // launched, then launch directly, in place.
            drop(st);
            ev.emit(&*sh.sink);
            for d in &deps {
                d.wait_satisfied();
            }
            return self.launch_in_place(direct, false);
        };
        let demand = deps.clone();
        st.buffer.push_back(Buffered { cmd, deps });
        st.submitted += 1;
        sh.publish_pending(&mut st);
        if was_idle {
            sh.transition(&mut st, QueueState::Ready, &mut ev);
        }
        sh.wake_worker(&st);
        let backlog = st.buffer.len();
        sh.unlock_and_emit(st, ev);
        for d in &demand {
            d.demand();
        }
        if backlog > sh.max_buffered && sh.drive == Drive::Worker {
            self.wait_for_room()?;
        }
        Ok(seq)
    }

    /// Blocks until the buffer holds no more than `max_buffered` commands (or the queue shuts
    /// down): the submitter of a full queue waits as it would on a full hardware queue.
    fn wait_for_room(&self) -> Result<(), XQueueError> {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let st = sync::lock(&sh.state);
        let st = self.hold_while(st, &mut ev, |st| {
            st.buffer.len() > sh.max_buffered && !st.shutdown
        })?;
        sh.unlock_and_emit(st, ev);
        Ok(())
    }

    /// Holds the submitting thread while `cond` holds, waiting for the queue's progress, and
    /// counts the hold (see [`XQueue::submitter_held`]) if there was one.
    fn hold_while<'a>(
        &'a self,
        mut st: MutexGuard<'a, State<H>>,
        ev: &mut Pending,
        cond: impl Fn(&State<H>) -> bool,
    ) -> Result<MutexGuard<'a, State<H>>, XQueueError> {
        if cond(&st) {
            let since = self.shared.clock.now();
            while cond(&st) {
                st = self.wait_for_progress(st, ev)?;
            }
            self.shared.record_hold(since);
        }
        Ok(st)
    }

    /// Runs a synchronous operation — one that returns only when it has completed, such as a
    /// synchronous copy — as the queue's next command: once `deps` are satisfied and everything
    /// submitted before has been launched, `direct` runs on the caller's thread. No sync point
    /// is added after it (the application may query its queue the moment the call returns and
    /// must find it idle), and on success it and every command before it count as complete.
    /// Blocks while the queue is suspended with commands buffered.
    pub fn run_synchronous<D>(
        &self,
        deps: Vec<Dependency>,
        direct: D,
    ) -> Result<CommandSeq, XQueueError>
    where
        D: FnOnce(&H) -> Result<(), HwError>,
    {
        for d in &deps {
            d.wait_satisfied();
        }
        self.launch_in_place(direct, true)
    }

    /// Launches through `direct` once the buffer is empty, as the next command (see
    /// [`XQueue::submit_with`] and [`XQueue::run_synchronous`]). Blocks while the queue is
    /// suspended with commands buffered.
    fn launch_in_place<D>(&self, direct: D, synchronous: bool) -> Result<CommandSeq, XQueueError>
    where
        D: FnOnce(&H) -> Result<(), HwError>,
    {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let st = sync::lock(&sh.state);
        let mut st = self.hold_while(st, &mut ev, |st| !st.buffer.is_empty())?;
        if st.shutdown {
            return Err(XQueueError::ShuttingDown);
        }
        let seq = CommandSeq(st.submitted);
        let was_idle = st.completed == st.submitted;
        if synchronous {
            // Runs and completes before anything else can be launched: the queue stays as it
            // was, Idle or Ready, and knows everything up to here is done.
            direct(&sh.hw)?;
            st.submitted += 1;
            st.launched += 1;
            st.since_sync = 0;
            sh.publish_pending(&mut st);
            let done = st.launched;
            if was_idle {
                // Idle before and after: no transition to report.
                st.completed = done;
                st.sync_points.clear();
                st.retire_markers();
            } else {
                sh.complete_to(&mut st, done, &mut ev);
            }
            sh.unlock_and_emit(st, ev);
            return Ok(seq);
        }
        direct(&sh.hw)?;
        st.submitted += 1;
        sh.after_launch(&mut st);
        sh.publish_pending(&mut st);
        if was_idle {
            sh.transition(&mut st, QueueState::Ready, &mut ev);
            if st.watch_idle {
                sh.wake_worker(&st);
            }
        }
        sh.unlock_and_emit(st, ev);
        Ok(seq)
    }
}
