//! The time-slice control: one context's compute group as Level 3 for its queues, its slice
//! applied by a background thread that keeps only the latest wish.
//!
//! Three values, from what the context's queues report: the *yield* slice while none of them
//! runs freely (each interrupted, or preemptible because a more urgent queue exists); the
//! *lead* slice while one runs freely and outranks other work on its device (a service beside
//! a job: only the running context's slice decides when the GPU switches, so a long one keeps
//! the GPU with the service until its work pauses); the *normal* slice otherwise.
//!
//! Optionally ([`SliceValues::off_while_interrupted`]) the group is also taken off the GPU's
//! run list while every queue of the context is interrupted (suspended at Level 3): its work
//! then waits where it stopped instead of taking the GPU back whenever the more urgent
//! context's work pauses, and is put back when one of them is restored.

use std::fmt;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use baton_core::locks;

use super::capture::ChannelGroup;
use super::control::{RmControl, RmError, get_timeslice, schedule, set_timeslice};

/// Counters of a [`ContextSlice`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SliceStats {
    /// Slice changes sent to the GPU.
    pub changes: u64,
    /// Times the group was taken off the GPU's run list.
    pub offs: u64,
    /// Times it was put back.
    pub ons: u64,
    /// Time those calls took, in total.
    pub busy: Duration,
    /// The longest one.
    pub longest: Duration,
    /// Calls the driver refused.
    pub failures: u64,
}

/// The three slices of a [`ContextSlice`], in µs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceValues {
    /// While no queue of the context runs freely.
    pub yield_us: u64,
    /// While one runs freely and none of those outranks other work; `None`: the value the
    /// driver set (libcuda's own, 2048 µs on Hopper).
    pub normal_us: Option<u64>,
    /// While one runs freely and outranks other work on its device.
    pub lead_us: u64,
    /// Take the group off the GPU's run list while every queue of the context is interrupted.
    pub off_while_interrupted: bool,
}

#[derive(Debug)]
struct SliceState {
    queues: usize,
    /// Queues running freely: neither interrupted nor preemptible.
    running: usize,
    /// Queues that outrank other work on their device (whether they run freely or not).
    leading: usize,
    /// Queues both running freely and leading.
    running_leading: usize,
    /// Queues interrupted (suspended at Level 3).
    interrupted: usize,
    /// Whether the group should be off the run list now (unless the driver refused it: see
    /// [`SliceState::off_target`]), and whether it is.
    off_want: bool,
    off_applied: bool,
    /// The driver refused to take it off: not asked again.
    off_refused: bool,
    /// What the slice should be now, in µs.
    want: u64,
    /// What was last applied (0: nothing yet).
    applied: u64,
    shutdown: bool,
    stats: SliceStats,
    last_error: Option<RmError>,
}

impl SliceState {
    /// Whether the group is to be off the run list: wanted, and not refused.
    fn off_target(&self) -> bool {
        self.off_want && !self.off_refused
    }

    /// Whether what was applied is what is wanted.
    fn settled(&self) -> bool {
        self.applied == self.want && self.off_applied == self.off_target()
    }
}

/// What one queue of a context asks of the context's slice ([`ContextSlice::update`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SliceRole {
    /// It runs freely: nothing suspended it and nothing more urgent may (see the module
    /// documentation).
    pub running: bool,
    /// It outranks other work on its device.
    pub leading: bool,
}

/// One context's compute channel group as the Level-3 mechanism of its queues. See the module
/// documentation.
pub struct ContextSlice {
    inner: Arc<SliceInner>,
}

struct SliceInner {
    group: ChannelGroup,
    normal_us: u64,
    yield_us: u64,
    lead_us: u64,
    off_while_interrupted: bool,
    state: Mutex<SliceState>,
    cv: Condvar,
}

impl fmt::Debug for ContextSlice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContextSlice")
            .field("group", &self.inner.group)
            .field("normal_us", &self.inner.normal_us)
            .field("yield_us", &self.inner.yield_us)
            .field("lead_us", &self.inner.lead_us)
            .finish_non_exhaustive()
    }
}

