//! Submission: the fast path that launches on the caller's thread, the buffer that holds
//! commands back, the backpressure that bounds it, and the turn of a command that runs in place.

use super::options::Drive;
use super::queue::XQueue;
use super::shared::{Buffered, Pending, State};
use crate::dependency::Dependency;
use crate::submission::{Owned, Submission, SubmitPath, Submitted};
use crate::sync::{self, MutexGuard};
use crate::{CommandSeq, HwQueue, Nanos, QueueState, XQueueError};

impl<H: HwQueue> XQueue<H> {
    /// Submits `cmd`, launching it at once when the buffer is empty, the queue runs and the
    /// in-flight window has room; buffering it otherwise.
    ///
    /// A launch the hardware refuses on this path is returned as the error and the command is
    /// not part of the queue (as when the application calls the driver directly).
    pub fn submit(&self, cmd: H::Command) -> Result<CommandSeq, XQueueError> {
        self.submit_after(Vec::new(), Owned(cmd)).map(|s| s.seq)
    }

    /// Submits `sub`, which must reach the hardware only after `deps` (commands of other
    /// queues) have. On the fast path it is launched from the caller's thread as the caller
    /// holds it (an interposer's launch from the application's own arguments, copying
    /// nothing); otherwise it becomes an owned command in the buffer, and while a dependency
    /// is unsatisfied it waits there (the caller does not block) and the queues depended on
    /// are asked to launch what is needed even if they are suspended. A submission that cannot
    /// be copied faithfully is launched in place once every command before it has been: never
    /// reordered, only delayed, and counted like any other.
    pub fn submit_after(
        &self,
        mut deps: Vec<Dependency>,
        sub: impl Submission<H>,
    ) -> Result<Submitted, XQueueError> {
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
            sub.launch(&sh.hw)?;
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
            return Ok(Submitted {
                seq,
                path: SubmitPath::Direct,
                held: None,
            });
        }
        self.submit_deferred(st, ev, deps, sub, was_idle)
    }

    /// The rest of [`XQueue::submit_after`] once its command has to wait: buffered as an owned
    /// copy, or launched in place when no copy can be made. Out of line, so that the fast
    /// path's stack frame does not hold a command.
    #[inline(never)]
    fn submit_deferred(
        &self,
        mut st: MutexGuard<'_, State<H>>,
        mut ev: Pending,
        deps: Vec<Dependency>,
        sub: impl Submission<H>,
        was_idle: bool,
    ) -> Result<Submitted, XQueueError> {
        let sh = &*self.shared;
        let seq = CommandSeq(st.submitted);
        let cmd = match sub.into_command(&sh.hw) {
            Ok(cmd) => cmd,
            Err(sub) => {
                // No faithful copy: its turn, then launched from here.
                drop(st);
                ev.emit(&*sh.sink);
                let turn = self.in_turn(deps)?;
                let held = turn.held();
                sub.launch(&sh.hw)?;
                return Ok(Submitted {
                    seq: turn.launched(),
                    path: SubmitPath::InPlace,
                    held,
                });
            }
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
        let held = if backlog > sh.max_buffered && sh.drive == Drive::Worker {
            self.wait_for_room()?
        } else {
            None
        };
        Ok(Submitted {
            seq,
            path: SubmitPath::Buffered,
            held,
        })
    }

    /// Blocks until the buffer holds no more than `max_buffered` commands (or the queue shuts
    /// down): the submitter of a full queue waits as it would on a full hardware queue.
    /// Returns how long it was held, if it was.
    fn wait_for_room(&self) -> Result<Option<Nanos>, XQueueError> {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let st = sync::lock(&sh.state);
        let (st, held) = self.hold_while(st, &mut ev, |st| {
            st.buffer.len() > sh.max_buffered && !st.shutdown
        })?;
        sh.unlock_and_emit(st, ev);
        Ok(held)
    }

    /// Holds the submitting thread while `cond` holds, waiting for the queue's progress, and
    /// counts the hold (see [`XQueue::submitter_held`]) if there was one.
    fn hold_while<'a>(
        &'a self,
        mut st: MutexGuard<'a, State<H>>,
        ev: &mut Pending,
        cond: impl Fn(&State<H>) -> bool,
    ) -> Result<(MutexGuard<'a, State<H>>, Option<Nanos>), XQueueError> {
        let mut held = None;
        if cond(&st) {
            let since = self.shared.clock.now();
            while cond(&st) {
                st = self.wait_for_progress(st, ev)?;
            }
            held = Some(self.shared.record_hold(since));
        }
        Ok((st, held))
    }

    /// The turn of an operation the caller performs itself, in place (one Baton cannot copy or
    /// model, such as a multi-dimensional copy, or a synchronous one): once `deps` are
    /// satisfied and everything submitted before has been launched. The queue stays locked
    /// while the [`Turn`] lives, so nothing else is launched in between; the caller then
    /// performs the operation and says what it was ([`Turn::launched`],
    /// [`Turn::completed`]), or drops the turn if it failed. Blocks while the queue is
    /// suspended with commands buffered.
    pub fn in_turn(&self, deps: Vec<Dependency>) -> Result<Turn<'_, H>, XQueueError> {
        for d in &deps {
            d.wait_satisfied();
        }
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let st = sync::lock(&sh.state);
        let (st, held) = self.hold_while(st, &mut ev, |st| !st.buffer.is_empty())?;
        if st.shutdown {
            sh.unlock_and_emit(st, ev);
            return Err(XQueueError::ShuttingDown);
        }
        let was_idle = st.completed == st.submitted;
        Ok(Turn {
            q: self,
            st: Some((st, ev)),
            was_idle,
            held,
        })
    }
}

