//! What the benchmarks that compare the node with a direct call share.

use std::time::{Duration, Instant};

/// Medians of `iterations` timings of `direct` and `node`, run alternately (after `warmup`
/// rounds) so that both see the same machine.
pub fn interleaved_medians(
    warmup: usize,
    iterations: usize,
    mut direct: impl FnMut(),
    mut node: impl FnMut(),
) -> (Duration, Duration) {
    for _ in 0..warmup {
        direct();
        node();
    }
    let mut direct_samples = Vec::with_capacity(iterations);
    let mut node_samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let started = Instant::now();
        direct();
        direct_samples.push(started.elapsed());
        let started = Instant::now();
        node();
        node_samples.push(started.elapsed());
    }
    (median(direct_samples), median(node_samples))
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
