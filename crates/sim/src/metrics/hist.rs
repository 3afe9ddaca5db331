//! A log-linear histogram (HDR style) of non-negative integers, here
//! sojourn times in ns: 128 sub-buckets per power of two, so any percentile
//! is within 0.8% of the exact value, in constant memory however long the run.

const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;

#[derive(Clone, Debug, Default)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
}

fn index(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let e = 63 - v.leading_zeros() - SUB_BITS + 1; // shift that brings v into [SUB/2*2, 2*SUB)
    let mantissa = v >> e; // in [SUB/2, SUB) after the shift... kept in [64, 128)
    (e as u64 * (SUB / 2) + mantissa) as usize
}

/// Smallest value of bucket `i` and its width.
fn bucket_bounds(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < SUB {
        return (i, 1);
    }
    let e = (i - SUB / 2) / (SUB / 2);
    let mantissa = i - e * (SUB / 2);
    (mantissa << e, 1 << e)
}

impl Histogram {
    pub fn record(&mut self, v: u64) {
        let i = index(v);
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        self.total += 1;
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    /// Add another histogram's counts (the sojourn times of several links).
    pub fn merge(&mut self, other: &Histogram) {
        if other.counts.len() > self.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
    }

    /// The `q` quantile (0..=1), as the midpoint of its bucket; NaN when empty.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.total == 0 {
            return f64::NAN;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, w) = bucket_bounds(i);
                return lo as f64 + (w as f64 - 1.0) / 2.0;
            }
        }
        unreachable!()
    }

    /// Mean, p50, p95 and p99 of sojourn times recorded in ns, in ms: the
    /// queueing-delay columns of the summary and links tables (NaN when empty).
    pub fn qdelay_ms(&self) -> [f64; 4] {
        [
            self.mean() / 1e6,
            self.quantile(0.50) / 1e6,
            self.quantile(0.95) / 1e6,
            self.quantile(0.99) / 1e6,
        ]
    }

    pub fn mean(&self) -> f64 {
        if self.total == 0 {
            return f64::NAN;
        }
        let s: f64 = self
            .counts
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let (lo, w) = bucket_bounds(i);
                c as f64 * (lo as f64 + (w as f64 - 1.0) / 2.0)
            })
            .sum();
        s / self.total as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_equals_recording_everything_in_one() {
        let (mut a, mut b, mut all) = (
            Histogram::default(),
            Histogram::default(),
            Histogram::default(),
        );
        for v in [3u64, 900, 70_000, 5_000_000] {
            a.record(v);
            all.record(v);
        }
        for v in [12u64, 1_000_000_000] {
            b.record(v);
            all.record(v);
        }
        a.merge(&b);
        assert_eq!(a.count(), all.count());
        assert_eq!(a.mean(), all.mean());
        for q in [0.1, 0.5, 0.9, 1.0] {
            assert_eq!(a.quantile(q), all.quantile(q));
        }
    }

    #[test]
    fn buckets_cover_values_exactly_once() {
        for v in (0..5000u64).chain([1 << 20, (1 << 20) + 12345, 10_000_000_000]) {
            let (lo, w) = bucket_bounds(index(v));
            assert!(lo <= v && v < lo + w, "{v}: [{lo}, {})", lo + w);
            assert!(w as f64 <= (v as f64 / 64.0).max(1.0), "{v} width {w}");
        }
    }

    #[test]
    fn quantiles_are_within_a_percent() {
        let mut h = Histogram::default();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        for q in [0.5, 0.95, 0.99] {
            let exact = q * 100_000.0 * 1000.0;
            let got = h.quantile(q);
            assert!((got - exact).abs() / exact < 0.01, "q{q}: {got} vs {exact}");
        }
        assert!(h.quantile(0.0) >= 1000.0 * 0.99);
    }
}
