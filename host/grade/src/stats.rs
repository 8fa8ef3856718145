//! The arithmetic of trials: pass rates with 95 % intervals, the difference of two rates with
//! its interval, and pass^k. Shared by `pome run` (a suite's table), `pome compare` and the
//! dashboard's comparison, so every door says the same numbers.
//!
//! Why these estimators: eval suites run few trials (3 to 10 a task), where the textbook
//! normal interval collapses to [1, 1] at 3/3 and leaves [0, 1]; Wilson's score interval stays
//! honest at small n and at 0 % and 100 %. The difference uses Newcombe's hybrid score method
//! (his method 10), built from the two Wilson intervals, for the same reason.

use serde::Serialize;

/// z for a two-sided 95 % interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// A proportion and its 95 % interval, all in 0..=1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rate {
    pub passed: u64,
    pub trials: u64,
    pub rate: f64,
    pub low: f64,
    pub high: f64,
}

impl Rate {
    /// `passed` of `trials`, with Wilson's score interval. No trials: rate 0 in [0, 1].
    pub fn of(passed: u64, trials: u64) -> Rate {
        let (low, high) = wilson(passed, trials);
        let rate = if trials == 0 { 0.0 } else { passed as f64 / trials as f64 };
        Rate { passed, trials, rate, low, high }
    }
}

/// Wilson's score interval for `passed` of `trials` at 95 %.
pub fn wilson(passed: u64, trials: u64) -> (f64, f64) {
    if trials == 0 {
        return (0.0, 1.0);
    }
    let n = trials as f64;
    let p = passed as f64 / n;
    let z2 = Z95 * Z95;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z95 / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// The difference `b − a` of two rates, with its 95 % interval (Newcombe's hybrid score).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Difference {
    pub delta: f64,
    pub low: f64,
    pub high: f64,
    /// The interval excludes zero: the change is beyond what noise explains at 95 %.
    pub beyond_noise: bool,
}

/// How `b` differs from `a`.
pub fn difference(a: Rate, b: Rate) -> Difference {
    let delta = b.rate - a.rate;
    let low = delta - ((b.rate - b.low).powi(2) + (a.high - a.rate).powi(2)).sqrt();
    let high = delta + ((b.high - b.rate).powi(2) + (a.rate - a.low).powi(2)).sqrt();
    let (low, high) = (low.max(-1.0), high.min(1.0));
    let beyond_noise = a.trials > 0 && b.trials > 0 && (low > 0.0 || high < 0.0);
    Difference { delta, low, high, beyond_noise }
}

/// pass^k (τ-bench): the chance that k fresh trials all pass, estimated without bias from n
/// trials with c passes as C(c, k) / C(n, k).
pub fn pass_hat_k(n: u64, c: u64, k: u64) -> f64 {
    fn choose(n: u64, k: u64) -> f64 {
        if k > n {
            return 0.0;
        }
        (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (k - i) as f64)
    }
    if k > n || n == 0 { 0.0 } else { choose(c, k) / choose(n, k) }
}

/// The median of some durations (the lower middle for an even count); `None` for none.
pub fn median(values: &mut [u64]) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    Some(values[(values.len() - 1) / 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-4
    }

    #[test]
    fn wilson_matches_the_published_intervals() {
        // Newcombe (1998), table I: 81/263 → 0.2553–0.3662; 15/148 → 0.0624–0.1605;
        // 0/20 → 0–0.1611; 1/29 → 0.0061–0.1718.
        for (x, n, lo, hi) in [(81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611), (1, 29, 0.0061, 0.1718)] {
            let (l, h) = wilson(x, n);
            assert!(close(l, lo) && close(h, hi), "{x}/{n}: got {l:.4}–{h:.4}, want {lo}–{hi}");
        }
    }

    #[test]
    fn three_of_three_is_not_certainty() {
        let r = Rate::of(3, 3);
        assert_eq!(r.rate, 1.0);
        assert!(r.low < 0.5 && r.high == 1.0, "{r:?}");
        assert_eq!(Rate::of(0, 0), Rate { passed: 0, trials: 0, rate: 0.0, low: 0.0, high: 1.0 });
    }

    #[test]
    fn newcombe_difference_matches_the_published_example() {
        // Newcombe (1998b), example (a): 56/70 − 48/80 = 0.2000, method 10: 0.0524 to 0.3339.
        let d = difference(Rate::of(48, 80), Rate::of(56, 70));
        assert!(close(d.delta, 0.2) && close(d.low, 0.0524) && close(d.high, 0.3339), "{d:?}");
        assert!(d.beyond_noise);
    }

    #[test]
    fn a_small_change_on_few_trials_is_noise() {
        let d = difference(Rate::of(2, 3), Rate::of(3, 3));
        assert!(d.delta > 0.0 && d.low < 0.0 && !d.beyond_noise, "{d:?}");
        let d = difference(Rate::of(0, 10), Rate::of(10, 10));
        assert!(d.beyond_noise && d.low > 0.0);
        let d = difference(Rate::of(10, 10), Rate::of(0, 10));
        assert!(d.beyond_noise && d.high < 0.0);
    }

    #[test]
    fn pass_hat_k_is_the_chance_that_k_fresh_trials_all_pass() {
        assert_eq!(pass_hat_k(3, 3, 3), 1.0);
        assert_eq!(pass_hat_k(3, 2, 3), 0.0);
        assert!((pass_hat_k(4, 2, 1) - 0.5).abs() < 1e-9);
        assert!((pass_hat_k(4, 3, 2) - 0.5).abs() < 1e-9, "C(3,2)/C(4,2)");
        assert_eq!(pass_hat_k(0, 0, 1), 0.0);
    }

    #[test]
    fn the_median_of_an_even_count_is_the_lower_middle() {
        assert_eq!(median(&mut [5, 1, 3, 9]), Some(3));
        assert_eq!(median(&mut [7]), Some(7));
        assert_eq!(median(&mut []), None);
    }
}
