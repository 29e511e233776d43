//! What the main thread and the watchdog share about the runs so far: the
//! summary and the run times (the watchdog reports a hang with the counts
//! so far; the run loop adds to them).

use crate::report::Summary;
use std::time::Duration;

/// Run times in a fixed log-scale histogram (1% wide buckets from 100 ns to
/// about 1000 s), so that memory stays flat however many runs there are.
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
}

const H_MIN_NS: f64 = 100.0;
const H_STEP: f64 = 1.01;
const H_BUCKETS: usize = 2400;

impl Histogram {
    pub fn new() -> Histogram {
        Histogram { counts: vec![0; H_BUCKETS], total: 0 }
    }
    pub fn add(&mut self, d: Duration) {
        let ns = (d.as_nanos() as f64).max(H_MIN_NS);
        let b = ((ns / H_MIN_NS).ln() / H_STEP.ln()) as usize;
        self.counts[b.min(H_BUCKETS - 1)] += 1;
        self.total += 1;
    }
    /// The q-quantile (nearest rank) in µs, as the middle of its bucket.
    pub fn quantile_us(&self, q: f64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return H_MIN_NS * H_STEP.powf(i as f64 + 0.5) / 1e3;
            }
        }
        0.0
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

/// What the main thread and the watchdog share.
pub struct Tally {
    pub summary: Summary,
    pub times: Histogram,
}

impl Tally {
    pub fn finish(&mut self) -> Summary {
        let round = |us: f64| (us * 10.0).round() / 10.0;
        self.summary.median_us = round(self.times.quantile_us(0.5));
        self.summary.p99_us = round(self.times.quantile_us(0.99));
        self.summary.clone()
    }
}

