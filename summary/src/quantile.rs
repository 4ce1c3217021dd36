//! Samples and their nearest-rank percentiles, as swactor's post-processor computes them (the
//! smallest value with at least p% of the samples at or below it). Written here: it is a few
//! lines, and the summary must match the post-processor's definition exactly.
//!
//! Samples are kept as a count per distinct value (RTTs are whole milliseconds, so a long run's
//! samples of one pair take a few hundred entries, not one per probe); percentiles are exact.

/// A set of integer samples (milliseconds).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Samples {
    /// (value, how many samples have it), by value.
    counts: Vec<(u64, u64)>,
    len: usize,
}

impl Samples {
    /// Adds a sample.
    pub fn push(&mut self, v: u64) {
        match self.counts.binary_search_by_key(&v, |(x, _)| *x) {
            Ok(i) => self.counts[i].1 += 1,
            Err(i) => self.counts.insert(i, (v, 1)),
        }
        self.len += 1;
    }

    /// How many samples.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The nearest-rank percentile `p` (0 < p ≤ 100), `None` without samples.
    pub fn percentile(&self, p: u32) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        let n = self.len as u64;
        let rank = (u64::from(p) * n).div_ceil(100).clamp(1, n);
        let mut seen = 0;
        for (v, c) in &self.counts {
            seen += c;
            if seen >= rank {
                return Some(*v);
            }
        }
        self.counts.last().map(|(v, _)| *v)
    }

    /// The distinct values and how many samples have each, by value.
    pub fn counts(&self) -> &[(u64, u64)] {
        &self.counts
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
        let repeated = of(&[9, 1, 9, 9, 1, 5]);
        assert_eq!(repeated.len(), 6);
        assert_eq!(repeated.counts(), &[(1, 2), (5, 1), (9, 3)]);
        assert_eq!(repeated.percentile(33), Some(1));
        assert_eq!(repeated.percentile(34), Some(5));
        assert_eq!(repeated.percentile(50), Some(5));
        assert_eq!(repeated.percentile(51), Some(9));
    }
}