/// An operation's turn in its queue (see [`XQueue::in_turn`]): the queue is locked until the
/// turn ends. Dropped without [`Turn::launched`] or [`Turn::completed`], the operation did not
/// happen and the queue is as it was.
pub struct Turn<'a, H: HwQueue> {
    q: &'a XQueue<H>,
    st: Option<(MutexGuard<'a, State<H>>, Pending)>,
    was_idle: bool,
    held: Option<Nanos>,
}

impl<H: HwQueue> Turn<'_, H> {
    /// The hardware queue, to perform the operation on.
    pub fn hw(&self) -> &H {
        &self.q.shared.hw
    }

    /// How long the caller waited for this turn, if it had to.
    pub fn held(&self) -> Option<Nanos> {
        self.held
    }

    /// The operation was handed to the hardware: it is the queue's next command, in flight.
    pub fn launched(mut self) -> CommandSeq {
        let sh = &*self.q.shared;
        let (mut st, mut ev) = self.st.take().expect("a turn ends once");
        let seq = CommandSeq(st.submitted);
        st.submitted += 1;
        sh.after_launch(&mut st);
        sh.publish_pending(&mut st);
        if self.was_idle {
            sh.transition(&mut st, QueueState::Ready, &mut ev);
            if st.watch_idle {
                sh.wake_worker(&st);
            }
        }
        sh.unlock_and_emit(st, ev);
        seq
    }

    /// The operation ran and completed before returning (a synchronous one): it and every
    /// command before it count as complete. No sync point is added after it (the application
    /// may query its queue the moment the call returns and must find it idle); the queue stays
    /// as it was, Idle or Ready.
    pub fn completed(mut self) -> CommandSeq {
        let sh = &*self.q.shared;
        let (mut st, mut ev) = self.st.take().expect("a turn ends once");
        let seq = CommandSeq(st.submitted);
        st.submitted += 1;
        st.launched += 1;
        st.since_sync = 0;
        sh.publish_pending(&mut st);
        let done = st.launched;
        if self.was_idle {
            // Idle before and after: no transition to report.
            st.completed = done;
            st.sync_points.clear();
            st.retire_markers();
        } else {
            sh.complete_to(&mut st, done, &mut ev);
        }
        sh.unlock_and_emit(st, ev);
        seq
    }
}

impl<H: HwQueue> Drop for Turn<'_, H> {
    fn drop(&mut self) {
        if let Some((st, ev)) = self.st.take() {
            self.q.shared.unlock_and_emit(st, ev);
        }
    }
}
