//! The time-slice control: one context's compute group as Level 3 for its queues, its slice
//! applied by a background thread that keeps only the latest wish.

use std::fmt;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use baton_core::locks;

use super::capture::ChannelGroup;
use super::control::{RmControl, RmError, get_timeslice, set_timeslice};

/// Counters of a [`ContextSlice`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SliceStats {
    /// Slice changes sent to the GPU.
    pub changes: u64,
    /// Time those calls took, in total.
    pub busy: Duration,
    /// The longest one.
    pub longest: Duration,
    /// Calls the driver refused.
    pub failures: u64,
}

#[derive(Debug)]
struct SliceState {
    queues: usize,
    /// Queues running freely: neither interrupted nor preemptible.
    running: usize,
    /// What the slice should be now.
    want_yield: bool,
    /// What was last applied.
    yielded: bool,
    shutdown: bool,
    stats: SliceStats,
    last_error: Option<RmError>,
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
    state: Mutex<SliceState>,
    cv: Condvar,
}

impl fmt::Debug for ContextSlice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContextSlice")
            .field("group", &self.inner.group)
            .field("normal_us", &self.inner.normal_us)
            .field("yield_us", &self.inner.yield_us)
            .finish_non_exhaustive()
    }
}

impl ContextSlice {
    /// Takes control of `group`'s slice: `normal` (µs) when given, else its current value,
    /// becomes the slice while some queue runs freely; sets it and reads it back to check that
    /// a change takes, then starts the thread that applies changes. Fails if the driver
    /// refuses either.
    pub fn start(
        ctl: Arc<dyn RmControl>,
        group: ChannelGroup,
        yield_us: u64,
        normal: Option<u64>,
    ) -> Result<ContextSlice, RmError> {
        let normal_us = match normal {
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
            yield_us: yield_us.max(1),
            state: Mutex::new(SliceState {
                queues: 0,
                running: 0,
                want_yield: false,
                yielded: false,
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

    /// A queue of the context appeared; `running`: it runs freely (see the module
    /// documentation).
    pub fn attach(&self, running: bool) {
        self.inner.change(|st| {
            st.queues += 1;
            st.running += usize::from(running);
        });
    }

    /// A queue of the context went away; `running` as last reported.
    pub fn detach(&self, running: bool) {
        self.inner.change(|st| {
            st.queues = st.queues.saturating_sub(1);
            if running {
                st.running = st.running.saturating_sub(1);
            }
        });
    }

    /// A queue of the context started (`true`) or stopped (`false`) running freely. Never
    /// blocks on the driver.
    pub fn set_running(&self, running: bool) {
        self.inner.change(|st| {
            if running {
                st.running = (st.running + 1).min(st.queues);
            } else {
                st.running = st.running.saturating_sub(1);
            }
        });
    }

    /// Whether the slice is (or is about to be) the yield value.
    pub fn yielding(&self) -> bool {
        locks::lock(&self.inner.state).want_yield
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
        while st.yielded != st.want_yield && st.last_error.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            st = locks::wait_timeout(&self.inner.cv, st, left);
        }
        st.yielded == st.want_yield
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
        st.want_yield = st.queues > 0 && st.running == 0;
        self.cv.notify_all();
    }

    /// The background thread: applies the latest wish, coalescing flips that happen while a
    /// call is in progress. Ends when the [`ContextSlice`] is dropped (its context is going
    /// away, so nothing is restored).
    fn apply_loop(&self, ctl: &dyn RmControl) {
        loop {
            let target = {
                let mut st = locks::lock(&self.state);
                loop {
                    if st.shutdown {
                        return;
                    }
                    if st.want_yield != st.yielded && st.last_error.is_none() {
                        break st.want_yield;
                    }
                    st = locks::wait(&self.cv, st);
                }
            };
            let us = if target {
                self.yield_us
            } else {
                self.normal_us
            };
            let t0 = Instant::now();
            let r = set_timeslice(ctl, &self.group, us);
            let took = t0.elapsed();
            let mut st = locks::lock(&self.state);
            st.stats.busy += took;
            st.stats.longest = st.stats.longest.max(took);
            match r {
                Ok(()) => {
                    st.stats.changes += 1;
                    st.yielded = target;
                }
                Err(e) => {
                    // A refusal stops further changes (the queues still stop launching, as at
                    // Level 1); it is reported through `stats`.
                    st.stats.failures += 1;
                    st.last_error = Some(e);
                }
            }
            self.cv.notify_all();
        }
    }
}
