//! Control: suspension and resumption at each level, and the settings a scheduler changes
//! (level, launch window, idle watch, reporting, unbounded launching).

use super::options::{Drive, ResumeFlags, SuspendFlags};
use super::queue::XQueue;
use super::shared::Pending;
use crate::sync::{self};
use crate::{
    Attention, CommandSeq, HwQueue, InflightRange, LaunchConfig, Level, QueueState, XQueueError,
};

impl<H: HwQueue> XQueue<H> {
    /// Stops the queue from running: nothing more is launched; at Level 2 the hardware stops
    /// starting launched commands, at Level 3 it also stops the running one. Suspending a
    /// suspended queue does nothing.
    ///
    /// If the hardware step fails the queue stays suspended at Level 1 and the error is
    /// returned.
    pub fn suspend(&self, flags: SuspendFlags) -> Result<(), XQueueError> {
        let sh = &*self.shared;
        let _control = sync::lock(&sh.control);
        let level = {
            let mut st = sync::lock(&sh.state);
            if st.suspended {
                return Ok(());
            }
            st.suspended = true;
            st.usage.suspended(|| sh.clock.now());
            st.launched_at_suspend = st.launched;
            let work = st.inflight().saturating_sub(st.markers.len() as u64);
            let (pace, budgeted) = (st.pace_ns, st.budget() > 0 && !st.unbounded);
            st.at_suspend.note(work, pace, budgeted && pace > 0);
            if st.level != Level::L1 {
                // The device stops working on what is in flight: the time until it resumes is
                // no measure of its commands' length.
                st.pace_mark = None;
            }
            st.level
        };
        match level {
            Level::L1 => {}
            Level::L2 => {
                sh.hw.deactivate()?;
                sh.gated.store(true, std::sync::atomic::Ordering::Release);
                // Commands another queue already waits for may be behind the gate now: the
                // worker reopens it until they complete.
                let mut st = sync::lock(&sh.state);
                sh.count_held_back(&mut st);
                st.gate_open = false;
                if sh.progress.demanded() > st.completed {
                    sh.wake_worker(&st);
                }
            }
            Level::L3 => sh.hw.interrupt()?,
        }
        if flags.sync_hw && level == Level::L1 {
            let last = {
                let st = sync::lock(&sh.state);
                (st.launched > st.completed).then(|| st.launched - 1)
            };
            if let Some(last) = last {
                self.wait(CommandSeq(last))?;
            }
        }
        Ok(())
    }

    /// Lets a suspended queue run again, continuing with its oldest buffered command. Resuming
    /// a running queue does nothing.
    ///
    /// The queue runs again even if the hardware step fails; the error is returned.
    pub fn resume(&self, _flags: ResumeFlags) -> Result<(), XQueueError> {
        let sh = &*self.shared;
        let _control = sync::lock(&sh.control);
        let (level, inflight) = {
            let st = sync::lock(&sh.state);
            if !st.suspended {
                return Ok(());
            }
            let range = InflightRange {
                start: CommandSeq(st.completed),
                end: CommandSeq(st.launched),
            };
            (st.level, range)
        };
        let hw_result = match level {
            Level::L1 => Ok(()),
            Level::L2 => sh.hw.reactivate(inflight),
            Level::L3 => sh.hw.restore(inflight),
        };
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        st.suspended = false;
        st.usage.resumed(|| sh.clock.now());
        st.released += st.launched - st.launched_at_suspend;
        st.gate_open = false;
        sh.gated.store(false, std::sync::atomic::Ordering::Release);
        sh.count_held_back(&mut st);
        match sh.drive {
            Drive::Worker => sh.wake_worker(&st),
            Drive::External => sh.poll_locked(&mut st, &mut ev),
        }
        sh.unlock_and_emit(st, ev);
        hw_result.map_err(Into::into)
    }

