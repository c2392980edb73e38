//! Hardware queues for tests and benchmarks (feature `testing`).
//!
//! - [`NoopHwQueue`] does nothing and completes everything at once: it measures the XQueue's
//!   own cost.
//! - [`ScriptedHwQueue`] records every launch and completes commands only when the test says
//!   so (or at once, in auto mode), checking the in-flight window as it goes.

use std::sync::Arc;

use crate::sync::{self, Condvar, Mutex};
use crate::{CommandKind, HwCommand, HwError, HwQueue, InflightRange, Level};

/// A command carrying a number the test chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestCommand(pub u64);

impl HwCommand for TestCommand {
    fn kind(&self) -> CommandKind {
        CommandKind::Kernel
    }
}

/// A hardware queue that does nothing; every sync point is reached at once.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoopHwQueue;

impl HwQueue for NoopHwQueue {
    type Command = TestCommand;
    type SyncPoint = ();

    fn max_level(&self) -> Level {
        Level::L1
    }
    fn launch(&self, cmd: TestCommand) -> Result<(), HwError> {
        std::hint::black_box(cmd);
        Ok(())
    }
    fn sync_point(&self) -> Result<(), HwError> {
        Ok(())
    }
    fn is_reached(&self, _sp: &()) -> Result<bool, HwError> {
        Ok(true)
    }
    fn query_idle(&self) -> Result<bool, HwError> {
        Ok(true)
    }
    fn wait(&self, _sp: &()) -> Result<(), HwError> {
        Ok(())
    }
    fn synchronize(&self) -> Result<(), HwError> {
        Ok(())
    }
}

/// A hardware queue that does nothing but whose device lags: waiting on a sync point takes
/// `wait` of real time, as if the device were still busy, while queries report it reached.
/// Keeps a worker-driven queue Ready through a burst of submissions, as real work does.
#[derive(Clone, Copy, Debug)]
pub struct LaggingHwQueue {
    /// How long a wait takes.
    pub wait: std::time::Duration,
}

impl HwQueue for LaggingHwQueue {
    type Command = TestCommand;
    type SyncPoint = ();

    fn max_level(&self) -> Level {
        Level::L1
    }
    fn launch(&self, cmd: TestCommand) -> Result<(), HwError> {
        std::hint::black_box(cmd);
        Ok(())
    }
    fn sync_point(&self) -> Result<(), HwError> {
        Ok(())
    }
    fn is_reached(&self, _sp: &()) -> Result<bool, HwError> {
        Ok(true)
    }
    fn query_idle(&self) -> Result<bool, HwError> {
        Ok(true)
    }
    fn wait(&self, _sp: &()) -> Result<(), HwError> {
        std::thread::sleep(self.wait);
        Ok(())
    }
    fn synchronize(&self) -> Result<(), HwError> {
        std::thread::sleep(self.wait);
        Ok(())
    }
}

/// What a [`ScriptedHwQueue`] saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Script {
    /// Command numbers in launch order.
    pub launched: Vec<u64>,
    /// How many of `launched` have completed (a prefix).
    pub done: usize,
    /// Complete every command as soon as it is launched.
    pub auto_complete: bool,
    /// Level 2 deactivated.
    pub deactivated: bool,
    /// Level 3 interrupted.
    pub interrupted: bool,
    /// Every call of `deactivate`, `reactivate`, `interrupt`, `restore`, in order, with the
    /// in-flight range passed to the latter two.
    pub level_calls: Vec<(&'static str, Option<InflightRange>)>,
    /// Sync points handed out.
    pub sync_points: usize,
    /// The launch window the test declared; a launch beyond it is recorded in `violations`.
    pub window: Option<u64>,
    /// Launch-window violations seen: `(launched so far, done)`.
    pub violations: Vec<(usize, usize)>,
    /// Fail the next launch with this code.
    pub fail_next_launch: Option<i64>,
    /// Refuse sync points for now ([`HwError::Busy`], as a CUDA stream that records into a
    /// graph does); refusals are counted in `busy_refusals`.
    pub refuse_sync_points: bool,
    /// Sync points refused.
    pub busy_refusals: usize,
}

impl Script {
    fn can_progress(&self) -> bool {
        !self.deactivated && !self.interrupted
    }
}

/// A scripted hardware queue. Clones share one script.
#[derive(Clone)]
pub struct ScriptedHwQueue {
    shared: Arc<(Mutex<Script>, Condvar)>,
    max_level: Level,
}

impl ScriptedHwQueue {
    /// A queue supporting up to `max_level`, completing nothing until told to.
    pub fn new(max_level: Level) -> ScriptedHwQueue {
        ScriptedHwQueue {
            shared: Arc::new((Mutex::new(Script::default()), Condvar::new())),
            max_level,
        }
    }

    /// Runs `f` on the script and wakes any waiter.
    pub fn with<R>(&self, f: impl FnOnce(&mut Script) -> R) -> R {
        let (m, cv) = &*self.shared;
        let mut s = sync::lock(m);
        let r = f(&mut s);
        cv.notify_all();
        r
    }

    /// A copy of the script.
    pub fn script(&self) -> Script {
        self.with(|s| s.clone())
    }

