//! Completion: querying and waiting for commands, deferred errors, and external progress.

use super::options::Drive;
use super::queue::XQueue;
use super::shared::{Pending, State};
use crate::sync::{self, MutexGuard};
use crate::{CommandSeq, CommandState, HwError, HwQueue, XQueueError};

/// What [`XQueue::idle_query`] knows.
#[derive(Debug, PartialEq, Eq)]
pub enum IdleQuery {
    /// The answer, without asking the hardware.
    Known(bool),
    /// Ask the hardware, and tell the queue with [`XQueue::answered`].
    Ask(Asking),
}

/// A question to put to the hardware (see [`XQueue::idle_query`]).
#[derive(Debug, PartialEq, Eq)]
pub struct Asking {
    /// Commands launched when it was asked: those a "done" covers.
    end: u64,
}

impl<H: HwQueue> XQueue<H> {
    /// Takes the error of a command launched on the application's behalf since the last time
    /// one was reported (by [`XQueue::synchronized`] or here), if one failed: for
    /// synchronizations that wait for the queue without going through it (a whole context's).
    pub fn take_error(&self) -> Option<HwError> {
        sync::lock(&self.shared.state).deferred_error.take()
    }

    /// Whether all of the queue's work is done, as far as the queue knows without asking the
    /// hardware: not while commands are still buffered; yes when every submitted command is
    /// already known complete (the hardware may still be running a sync point placed after
    /// them, which is the queue's business, not the caller's); otherwise the caller asks the
    /// hardware (the driver's stream query) and tells the queue with [`XQueue::answered`].
    pub fn idle_query(&self) -> IdleQuery {
        let st = sync::lock(&self.shared.state);
        if !st.buffer.is_empty() {
            return IdleQuery::Known(false);
        }
        if st.completed == st.submitted && st.deferred_error.is_none() {
            return IdleQuery::Known(true);
        }
        IdleQuery::Ask(Asking { end: st.launched })
    }

    /// The hardware's answer to `q`: if it said done, every command launched before the
    /// question counts as complete.
    pub fn answered(&self, q: Asking, done: bool) {
        if !done {
            return;
        }
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        sh.complete_to(&mut st, q.end, &mut ev);
        sh.unlock_and_emit(st, ev);
    }

    /// Waits (releasing the lock) until the launch worker makes progress; with no worker,
    /// polls once and fails with `WouldBlock` if that was not enough.
    pub(super) fn wait_for_progress<'a>(
        &'a self,
        mut st: MutexGuard<'a, State<H>>,
        ev: &mut Pending,
    ) -> Result<MutexGuard<'a, State<H>>, XQueueError> {
        let sh = &*self.shared;
        if sh.drive == Drive::External {
            let before = (st.launched, st.completed);
            sh.poll_locked(&mut st, ev);
            if (st.launched, st.completed) == before {
                return Err(HwError::WouldBlock.into());
            }
            return Ok(st);
        }
        sh.wake_worker(&st);
        st.waiters += 1;
        st = sync::wait(&sh.progress_cv, st);
        st.waiters -= 1;
        Ok(st)
    }

    /// Where command `seq` is in its life.
    pub fn query(&self, seq: CommandSeq) -> Result<CommandState, XQueueError> {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        if seq.0 >= st.submitted {
            return Err(XQueueError::UnknownCommand(seq));
        }
        if seq.0 >= st.completed && seq.0 < st.launched {
            sh.reap(&mut st, &mut ev);
            if seq.0 >= st.completed && st.launched > st.covered() {
                // No sync point covers it: ask the hardware whether everything is done.
                sh.reap_idle(&mut st, &mut ev);
            }
        }
        let state = if seq.0 < st.completed {
            CommandState::Completed
        } else if seq.0 < st.launched {
            CommandState::InFlight
        } else {
            CommandState::Pending
        };
        sh.unlock_and_emit(st, ev);
        Ok(state)
    }

    /// Whether every submitted command has completed (without blocking).
    pub fn query_all(&self) -> bool {
        let last = {
            let st = sync::lock(&self.shared.state);
            if st.submitted == st.completed {
                return true;
            }
            st.submitted - 1
        };
        matches!(
            self.query(CommandSeq(last)),
            Ok(CommandState::Completed) | Err(_)
        )
    }

    /// Blocks until command `seq` has completed. If the queue is suspended and the command is
    /// still buffered, that means until the queue is resumed and the command runs.
    ///
    /// Returns an error the hardware reported for work launched on the application's behalf
    /// since the last wait, if any.
    pub fn wait(&self, seq: CommandSeq) -> Result<(), XQueueError> {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        loop {
            if seq.0 >= st.submitted {
                return Err(XQueueError::UnknownCommand(seq));
            }
            if seq.0 < st.completed {
                break;
            }
            if sh.drive == Drive::External {
                sh.poll_locked(&mut st, &mut ev);
                if seq.0 < st.completed {
                    break;
                }
                sh.unlock_and_emit(st, ev);
                return Err(HwError::WouldBlock.into());
            }
            if seq.0 < st.launched {
                let covering = st
                    .sync_points
                    .iter()
                    .find(|(end, _)| *end > seq.0)
                    .map(|(end, sp)| (*end, sp.clone()));
                let (end, result) = match covering {
                    Some((end, sp)) => {
                        drop(st);
                        let r = sh.hw.wait(&sp);
                        (end, r)
                    }
                    None => {
                        let end = st.launched;
                        drop(st);
                        (end, sh.hw.synchronize())
                    }
                };
                st = sync::lock(&sh.state);
                if let Err(e) = result {
                    st.record_error(e);
                }
                sh.complete_to(&mut st, end, &mut ev);
            } else {
                st = self.wait_for_progress(st, &mut ev)?;
            }
        }
        let err = st.deferred_error.take();
        sh.unlock_and_emit(st, ev);
        match err {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// Blocks until every command submitted so far has completed.
    pub fn wait_all(&self) -> Result<(), XQueueError> {
        let last = {
            let mut st = sync::lock(&self.shared.state);
            if st.submitted == st.completed {
                return match st.deferred_error.take() {
                    Some(e) => Err(e.into()),
                    None => Ok(()),
                };
            }
            st.submitted - 1
        };
        self.wait(CommandSeq(last))
    }

    /// Makes what progress is possible without blocking: notices reached sync points and
    /// launches buffered commands into the freed window. The driver of a [`Drive::External`]
    /// queue calls it whenever the hardware progressed; on a worker-driven queue it is harmless.
    pub fn poll(&self) {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        sh.poll_locked(&mut st, &mut ev);
        sh.unlock_and_emit(st, ev);
    }

    /// With an [idle linger](crate::XQueueBuilder::idle_linger): when [`XQueue::poll`] should
    /// be called again to find the in-flight tail done, if it may be.
    pub fn next_look(&self) -> Option<crate::Nanos> {
        let sh = &*self.shared;
        let st = sync::lock(&sh.state);
        sh.next_look(&st)
    }
}