impl ContextSlice {
    /// Takes control of `group`'s slice (`values`; the normal one, when not given, is its
    /// current value); sets the normal one and reads it back to check that a change takes,
    /// then starts the thread that applies changes. Fails if the driver refuses either.
    pub fn start(
        ctl: Arc<dyn RmControl>,
        group: ChannelGroup,
        values: SliceValues,
    ) -> Result<ContextSlice, RmError> {
        let normal_us = match values.normal_us {
            Some(n) => n.max(1),
            None => get_timeslice(&*ctl, &group)?,
        };
        set_timeslice(&*ctl, &group, normal_us)?;
        let back = get_timeslice(&*ctl, &group)?;
        if back != normal_us {
            return Err(RmError::Readback {
                set: normal_us,
                read: back,
            });
        }
        let inner = Arc::new(SliceInner {
            group,
            normal_us,
            yield_us: values.yield_us.max(1),
            lead_us: values.lead_us.max(1),
            off_while_interrupted: values.off_while_interrupted,
            state: Mutex::new(SliceState {
                queues: 0,
                running: 0,
                leading: 0,
                running_leading: 0,
                interrupted: 0,
                off_want: false,
                off_applied: false,
                off_refused: false,
                want: normal_us,
                applied: normal_us,
                shutdown: false,
                stats: SliceStats::default(),
                last_error: None,
            }),
            cv: Condvar::new(),
        });
        let worker = inner.clone();
        std::thread::Builder::new()
            .name("baton-timeslice".into())
            .spawn(move || worker.apply_loop(&*ctl))
            .map_err(|e| RmError::Os(e.raw_os_error().unwrap_or(0)))?;
        Ok(ContextSlice { inner })
    }

    /// The group controlled.
    pub fn group(&self) -> ChannelGroup {
        self.inner.group
    }

    /// The slice the context runs with normally, in µs (libcuda's value).
    pub fn normal_us(&self) -> u64 {
        self.inner.normal_us
    }

    /// The slice while every queue is interrupted, in µs.
    pub fn yield_us(&self) -> u64 {
        self.inner.yield_us
    }

    /// The slice while a queue runs freely and outranks other work, in µs.
    pub fn lead_us(&self) -> u64 {
        self.inner.lead_us
    }

    /// A queue of the context appeared; `running`: it runs freely (see the module
    /// documentation); it leads nobody yet.
    pub fn attach(&self, running: bool) {
        self.inner.change(|st| {
            st.queues += 1;
            st.running += usize::from(running);
        });
    }

    /// A queue of the context went away, in the role it last reported.
    pub fn detach(&self, role: SliceRole) {
        let SliceRole { running, leading } = role;
        self.inner.change(|st| {
            st.queues = st.queues.saturating_sub(1);
            if running {
                st.running = st.running.saturating_sub(1);
            }
            if leading {
                st.leading = st.leading.saturating_sub(1);
            }
            if running && leading {
                st.running_leading = st.running_leading.saturating_sub(1);
            }
        });
    }

    /// A queue of the context went from `was` to `now`. Never blocks on the driver.
    pub fn update(&self, was: SliceRole, now: SliceRole) {
        if was == now {
            return;
        }
        self.inner.change(|st| {
            let step = |n: &mut usize, before: bool, after: bool| {
                if after && !before {
                    *n += 1;
                } else if before && !after {
                    *n = n.saturating_sub(1);
                }
            };
            step(&mut st.running, was.running, now.running);
            step(&mut st.leading, was.leading, now.leading);
            step(
                &mut st.running_leading,
                was.running && was.leading,
                now.running && now.leading,
            );
        });
    }

    /// A queue of the context was interrupted (`true`) or restored (`false`); a queue that
    /// goes away interrupted is restored first. Never blocks on the driver; without
    /// [`SliceValues::off_while_interrupted`] nothing reads it, so the slice's thread is not
    /// woken for it.
    pub fn set_interrupted(&self, interrupted: bool) {
        if !self.inner.off_while_interrupted {
            return;
        }
        self.inner.change(|st| {
            if interrupted {
                st.interrupted += 1;
            } else {
                st.interrupted = st.interrupted.saturating_sub(1);
            }
        });
    }

    /// Whether the group is off the GPU's run list now (see [`SliceValues::off_while_interrupted`]).
    pub fn off(&self) -> bool {
        locks::lock(&self.inner.state).off_applied
    }

    /// A queue of the context started (`true`) or stopped (`false`) running freely, leading
    /// nobody. Never blocks on the driver.
    pub fn set_running(&self, running: bool) {
        let role = |running| SliceRole {
            running,
            leading: false,
        };
        self.update(role(!running), role(running));
    }

    /// Whether the slice is (or is about to be) the yield value.
    pub fn yielding(&self) -> bool {
        let st = locks::lock(&self.inner.state);
        st.queues > 0 && st.running == 0
    }

    /// The slice the context should have now, in µs.
    pub fn wanted_us(&self) -> u64 {
        locks::lock(&self.inner.state).want
    }

