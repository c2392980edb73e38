//! The two clients' workloads, drawn deterministically from the scenario's seed, and what
//! they measure.

use baton_core::Nanos;
use baton_sim::{Completion, SimCommand};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::{JobTracker, Scenario, SpanRange};

fn draw(rng: &mut SmallRng, r: SpanRange) -> Nanos {
    Nanos(rng.random_range(r.low.0..=r.high.0))
}

fn rng_for(seed: u64, stream: u64, id: u64) -> SmallRng {
    // Distinct, reproducible streams of draws per client and per request.
    SmallRng::seed_from_u64(
        seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ id.wrapping_mul(0xD1B5_4A32_D192_ED03),
    )
}

/// The HP request released at `period × id`: `hp_kernels` kernels tagged `id`.
pub(crate) fn hp_request(sc: &Scenario, id: u64) -> Vec<SimCommand> {
    let mut rng = rng_for(sc.seed, 1, id);
    (0..sc.hp_kernels)
        .map(|_| SimCommand::kernel(draw(&mut rng, sc.hp_kernel), sc.hp_sms).with_tag(id))
        .collect()
}

/// BE kernel number `id`, tagged `id`.
pub(crate) fn be_kernel(sc: &Scenario, id: u64) -> SimCommand {
    let mut rng = rng_for(sc.seed, 2, id);
    SimCommand::kernel(draw(&mut rng, sc.be_kernel), sc.be_sms).with_tag(id)
}

/// Follows HP requests from release to their last kernel's completion.
#[derive(Debug, Default)]
pub(crate) struct HpTracker {
    requests: JobTracker,
    pub(crate) latencies: Vec<Nanos>,
}

impl HpTracker {
    pub(crate) fn released(&mut self, id: u64, at: Nanos, kernels: u32) {
        self.requests.release(id, at, kernels);
    }

    pub(crate) fn completed(&mut self, c: &Completion) {
        if let Some(job) = self.requests.complete(c.tag, c.ended_at) {
            self.latencies.push(job.latency());
        }
    }

    pub(crate) fn outstanding(&self) -> usize {
        self.requests.open()
    }
}

/// Counts BE work completed within the phase.
#[derive(Debug, Default)]
pub(crate) struct BeTracker {
    pub(crate) completed: u64,
}

impl BeTracker {
    pub(crate) fn completed(&mut self, c: &Completion, end: Nanos) {
        if c.ended_at <= end {
            self.completed += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_reproducible_and_within_range() {
        let sc = Scenario::default();
        assert_eq!(hp_request(&sc, 7), hp_request(&sc, 7));
        assert_ne!(hp_request(&sc, 7), hp_request(&sc, 8));
        for c in hp_request(&sc, 3) {
            assert!(c.duration >= sc.hp_kernel.low && c.duration <= sc.hp_kernel.high);
            assert_eq!(c.tag, 3);
        }
        let k = be_kernel(&sc, 11);
        assert_eq!(k, be_kernel(&sc, 11));
        assert!(k.duration >= sc.be_kernel.low && k.duration <= sc.be_kernel.high);
    }
}
