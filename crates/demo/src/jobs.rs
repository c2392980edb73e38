//! Jobs: work released at a moment as a number of kernels, done when the last of them
//! completes (an HP request of the demo; a lab client's job).

use std::collections::BTreeMap;

use baton_core::Nanos;

/// One finished job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    /// When it was released.
    pub release: Nanos,
    /// When its last kernel completed.
    pub done: Nanos,
}

impl Job {
    /// Release to completion.
    pub fn latency(&self) -> Nanos {
        self.done - self.release
    }
}

/// The jobs released and not yet done, each by its id (its kernels' tag).
#[derive(Debug, Default)]
pub struct JobTracker {
    /// Open jobs: id → (release, kernels left).
    open: BTreeMap<u64, (Nanos, u32)>,
}

impl JobTracker {
    /// Job `id` of `kernels` kernels was released at `at`.
    pub fn release(&mut self, id: u64, at: Nanos, kernels: u32) {
        self.open.insert(id, (at, kernels));
    }

    /// One of job `id`'s kernels completed at `at`: the job, if that was its last. Kernels
    /// of unknown jobs are ignored.
    pub fn complete(&mut self, id: u64, at: Nanos) -> Option<Job> {
        let (release, left) = self.open.get_mut(&id)?;
        *left -= 1;
        if *left > 0 {
            return None;
        }
        let release = *release;
        self.open.remove(&id);
        Some(Job { release, done: at })
    }

    /// How many jobs are open.
    pub fn open(&self) -> usize {
        self.open.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_is_done_with_its_last_kernel() {
        let mut t = JobTracker::default();
        t.release(7, Nanos(100), 2);
        t.release(8, Nanos(150), 1);
        assert_eq!(t.open(), 2);
        assert_eq!(t.complete(7, Nanos(200)), None);
        assert_eq!(
            t.complete(8, Nanos(260)),
            Some(Job {
                release: Nanos(150),
                done: Nanos(260)
            })
        );
        let j = t.complete(7, Nanos(300)).unwrap();
        assert_eq!(j.latency(), Nanos(200));
        assert_eq!(t.open(), 0);
        assert_eq!(t.complete(9, Nanos(400)), None);
    }
}
