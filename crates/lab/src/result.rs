//! What a lab run measured, and the statistics tests and plots need.

use baton_core::{Nanos, percentile};
use baton_scheduler::OpRecord;
use serde::{Deserialize, Serialize};

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
    /// A rank's busy-wait kernel time at its group's barrier (device time spent waiting).
    pub spin: Nanos,
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

    /// The run as a document for plots: per client, its work series (ms of work per sample)
    /// and its jobs as `[release_ms, latency_ms]` (every k-th job past 2000, to keep files
    /// small).
    pub fn summary(&self) -> LabSummary {
        let ms = |n: Nanos| n.0 as f64 / 1e6;
        LabSummary {
            schema: LabSummary::SCHEMA.into(),
            duration_ms: ms(self.duration),
            samples_ms: self.samples.iter().map(|t| ms(*t)).collect(),
            decisions: self.decisions,
            inherited: self.inherited,
            counters: self
                .counters
                .iter()
                .map(|(name, value)| CounterSummary {
                    name: (*name).to_string(),
                    value: *value,
                })
                .collect(),
            clients: self
                .clients
                .iter()
                .zip(self.work_shares())
                .map(|(c, work_share)| ClientSummary {
                    name: c.name.clone(),
                    pid: c.pid,
                    work_share,
                    work_ms: c.work_series.iter().map(|w| ms(*w)).collect(),
                    jobs: c
                        .jobs
                        .iter()
                        .step_by(c.jobs.len().div_ceil(2000).max(1))
                        .map(|j| [ms(j.release), ms(j.latency())])
                        .collect(),
                    p50_ms: ms(c.latency(0.5)),
                    p99_ms: ms(c.latency(0.99)),
                    deadline_misses: c.deadline_misses(),
                })
                .collect(),
        }
    }
}

/// A run as a document for plots ([`LabResult::summary`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LabSummary {
    /// [`LabSummary::SCHEMA`].
    pub schema: String,
    /// The run's length, ms.
    pub duration_ms: f64,
    /// Sample times of the work series, ms.
    pub samples_ms: Vec<f64>,
    /// Decisions taken.
    pub decisions: u64,
    /// Suspensions overridden by priority inheritance.
    pub inherited: u64,
    /// The policy's counters at the end.
    pub counters: Vec<CounterSummary>,
    /// Per client, in the order given.
    pub clients: Vec<ClientSummary>,
}

impl LabSummary {
    /// The document's schema.
    pub const SCHEMA: &'static str = "baton.lab/1";
}

/// One policy counter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterSummary {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: u64,
}

/// One client's part of a [`LabSummary`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClientSummary {
    /// Its name.
    pub name: String,
    /// Its process.
    pub pid: u32,
    /// Its share of all work completed (0..=1).
    pub work_share: f64,
    /// Cumulative work at each sample time, ms.
    pub work_ms: Vec<f64>,
    /// Jobs as `[release_ms, latency_ms]`, every k-th past 2000.
    pub jobs: Vec<[f64; 2]>,
    /// Median job latency, ms.
    pub p50_ms: f64,
    /// 99th-percentile job latency, ms.
    pub p99_ms: f64,
    /// Jobs that finished later than the deadline.
    pub deadline_misses: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Job;

    fn result() -> LabResult {
        let jobs: Vec<Job> = (0..4500u64)
            .map(|i| Job {
                release: Nanos::from_millis(i),
                done: Nanos::from_millis(i) + Nanos::from_micros(100 + i % 100),
            })
            .collect();
        LabResult {
            duration: Nanos::from_secs(5),
            clients: vec![
                ClientResult {
                    name: "hp".into(),
                    pid: 1,
                    queue: None,
                    deadline: Some(Nanos::from_micros(150)),
                    jobs,
                    open_jobs: 0,
                    work: Nanos::from_millis(300),
                    spin: Nanos::ZERO,
                    work_series: vec![Nanos::ZERO, Nanos::from_millis(300)],
                    context_busy: Nanos::from_millis(300),
                },
                ClientResult {
                    name: "be".into(),
                    pid: 2,
                    queue: None,
                    deadline: None,
                    jobs: Vec::new(),
                    open_jobs: 3,
                    work: Nanos::from_millis(100),
                    spin: Nanos::ZERO,
                    work_series: vec![Nanos::ZERO, Nanos::from_millis(100)],
                    context_busy: Nanos::from_millis(100),
                },
            ],
            samples: vec![Nanos::ZERO, Nanos::from_millis(100)],
            ops: Vec::new(),
            counters: vec![("boosts", 7)],
            decisions: 12,
            inherited: 1,
        }
    }

    #[test]
    fn the_summary_has_series_shares_and_thinned_jobs() {
        let s = result().summary();
        assert_eq!(s.schema, "baton.lab/1");
        assert_eq!(s.duration_ms, 5000.0);
        assert_eq!(s.samples_ms, [0.0, 100.0]);
        assert_eq!(
            s.counters,
            [CounterSummary {
                name: "boosts".into(),
                value: 7
            }]
        );
        let hp = &s.clients[0];
        assert_eq!((hp.work_share, s.clients[1].work_share), (0.75, 0.25));
        assert_eq!(hp.work_ms, [0.0, 300.0]);
        // 4500 jobs: every third is kept.
        assert_eq!(hp.jobs.len(), 1500);
        assert_eq!(hp.jobs[1], [3.0, 0.103]);
        assert_eq!((hp.p50_ms, hp.p99_ms), (0.149, 0.198));
        assert_eq!(hp.deadline_misses, 45 * 49);
        assert_eq!(s.clients[1].p99_ms, 0.0);
    }

    #[test]
    fn the_summary_keeps_its_keys_and_reads_back() {
        let s = result().summary();
        let v = serde_json::to_value(&s).unwrap();
        let keys = |v: &serde_json::Value| {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort_unstable();
            k
        };
        assert_eq!(
            keys(&v),
            [
                "clients",
                "counters",
                "decisions",
                "duration_ms",
                "inherited",
                "samples_ms",
                "schema"
            ]
        );
        assert_eq!(
            keys(&v["clients"][0]),
            [
                "deadline_misses",
                "jobs",
                "name",
                "p50_ms",
                "p99_ms",
                "pid",
                "work_ms",
                "work_share"
            ]
        );
        assert_eq!(
            v["counters"][0],
            serde_json::json!({"name": "boosts", "value": 7})
        );
        assert_eq!(serde_json::from_value::<LabSummary>(v).unwrap(), s);
    }
}