    /// Chooses the level suspension uses. Refused above the hardware's maximum and while the
    /// queue is suspended.
    pub fn set_level(&self, level: Level) -> Result<(), XQueueError> {
        let sh = &*self.shared;
        let max = sh.hw.max_level();
        if !sh.hw.supports(level) {
            return Err(XQueueError::LevelUnsupported {
                requested: level,
                max,
            });
        }
        let _control = sync::lock(&sh.control);
        let mut st = sync::lock(&sh.state);
        if st.suspended {
            return Err(XQueueError::SuspendedLevelChange);
        }
        st.level = level;
        Ok(())
    }

    /// Applies a scheduler's whole answer for the queue, part by part through the setters
    /// below (each does nothing where its part is unchanged): reporting first, so a queue
    /// asked to report again re-announces its state before anything else changes; then the
    /// window, the hold, the lead, the re-measuring and the idle watch.
    pub fn set_attention(&self, a: Attention) {
        self.set_reporting(a.report);
        self.set_unbounded(a.unbounded);
        self.set_holdable(a.hold);
        self.set_leading(a.leading);
        self.set_remeasure(a.remeasure);
        self.set_idle_watch(a.watch);
    }

    /// Whether the launch worker follows the in-flight tail so the queue reports Idle even when
    /// the application never synchronizes (default: yes). A scheduler turns it off while no
    /// decision depends on this queue going idle: the worker then stays asleep through a burst
    /// of launches instead of polling the hardware.
    pub fn set_idle_watch(&self, on: bool) {
        let sh = &*self.shared;
        let mut st = sync::lock(&sh.state);
        if st.watch_idle != on {
            st.watch_idle = on;
            if on && st.inflight() > 0 {
                sh.wake_worker(&st);
            }
        }
        drop(st);
    }

    /// Whether Idle/Ready transitions are reported to the sink (default: yes). A scheduler
    /// turns reporting off for queues none of its decisions depend on, sparing a wake-up per
    /// transition; the queue's first Ready is reported regardless, once, so that the scheduler
    /// knows it has run work. Turning it back on reports the current state at once (with the
    /// current transition number), so the receiver is never left with a stale view.
    pub fn set_reporting(&self, on: bool) {
        let sh = &*self.shared;
        let mut st = sync::lock(&sh.state);
        if st.reporting == on {
            return;
        }
        st.reporting = on;
        let mut ev = Pending::new();
        if on && st.transitions > 0 {
            ev.push(crate::QueueEvent {
                queue: sh.id,
                state: if st.submitted == st.completed {
                    QueueState::Idle
                } else {
                    QueueState::Ready
                },
                at: sh.clock.now(),
                transition: st.transitions,
            });
        }
        sh.unlock_and_emit(st, ev);
    }

    /// Whether the queue may run without its in-flight window and sync points (default: no).
    /// Progressive launching only bounds how long a *suspension* waits for in-flight work; a
    /// scheduler sets this for queues none of its decisions can suspend (under HPF, the
    /// top-priority queue of a device), whose launches then cost only the lock and the launch.
    /// Turning it off makes the next launch add a sync point, so the window applies from there.
    /// A queue built with [`XQueueBuilder::keep_window`](crate::XQueueBuilder::keep_window)
    /// keeps its window regardless; either way the hardware queue learns whether a suspension
    /// may come
    /// ([`HwQueue::set_preemptible`]).
    pub fn set_unbounded(&self, on: bool) {
        let sh = &*self.shared;
        let mut st = sync::lock(&sh.state);
        if st.preemptible == on {
            st.preemptible = !on;
            sh.hw.set_preemptible(!on);
        }
        st.may_run_unbounded = on;
        self.apply_window(st);
    }

    /// Whether the queue outranks other work on its device (a scheduler's answer): passed to
    /// the hardware queue ([`HwQueue::set_leading`]), which may keep the device longer for it
    /// while it runs freely (a time-sliced backend: a long slice for a service beside a job).
    /// Default: no.
    pub fn set_leading(&self, on: bool) {
        // Under the state lock, as `set_preemptible` is told, so the two never cross.
        let _st = sync::lock(&self.shared.state);
        self.shared.hw.set_leading(on);
    }