    /// Counters so far, and the last refusal if any.
    pub fn stats(&self) -> (SliceStats, Option<RmError>) {
        let st = locks::lock(&self.inner.state);
        (st.stats, st.last_error)
    }

    /// Blocks until the slice applied matches the wish, or a refusal, or `timeout` (for tests
    /// and measurements). Returns whether it matches.
    pub fn settle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = locks::lock(&self.inner.state);
        while !st.settled() && st.last_error.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            st = locks::wait_timeout(&self.inner.cv, st, left);
        }
        st.settled()
    }
}

impl Drop for ContextSlice {
    fn drop(&mut self) {
        self.inner.change(|st| st.shutdown = true);
    }
}

impl SliceInner {
    fn change(&self, f: impl FnOnce(&mut SliceState)) {
        let mut st = locks::lock(&self.state);
        f(&mut st);
        st.want = if st.queues > 0 && st.running == 0 {
            self.yield_us
        } else if st.running_leading > 0 {
            self.lead_us
        } else {
            self.normal_us
        };
        st.off_want = self.off_while_interrupted && st.queues > 0 && st.interrupted >= st.queues;
        self.cv.notify_all();
    }

    /// The background thread: applies the latest wish, coalescing flips that happen while a
    /// call is in progress. Ends when the [`ContextSlice`] is dropped (its context is going
    /// away, so nothing is restored).
    fn apply_loop(&self, ctl: &dyn RmControl) {
        loop {
            let (us, off) = {
                let mut st = locks::lock(&self.state);
                loop {
                    if st.shutdown {
                        return;
                    }
                    // After a refused slice change, only putting the group back on is still
                    // done: left off, nothing of the context would run again.
                    let back_on = st.off_applied && !st.off_target();
                    if !st.settled() && (st.last_error.is_none() || back_on) {
                        break (st.want, st.off_target());
                    }
                    st = locks::wait(&self.cv, st);
                }
            };
            // Off first when going off (the slice no longer matters), the slice first when
            // coming back on.
            if off {
                self.apply_off(ctl, true);
            }
            self.apply_slice(ctl, us);
            if !off {
                self.apply_off(ctl, false);
            }
            self.cv.notify_all();
        }
    }

    /// Runs one control, then counts its time in the stats under the state lock, which it
    /// returns held, with the time.
    fn timed(
        &self,
        call: impl FnOnce() -> Result<(), RmError>,
    ) -> (
        Result<(), RmError>,
        Duration,
        std::sync::MutexGuard<'_, SliceState>,
    ) {
        let t0 = Instant::now();
        let r = call();
        let took = t0.elapsed();
        let mut st = locks::lock(&self.state);
        st.stats.busy += took;
        st.stats.longest = st.stats.longest.max(took);
        (r, took, st)
    }

    fn apply_slice(&self, ctl: &dyn RmControl, us: u64) {
        let st = locks::lock(&self.state);
        if st.applied == us || st.last_error.is_some() {
            return;
        }
        drop(st);
        let (r, took, mut st) = self.timed(|| set_timeslice(ctl, &self.group, us));
        match r {
            Ok(()) => {
                st.stats.changes += 1;
                st.applied = us;
                drop(st);
                // Which slice a context has at any moment is otherwise only inferred from
                // what its queues were told.
                tracing::debug!(
                    "channel group {:#x}: time slice {us} µs ({} µs to apply)",
                    self.group.handle,
                    took.as_micros()
                );
            }
            Err(e) => {
                // A refusal stops further changes (the queues still stop launching, as at
                // Level 1); it is reported through `stats`.
                st.stats.failures += 1;
                st.last_error = Some(e);
            }
        }
    }

    fn apply_off(&self, ctl: &dyn RmControl, off: bool) {
        if locks::lock(&self.state).off_applied == off {
            return;
        }
        let (r, _, mut st) = self.timed(|| schedule(ctl, &self.group, !off));
        match r {
            Ok(()) => {
                st.off_applied = off;
                if off {
                    st.stats.offs += 1;
                } else {
                    st.stats.ons += 1;
                }
            }
            Err(e) if off => {
                // Not taken off: the slice alone yields, as without the option.
                st.stats.failures += 1;
                st.off_refused = true;
                tracing::warn!(
                    error = %e,
                    "the context's channel group could not be taken off the GPU's run list: \
                     Level 3 yields by its time slice alone"
                );
            }
            Err(e) => {
                // Not put back on: nothing of the context would run again. Counted, and
                // tried again a millisecond later.
                st.stats.failures += 1;
                drop(st);
                tracing::error!(
                    error = %e,
                    "the context's channel group could not be put back on the GPU's run list"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}