    /// Completes up to `n` more launched commands (fewer while deactivated or interrupted).
    /// Returns how many completed.
    pub fn complete(&self, n: usize) -> usize {
        self.with(|s| {
            if !s.can_progress() {
                return 0;
            }
            let k = n.min(s.launched.len() - s.done);
            s.done += k;
            k
        })
    }

    /// Completes everything launched so far (unless deactivated or interrupted).
    pub fn complete_all(&self) -> usize {
        self.complete(usize::MAX)
    }

    /// Completes every command as soon as it is launched from now on.
    pub fn set_auto_complete(&self, on: bool) {
        self.with(|s| {
            s.auto_complete = on;
            if on && s.can_progress() {
                s.done = s.launched.len();
            }
        });
    }

    /// Blocks until at least `n` commands have been launched.
    pub fn wait_launched(&self, n: usize) {
        let (m, cv) = &*self.shared;
        let mut s = sync::lock(m);
        while s.launched.len() < n {
            s = sync::wait(cv, s);
        }
    }

    fn wait_done(&self, target: usize) {
        let (m, cv) = &*self.shared;
        let mut s = sync::lock(m);
        while s.done < target {
            s = sync::wait(cv, s);
        }
    }
}

impl HwQueue for ScriptedHwQueue {
    type Command = TestCommand;
    type SyncPoint = usize;

    fn max_level(&self) -> Level {
        self.max_level
    }

    fn launch(&self, cmd: TestCommand) -> Result<(), HwError> {
        self.with(|s| {
            if let Some(code) = s.fail_next_launch.take() {
                return Err(HwError::Backend {
                    backend: "scripted",
                    code,
                    message: "launch refused by the test".into(),
                });
            }
            if let Some(w) = s.window {
                if (s.launched.len() - s.done) as u64 >= w {
                    let v = (s.launched.len(), s.done);
                    s.violations.push(v);
                }
            }
            s.launched.push(cmd.0);
            if s.auto_complete && s.can_progress() {
                s.done = s.launched.len();
            }
            Ok(())
        })
    }

    fn sync_point(&self) -> Result<usize, HwError> {
        self.with(|s| {
            if s.refuse_sync_points {
                s.busy_refusals += 1;
                return Err(HwError::Busy);
            }
            s.sync_points += 1;
            Ok(s.launched.len())
        })
    }

    fn is_reached(&self, sp: &usize) -> Result<bool, HwError> {
        Ok(self.with(|s| s.done >= *sp))
    }

    fn query_idle(&self) -> Result<bool, HwError> {
        Ok(self.with(|s| s.done >= s.launched.len()))
    }

    fn wait(&self, sp: &usize) -> Result<(), HwError> {
        self.wait_done(*sp);
        Ok(())
    }

    fn synchronize(&self) -> Result<(), HwError> {
        let target = self.with(|s| s.launched.len());
        self.wait_done(target);
        Ok(())
    }

    fn deactivate(&self) -> Result<(), HwError> {
        self.level_call(Level::L2, "deactivate", None, |s| s.deactivated = true)
    }

    fn reactivate(&self, inflight: InflightRange) -> Result<(), HwError> {
        self.level_call(Level::L2, "reactivate", Some(inflight), |s| {
            s.deactivated = false
        })
    }

    fn interrupt(&self) -> Result<(), HwError> {
        self.level_call(Level::L3, "interrupt", None, |s| s.interrupted = true)
    }

    fn restore(&self, inflight: InflightRange) -> Result<(), HwError> {
        self.level_call(Level::L3, "restore", Some(inflight), |s| {
            s.interrupted = false
        })
    }
}

impl ScriptedHwQueue {
    fn level_call(
        &self,
        needs: Level,
        name: &'static str,
        range: Option<InflightRange>,
        f: impl FnOnce(&mut Script),
    ) -> Result<(), HwError> {
        if self.max_level < needs {
            return Err(HwError::Unsupported(needs));
        }
        self.with(|s| {
            s.level_calls.push((name, range));
            f(s);
            if s.auto_complete && s.can_progress() {
                s.done = s.launched.len();
            }
        });
        Ok(())
    }
}

/// A submission as an interposer makes one: launched from the caller's thread as `direct`, or
/// copied into the buffer as `copy` (`None`: it cannot be copied, and launches in place as
/// `direct`). `copies` counts the copies made.
pub struct Probe {
    /// What the caller launches itself.
    pub direct: TestCommand,
    /// Its owned copy, if one can be made.
    pub copy: Option<TestCommand>,
    /// Incremented for each copy made.
    pub copies: Option<Arc<std::sync::atomic::AtomicUsize>>,
}

impl Probe {
    /// Launched as `direct`, buffered as `copy`.
    pub fn new(direct: u64, copy: Option<u64>) -> Probe {
        Probe {
            direct: TestCommand(direct),
            copy: copy.map(TestCommand),
            copies: None,
        }
    }
}

impl<H: HwQueue<Command = TestCommand>> crate::Submission<H> for Probe {
    fn launch(self, hw: &H) -> Result<(), HwError> {
        hw.launch(self.direct)
    }

    fn into_command(self, _hw: &H) -> Result<TestCommand, Probe> {
        match self.copy {
            Some(c) => {
                if let Some(n) = &self.copies {
                    n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                Ok(c)
            }
            None => Err(self),
        }
    }
}
