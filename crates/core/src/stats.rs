//! Statistics over recorded spans: the one percentile rule every report uses.

use crate::Nanos;

/// The `q`-th percentile (`q` from 0.0 to 1.0, clamped) of `sorted`, which must be in
/// ascending order.
///
/// The rule is the nearest rank: the value at rank `⌈q × n⌉` (1-based) of the `n` samples,
/// never below the first; no interpolation, so the result is always one of the samples. With
/// 100 samples `1..=100`, p50 is 50, p99 is 99 and p100 is 100. Zero when there are no
/// samples.
#[expect(
    clippy::cast_possible_truncation,
    reason = "the rank is clamped to 1..=len; float-to-int casts saturate"
)]
pub fn percentile(sorted: &[Nanos], q: f64) -> Nanos {
    if sorted.is_empty() {
        return Nanos::ZERO;
    }
    let rank = (q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_of_a_hundred_samples() {
        let v: Vec<Nanos> = (1..=100).map(Nanos).collect();
        assert_eq!(percentile(&v, 0.5), Nanos(50));
        assert_eq!(percentile(&v, 0.99), Nanos(99));
        assert_eq!(percentile(&v, 0.999), Nanos(100));
        assert_eq!(percentile(&v, 1.0), Nanos(100));
        assert_eq!(percentile(&v, 0.0), Nanos(1));
        assert_eq!(percentile(&v, 0.001), Nanos(1));
    }

    #[test]
    fn few_samples_and_none() {
        assert_eq!(percentile(&[], 0.5), Nanos::ZERO);
        assert_eq!(percentile(&[Nanos(7)], 0.99), Nanos(7));
        let two = [Nanos(10), Nanos(20)];
        assert_eq!(percentile(&two, 0.5), Nanos(10));
        assert_eq!(percentile(&two, 0.51), Nanos(20));
        // Four samples: p50 is rank 2, p75 rank 3, p99 rank 4.
        let four = [Nanos(1), Nanos(2), Nanos(3), Nanos(4)];
        assert_eq!(percentile(&four, 0.5), Nanos(2));
        assert_eq!(percentile(&four, 0.75), Nanos(3));
        assert_eq!(percentile(&four, 0.99), Nanos(4));
    }

    #[test]
    fn out_of_range_and_odd_quantiles_are_clamped() {
        let v: Vec<Nanos> = (1..=10).map(Nanos).collect();
        assert_eq!(percentile(&v, -1.0), Nanos(1));
        assert_eq!(percentile(&v, 7.0), Nanos(10));
        assert_eq!(percentile(&v, f64::INFINITY), Nanos(10));
        // NaN clamps to NaN, whose rank casts to 0, then clamps to the first sample.
        assert_eq!(percentile(&v, f64::NAN), Nanos(1));
    }

    #[test]
    fn always_one_of_the_samples_and_monotone_in_q() {
        let v: Vec<Nanos> = [3, 3, 8, 13, 21, 34, 55, 89].map(Nanos).to_vec();
        let mut last = Nanos::ZERO;
        for i in 0..=100 {
            let p = percentile(&v, f64::from(i) / 100.0);
            assert!(v.contains(&p), "{p:?}");
            assert!(p >= last);
            last = p;
        }
    }
}
