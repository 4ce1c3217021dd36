//! Samples and their nearest-rank percentiles, as swactor's post-processor computes them (the
//! smallest value with at least p% of the samples at or below it). Written here: it is three lines,
//! and the summary must match the post-processor's definition exactly.

/// A set of integer samples (milliseconds).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Samples(Vec<u64>);

impl Samples {
    /// Adds a sample.
    pub fn push(&mut self, v: u64) {
        self.0.push(v);
    }

    /// How many samples.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The nearest-rank percentile `p` (0 < p ≤ 100), `None` without samples.
    pub fn percentile(&self, p: u32) -> Option<u64> {
        if self.0.is_empty() {
            return None;
        }
        let mut sorted = self.0.clone();
        sorted.sort_unstable();
        let n = sorted.len();
        let rank = (u64::from(p) * n as u64).div_ceil(100).max(1) as usize;
        sorted.get(rank.min(n) - 1).copied()
    }

    /// The samples, in the order they were added.
    pub fn values(&self) -> &[u64] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::Samples;

    fn of(v: &[u64]) -> Samples {
        let mut s = Samples::default();
        v.iter().for_each(|x| s.push(*x));
        s
    }

    #[test]
    fn nearest_rank_takes_the_smallest_value_covering_p_percent() {
        let s = of(&[15, 20, 35, 40, 50]);
        assert_eq!(s.percentile(30), Some(20));
        assert_eq!(s.percentile(40), Some(20));
        assert_eq!(s.percentile(50), Some(35));
        assert_eq!(s.percentile(100), Some(50));
        assert_eq!(of(&[7]).percentile(99), Some(7));
        assert_eq!(Samples::default().percentile(50), None);
    }
}
