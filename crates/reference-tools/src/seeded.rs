//! Seeded, reproducible randomness: a counter-based SplitMix64.
//!
//! Fault decisions must be reproducible from a seed, and must not depend on
//! how calls to *different* tools interleave. So each decision is a pure
//! function of (seed, tool, fault, call number of that tool): no shared RNG
//! state to race on, and a rerun with the same seed and the same per-tool call
//! sequence injects the same faults.

/// SplitMix64's finaliser: a bijective mix of 64 bits.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform number in `[0, 1)` for the given coordinates.
pub(crate) fn unit(seed: u64, coordinates: &[u64]) -> f64 {
    let h = coordinates.iter().fold(mix(seed), |h, &c| mix(h ^ c));
    // 53 high bits → an exactly representable fraction.
    (h >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_coordinates_same_number() {
        assert_eq!(unit(7, &[1, 2, 3]), unit(7, &[1, 2, 3]));
        assert_ne!(unit(7, &[1, 2, 3]), unit(8, &[1, 2, 3]));
    }

    #[test]
    fn numbers_are_in_range_and_roughly_uniform() {
        let n = 10_000;
        let below_half = (0..n).filter(|&i| unit(42, &[i]) < 0.5).count();
        assert!((4_500..5_500).contains(&below_half), "{below_half}");
        assert!((0..n).all(|i| (0.0..1.0).contains(&unit(42, &[i]))));
    }
}
