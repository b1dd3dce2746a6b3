//! Percentiles.

/// The value at fraction `p` (0..=1) of sorted `values`, nearest-rank; 0 for no values.
#[allow(
    clippy::cast_possible_truncation,
    reason = "a float-to-int `as` saturates and the rank is clamped to the slice"
)]
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
