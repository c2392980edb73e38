//! A seeded mix of stream work for soak and chaos runs: numbered kernels on several streams,
//! cross-stream dependencies (`cuEventRecord` on one stream, `cuStreamWaitEvent` on another,
//! then a stream-ordered copy that reads the first stream's progress), and host
//! synchronizations, in an order drawn from a seed.
//!
//! The [`Plan`] is a pure function of its seed and length, so the program that runs it (the
//! `mix` scenario) and the checker that reads the fake driver's log afterwards ([`check`])
//! agree on what was submitted without passing anything but the seed.
//!
//! A plan has 2 to 4 streams, each blocking or non-blocking, and begins with one kernel on
//! every stream; kernels are `append_tag(log_s, counter_s, tag)` with tags numbered from 0 in
//! plan order, so stream `s`'s log must end as the tags launched on it, in order, once each.

pub mod check;

/// One step of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// `append_tag(log[stream], counter[stream], tag)` on `stream`.
    Launch {
        /// The plan's stream index.
        stream: usize,
        /// The kernel's number.
        tag: i32,
    },
    /// Record the event of `from` on `from`, make `to` wait for it, then copy `from`'s counter
    /// into snapshot `copy` on `to`: the copy must see at least `before` kernels of `from`
    /// done, `after_tag` (the last kernel launched on `from` before the record) among them.
    Depend {
        /// The stream waited for.
        from: usize,
        /// The stream that waits.
        to: usize,
        /// The snapshot's index (copies are numbered in plan order).
        copy: usize,
        /// Kernels launched on `from` before the record.
        before: i32,
        /// The last of them.
        after_tag: i32,
    },
    /// `cuStreamSynchronize(stream)`.
    Sync {
        /// The plan's stream index.
        stream: usize,
    },
}

/// What a run of the mix does, from its seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The seed it was drawn from.
    pub seed: u64,
    /// Per stream: created with `CU_STREAM_NON_BLOCKING`.
    pub nonblocking: Vec<bool>,
    /// The steps, in submission order.
    pub steps: Vec<Step>,
}

/// A small xorshift generator: the same seed gives the same plan (and, in the fleets that
/// run these programs, the same run).
pub struct Rng(pub u64);

impl Rng {
    /// The next number below `n` (0 for `n` = 0).
    pub fn below(&mut self, n: u64) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x % n.max(1)
    }

    fn index(&mut self, n: usize) -> usize {
        usize::try_from(self.below(n as u64)).unwrap_or(0)
    }
}

impl Plan {
    /// The plan of `steps` steps (at least one kernel per stream) drawn from `seed`.
    pub fn new(seed: u64, steps: usize) -> Plan {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let streams = 2 + rng.index(3);
        let nonblocking: Vec<bool> = (0..streams).map(|_| rng.below(2) == 1).collect();
        let (mut tag, mut copies) = (0i32, 0usize);
        // Per stream: kernels launched so far, and the last one's tag.
        let mut launched = vec![(0i32, -1i32); streams];
        let mut out = Vec::with_capacity(steps.max(streams));
        let mut next = 0;
        while out.len() < steps.max(streams) {
            // One kernel on every stream first, then a random mix.
            let roll = if next < streams { 0 } else { rng.below(100) };
            if roll < 70 {
                let stream = if next < streams {
                    next
                } else {
                    rng.index(streams)
                };
                next += 1;
                out.push(Step::Launch { stream, tag });
                launched[stream] = (launched[stream].0 + 1, tag);
                tag += 1;
            } else if roll < 92 {
                let from = rng.index(streams);
                let to = (from + 1 + rng.index(streams - 1)) % streams;
                let (before, after_tag) = launched[from];
                out.push(Step::Depend {
                    from,
                    to,
                    copy: copies,
                    before,
                    after_tag,
                });
                copies += 1;
            } else {
                out.push(Step::Sync {
                    stream: rng.index(streams),
                });
            }
        }
        Plan {
            seed,
            nonblocking,
            steps: out,
        }
    }

    /// How many streams the plan uses.
    pub fn streams(&self) -> usize {
        self.nonblocking.len()
    }

    /// The tags launched on `stream`, in order: what its log must hold at the end.
    pub fn tags(&self, stream: usize) -> Vec<i32> {
        launched_view(&self.steps, stream)
    }

    /// How many copies (dependencies) the plan makes.
    pub fn copies(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, Step::Depend { .. }))
            .count()
    }

    /// How many kernels the plan launches.
    pub fn kernels(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, Step::Launch { .. }))
            .count()
    }
}

/// The tags launched on `stream` by `steps`.
fn launched_view(steps: &[Step], stream: usize) -> Vec<i32> {
    steps
        .iter()
        .filter_map(|s| match s {
            Step::Launch { stream: s, tag } if *s == stream => Some(*tag),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_is_a_function_of_its_seed() {
        assert_eq!(Plan::new(7, 300), Plan::new(7, 300));
        assert_ne!(Plan::new(7, 300), Plan::new(8, 300));
    }

    #[test]
    fn a_plan_mixes_every_kind_of_step_and_numbers_its_kernels() {
        let plan = Plan::new(3, 500);
        assert_eq!(plan.steps.len(), 500);
        assert!((2..=4).contains(&plan.streams()));
        // One kernel on each stream first, so every stream appears in the driver's log.
        for (i, step) in plan.steps.iter().take(plan.streams()).enumerate() {
            assert!(matches!(step, Step::Launch { stream, .. } if *stream == i));
        }
        assert!(plan.copies() > 50 && plan.kernels() > 250, "{plan:?}");
        assert!(plan.steps.iter().any(|s| matches!(s, Step::Sync { .. })));
        let mut all: Vec<i32> = (0..plan.streams()).flat_map(|s| plan.tags(s)).collect();
        all.sort_unstable();
        assert_eq!(
            all,
            (0..i32::try_from(plan.kernels()).unwrap()).collect::<Vec<_>>()
        );
        for step in &plan.steps {
            if let Step::Depend {
                from,
                to,
                before,
                after_tag,
                ..
            } = *step
            {
                assert_ne!(from, to);
                assert!(before >= 1);
                assert!(plan.tags(from).contains(&after_tag));
            }
        }
    }
}
