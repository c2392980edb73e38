//! Decision latencies: a Prometheus histogram for scraping, and the recent ones for
//! percentiles in `baton doctor`/`top`.

use std::collections::VecDeque;
use std::time::Duration;

use baton_core::{Nanos, percentile};
use baton_protocol::{LatencySummary, MAX_DURATION_NS};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

/// How many recent latencies percentiles are computed over.
const RECENT: usize = 4096;

/// Latencies of decisions: from the first event of a round arriving to its operations being
/// handed to the agents' writers.
pub(crate) struct Latencies {
    histogram: Histogram,
    recent: VecDeque<u64>,
}

impl Latencies {
    pub(crate) fn new() -> Latencies {
        Latencies {
            // 1 µs to ~0.5 s.
            histogram: Histogram::new(exponential_buckets(1e-6, 2.0, 20)),
            recent: VecDeque::with_capacity(RECENT),
        }
    }

    pub(crate) fn record(&mut self, d: Duration) {
        let ns = u64::try_from(d.as_nanos())
            .unwrap_or(u64::MAX)
            .min(MAX_DURATION_NS);
        self.histogram.observe(d.as_secs_f64());
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back(ns);
    }

    /// A handle on the histogram (shares its counts).
    pub(crate) fn histogram(&self) -> Histogram {
        self.histogram.clone()
    }

    /// Median, 99th percentile (nearest rank, [`percentile`]) and maximum of the recent
    /// latencies.
    pub(crate) fn summary(&self) -> LatencySummary {
        let mut v: Vec<Nanos> = self.recent.iter().copied().map(Nanos).collect();
        if v.is_empty() {
            return LatencySummary::default();
        }
        v.sort_unstable();
        LatencySummary {
            p50_ns: percentile(&v, 0.5).0,
            p99_ns: percentile(&v, 0.99).0,
            max_ns: v[v.len() - 1].0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_recent_latencies() {
        let mut l = Latencies::new();
        assert_eq!(l.summary(), LatencySummary::default());
        for us in 1..=100 {
            l.record(Duration::from_micros(us));
        }
        let s = l.summary();
        assert_eq!(s.max_ns, 100_000);
        // Nearest rank: the 50th and the 99th of the 100 samples.
        assert_eq!(s.p50_ns, 50_000, "{s:?}");
        assert_eq!(s.p99_ns, 99_000, "{s:?}");
    }
}
