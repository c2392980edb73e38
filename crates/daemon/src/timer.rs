//! The core's wake-ups, to the microsecond.
//!
//! tokio's timer counts whole milliseconds and rounds a deadline up to the next one, so a
//! 500 µs linger handed the GPU back to the job milliseconds after the service's work ended
//! (docs/BENCHMARKS.md, "When the holds land"). A `timerfd` on the monotonic clock fires
//! within the kernel's timer slack (tens of µs) and wakes tokio's reactor like any socket.

use std::io;
use std::os::fd::OwnedFd;
use std::time::Duration;

use rustix::time::{
    Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec, timerfd_create,
    timerfd_settime,
};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// A one-shot timer on a `timerfd`, armed for the core's next wake-up.
pub(crate) struct Timer {
    fd: AsyncFd<OwnedFd>,
    /// Whether it is armed (a disarmed timer never fires).
    armed: bool,
}

impl Timer {
    /// A disarmed timer, registered with the current tokio runtime.
    pub(crate) fn new() -> io::Result<Timer> {
        let fd = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )?;
        // SAFETY: `fd` is an open timerfd that the AsyncFd owns (and so keeps open) until
        // dropped.
        let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
            .map_err(|e| io::Error::other(e.to_string()))?;
        Ok(Timer { fd, armed: false })
    }

    /// Fires once `after` from now (at once for zero); `None` disarms it. Replaces any earlier
    /// setting, and an expiry not yet read with it.
    pub(crate) fn set(&mut self, after: Option<Duration>) -> io::Result<()> {
        if after.is_none() && !self.armed {
            // Disarmed already: most rounds have no wake-up, so no system call for them.
            return Ok(());
        }
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let value = match after {
            // A zero value disarms a timerfd: the shortest wait there is instead.
            Some(d) => Timespec::try_from(d.max(Duration::from_nanos(1)))
                .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?,
            None => zero,
        };
        let spec = Itimerspec {
            it_interval: zero,
            it_value: value,
        };
        timerfd_settime(self.fd.get_ref(), TimerfdTimerFlags::empty(), &spec)?;
        self.armed = after.is_some();
        Ok(())
    }

    /// Whether it is armed.
    pub(crate) fn armed(&self) -> bool {
        self.armed
    }

    /// Completes when the armed time comes (pending forever while disarmed). Cancel-safe:
    /// dropped before the expiry, nothing is lost; the expiry stays to be read.
    pub(crate) async fn fired(&mut self) -> io::Result<()> {
        if !self.armed {
            return std::future::pending().await;
        }
        loop {
            let mut ready = self.fd.readable().await?;
            let mut count = [0u8; 8];
            match ready.try_io(|fd| Ok(rustix::io::read(fd.get_ref(), &mut count)?)) {
                Ok(Ok(_)) => {
                    self.armed = false;
                    return Ok(());
                }
                Ok(Err(e)) => return Err(e),
                // Readiness left from an expiry that a later setting replaced: wait again.
                Err(_would_block) => continue,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[tokio::test(flavor = "current_thread")]
    async fn fires_after_its_time_and_not_before() {
        let mut t = Timer::new().unwrap();
        let start = Instant::now();
        t.set(Some(Duration::from_micros(300))).unwrap();
        t.fired().await.unwrap();
        assert!(start.elapsed() >= Duration::from_micros(300));
        assert!(!t.armed());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_new_setting_replaces_the_old_and_none_disarms() {
        let mut t = Timer::new().unwrap();
        t.set(Some(Duration::from_micros(1))).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        // Expired and unread, then replaced: the old expiry must not fire the new setting.
        let start = Instant::now();
        t.set(Some(Duration::from_millis(20))).unwrap();
        t.fired().await.unwrap();
        assert!(start.elapsed() >= Duration::from_millis(20));
        t.set(None).unwrap();
        let waited = tokio::time::timeout(Duration::from_millis(30), t.fired()).await;
        assert!(waited.is_err(), "a disarmed timer fired");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn zero_fires_at_once() {
        let mut t = Timer::new().unwrap();
        t.set(Some(Duration::ZERO)).unwrap();
        tokio::time::timeout(Duration::from_secs(5), t.fired())
            .await
            .expect("a zero wait never fired")
            .unwrap();
    }
}