    /// Keeps the queue's window and sync points while `on`, even where its scheduler lets it
    /// run without them ([`XQueue::set_unbounded`]), so that its commands are measured again
    /// ([`XQueue::command_time`]): a queue launching without a window is never measured, and a
    /// scheduler that let it go because its commands were short would otherwise keep a measure
    /// of what it ran before (a training job's warm-up, before a flood of long GEMMs on the same
    /// stream). What a suspension may meet, and so the hardware queue's preemptibility, does
    /// not change.
    pub fn set_measuring(&self, on: bool) {
        let mut st = sync::lock(&self.shared.state);
        st.measuring = on;
        self.apply_window(st);
    }

    /// Whether its scheduler lets it run without its window only because of what was measured
    /// of its commands (HPF spares a stream of short commands from other processes' work), so
    /// that its process must have it keep the window now and then ([`XQueue::set_measuring`])
    /// to hear if they turn long. A queue let go because nothing outranks it is not: measuring
    /// it would change no decision, and a launch-bound service keeps its window for the whole
    /// of each measurement (up to two seconds), its commands rarely keeping the GPU busy long
    /// enough for a sample. Turning it off ends a measurement under way. Default: off.
    pub fn set_remeasure(&self, on: bool) {
        let mut st = sync::lock(&self.shared.state);
        st.remeasure = on;
        if !on {
            st.measuring = false;
        }
        self.apply_window(st);
    }

    /// Whether its scheduler may hold the queue back now (a scheduler's answer), not only keep
    /// it suspendable so that its hardware queue gives way by itself: a yielding queue, whose
    /// context's time slice is short while it is outranked, beside programs bound by their own
    /// launching is not held for them under HPF. Its work in flight is bounded by device time
    /// ([`XQueueBuilder::inflight_budget`](crate::XQueueBuilder::inflight_budget)) only while
    /// it is: that bound exists to shorten what a hold waits for, and otherwise only leaves the
    /// device without the queue's work each time its host must launch more, which beside
    /// another context with work queued costs a hand-over each way. The window's count still
    /// applies. Default: yes.
    pub fn set_holdable(&self, on: bool) {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        if st.holdable == on {
            return;
        }
        st.holdable = on;
        // A window the budget closed may be open now.
        match sh.drive {
            Drive::Worker => sh.wake_worker(&st),
            Drive::External => sh.poll_locked(&mut st, &mut ev),
        }
        sh.unlock_and_emit(st, ev);
    }

    /// Whether its scheduler may hold it back now ([`XQueue::set_holdable`]).
    pub fn holdable(&self) -> bool {
        sync::lock(&self.shared.state).holdable
    }

    /// Whether its scheduler wants it measured again now and then ([`XQueue::set_remeasure`]).
    pub fn wants_remeasure(&self) -> bool {
        sync::lock(&self.shared.state).remeasure
    }

    /// Whether its scheduler lets it run without its window now ([`XQueue::set_unbounded`]),
    /// measuring or not.
    pub fn may_run_unbounded(&self) -> bool {
        sync::lock(&self.shared.state).may_run_unbounded
    }

    /// Launches without the window exactly when the scheduler lets it and it is not measuring
    /// (and it was not built to keep its window).
    fn apply_window(&self, mut st: sync::MutexGuard<'_, super::shared::State<H>>) {
        let sh = &*self.shared;
        let on = st.may_run_unbounded && !st.measuring && !sh.keep_window;
        if st.unbounded == on {
            return;
        }
        st.unbounded = on;
        if !on {
            st.since_sync = st.config.batch();
        }
        sh.wake_worker(&st);
        drop(st);
    }

    /// Changes the launch window; takes effect with the next launch.
    pub fn set_launch_config(&self, config: LaunchConfig) {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        st.config = config;
        match sh.drive {
            Drive::Worker => sh.wake_worker(&st),
            Drive::External => sh.poll_locked(&mut st, &mut ev),
        }
        sh.unlock_and_emit(st, ev);
    }
}
