//! What a lab run measured, and the statistics tests and plots need.

use baton_core::{Nanos, percentile};
use baton_scheduler::OpRecord;
use serde_json::{Value, json};

use crate::Job;

/// One client's measurements.
#[derive(Clone, Debug)]
pub struct ClientResult {
    /// Its name.
    pub name: String,
    /// Its process.
    pub pid: u32,
    /// Its XQueue, if it was scheduled.
    pub queue: Option<baton_core::XQueueId>,
    /// Its deadline, if it had one.
    pub deadline: Option<Nanos>,
    /// Finished jobs, in completion order.
    pub jobs: Vec<Job>,
    /// Jobs released but unfinished at the end.
    pub open_jobs: usize,
    /// Kernel work completed (each kernel's duration alone).
    pub work: Nanos,
    /// Cumulative work at each sample time.
    pub work_series: Vec<Nanos>,
    /// Time its context had kernels on SMs (shared with others in a shared context).
    pub context_busy: Nanos,
}

impl ClientResult {
    /// Job latencies, ascending.
    pub fn latencies(&self) -> Vec<Nanos> {
        let mut l: Vec<Nanos> = self.jobs.iter().map(Job::latency).collect();
        l.sort_unstable();
        l
    }

    /// The `q`-quantile (0..=1) job latency, by nearest rank; zero without jobs.
    pub fn latency(&self, q: f64) -> Nanos {
        percentile(&self.latencies(), q)
    }

    /// The mean job latency.
    pub fn mean_latency(&self) -> Nanos {
        let n = self.jobs.len() as u64;
        Nanos(self.jobs.iter().map(|j| j.latency().0).sum::<u64>() / n.max(1))
    }

    /// Jobs that finished later than the deadline, plus unfinished ones already past it at `end`.
    pub fn deadline_misses(&self) -> usize {
        self.deadline
            .map_or(0, |d| self.jobs.iter().filter(|j| j.latency() > d).count())
    }
}

/// Everything a run measured.
#[derive(Clone, Debug)]
pub struct LabResult {
    /// The run's length.
    pub duration: Nanos,
    /// Per client, in the order given.
    pub clients: Vec<ClientResult>,
    /// Sample times of the work series.
    pub samples: Vec<Nanos>,
    /// Every suspend and resume the scheduler applied.
    pub ops: Vec<OpRecord>,
    /// The policy's counters at the end.
    pub counters: Vec<(&'static str, u64)>,
    /// Decisions taken.
    pub decisions: u64,
    /// Suspensions overridden by priority inheritance.
    pub inherited: u64,
}

impl LabResult {
    /// The client called `name`.
    ///
    /// # Panics
    /// If there is none (a test's typo).
    pub fn client(&self, name: &str) -> &ClientResult {
        self.clients
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no client {name}"))
    }

    /// Each client's share of all work completed (0..=1), in client order.
    pub fn work_shares(&self) -> Vec<f64> {
        let total: u64 = self.clients.iter().map(|c| c.work.0).sum();
        self.clients
            .iter()
            .map(|c| c.work.0 as f64 / total.max(1) as f64)
            .collect()
    }

    /// The policy counter `name`, if it reported one.
    pub fn counter(&self, name: &str) -> Option<u64> {
        self.counters
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }

    /// The run as JSON for plots: per client, its work series (ms of work per sample) and its
    /// jobs as `[release_ms, latency_ms]` (every k-th job past 2000, to keep files small).
    pub fn to_json(&self) -> Value {
        let ms = |n: Nanos| n.0 as f64 / 1e6;
        json!({
            "duration_ms": ms(self.duration),
            "samples_ms": self.samples.iter().map(|t| ms(*t)).collect::<Vec<_>>(),
            "decisions": self.decisions,
            "inherited": self.inherited,
            "counters": self.counters.iter().map(|(n, v)| json!({"name": n, "value": v})).collect::<Vec<_>>(),
            "clients": self.clients.iter().zip(self.work_shares()).map(|(c, share)| json!({
                "name": c.name,
                "pid": c.pid,
                "work_share": share,
                "work_ms": c.work_series.iter().map(|w| ms(*w)).collect::<Vec<_>>(),
                "jobs": c.jobs.iter().step_by(c.jobs.len().div_ceil(2000).max(1)).map(|j| [ms(j.release), ms(j.latency())]).collect::<Vec<_>>(),
                "p50_ms": ms(c.latency(0.5)),
                "p99_ms": ms(c.latency(0.99)),
                "deadline_misses": c.deadline_misses(),
            })).collect::<Vec<_>>(),
        })
    }
}
