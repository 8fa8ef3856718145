//! Linear's rate limits, per credential, over the sandbox's virtual clock.
//!
//! Linear (linear.app/developers/rate-limiting) limits each credential twice, both as leaky
//! buckets refilled at a constant `LIMIT / PERIOD`: requests (5,000 an hour for an API key and
//! for an OAuth app's user) and complexity points (3,000,000 an hour for an API key, 2,000,000
//! for an OAuth app). A request past either is refused with `RATELIMITED` (HTTP 400) and spends
//! nothing. The `X-RateLimit-*` headers and the `rateLimitStatus` query read the same bucket.
//!
//! Levels are kept exactly, in integers: a bucket holds `remaining × PERIOD_US` units and gains
//! `limit` units per microsecond, so no refill is lost to rounding however often it is read,
//! and a replay at the same virtual times computes the same figures.

use serde::{Deserialize, Serialize};

/// Linear's window: an hour, in microseconds (the buckets' clock) and milliseconds (`period`).
const PERIOD_US: i64 = 3_600_000_000;
pub const PERIOD_MS: i64 = 3_600_000;

/// Which of Linear's limits a credential gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ApiKey,
    OAuth,
}

impl Kind {
    /// Requests an hour.
    pub fn requests(self) -> i64 {
        5_000
    }

    /// Complexity points an hour.
    pub fn complexity(self) -> i64 {
        match self {
            Kind::ApiKey => 3_000_000,
            Kind::OAuth => 2_000_000,
        }
    }

    /// `RateLimitPayload.kind`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::ApiKey => "api key",
            Kind::OAuth => "oauth app",
        }
    }
}

/// The credential a request spends: the agent's token, or a key from the seed's `tokens`, with
/// its hourly limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Credential {
    pub key: String,
    pub kind: Kind,
    pub requests: i64,
    pub complexity: i64,
}

impl Credential {
    /// Linear's limits for `kind`, or the world's raised ones (seed `rateLimits`: what Linear
    /// support grants on request).
    pub fn new(key: String, kind: Kind, raised: Option<Raised>) -> Self {
        let (requests, complexity) = match raised {
            Some(r) => (r.requests, r.complexity),
            None => (kind.requests(), kind.complexity()),
        };
        Credential { key, kind, requests, complexity }
    }
}

/// Hourly limits a seed raises (or lowers) for every credential of its world.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Raised {
    pub requests: i64,
    pub complexity: i64,
}

/// The largest hourly limit a seed may set: a bucket's units (`limit × PERIOD_US`) fit an i64.
pub const MAX_RAISED: i64 = 1_000_000_000;

/// One credential's two buckets, as units left (`remaining × PERIOD_US`) at `at_us`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    key: String,
    requests: i64,
    complexity: i64,
    at_us: i64,
}

/// Every credential's buckets, in the order first seen (a sandbox uses one or two).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Buckets(Vec<Bucket>);

impl PartialEq for Buckets {
    /// Bookkeeping: two worlds with equal entities are equal whatever their callers spent.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// What one limit stands at after a request: the figures the headers and `rateLimitStatus` give.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Level {
    pub limit: i64,
    pub remaining: i64,
    /// Unix milliseconds at which the bucket is full again.
    pub reset_ms: i64,
}

/// Both limits of a credential, and what the request asked of each.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Status {
    pub kind: Kind,
    pub requests: Level,
    pub complexity: Level,
    /// The request's complexity points (Linear rounds them up).
    pub points: i64,
}

fn level(limit: i64, units: i64, now_us: i64) -> Level {
    let missing = limit * PERIOD_US - units;
    // Full again once `missing` units have dripped in at `limit` a microsecond.
    let reset_us = now_us + (missing + limit - 1) / limit;
    Level { limit, remaining: units / PERIOD_US, reset_ms: reset_us.div_euclid(1000) }
}

impl Buckets {
    /// `cred`'s bucket refilled to `now_us` (made full when first seen).
    fn refilled(&mut self, cred: &Credential, now_us: i64) -> &mut Bucket {
        let at = match self.0.iter().position(|b| b.key == cred.key) {
            Some(at) => at,
            None => {
                self.0.push(Bucket { key: cred.key.clone(), requests: cred.requests * PERIOD_US, complexity: cred.complexity * PERIOD_US, at_us: now_us });
                self.0.len() - 1
            }
        };
        let b = &mut self.0[at];
        // A clock that went back (a restored world) refills nothing.
        let elapsed = now_us.saturating_sub(b.at_us).max(0);
        b.requests = b.requests.saturating_add(elapsed.saturating_mul(cred.requests)).min(cred.requests * PERIOD_US);
        b.complexity = b.complexity.saturating_add(elapsed.saturating_mul(cred.complexity)).min(cred.complexity * PERIOD_US);
        b.at_us = b.at_us.max(now_us);
        b
    }

    /// Spend one request and `points` complexity points of `cred`'s buckets at `now_us`, or,
    /// when either has too few left, spend nothing: `Err` with the levels as they stand.
    pub fn spend(&mut self, cred: &Credential, now_us: i64, points: f64) -> Result<Status, Status> {
        let points = if points.is_finite() { points.max(0.0).ceil() as i64 } else { i64::MAX / PERIOD_US };
        let b = self.refilled(cred, now_us);
        let fits = b.requests >= PERIOD_US && b.complexity >= points.saturating_mul(PERIOD_US);
        if fits {
            b.requests -= PERIOD_US;
            b.complexity -= points * PERIOD_US;
        }
        let status = Status { kind: cred.kind, requests: level(cred.requests, b.requests, now_us), complexity: level(cred.complexity, b.complexity, now_us), points };
        if fits { Ok(status) } else { Err(status) }
    }

    /// Whether `cred` has a request left at `now_us`, and its levels (spending nothing).
    pub fn peek(&mut self, cred: &Credential, now_us: i64) -> (bool, Status) {
        let b = self.refilled(cred, now_us);
        let left = b.requests >= PERIOD_US;
        (left, Status { kind: cred.kind, requests: level(cred.requests, b.requests, now_us), complexity: level(cred.complexity, b.complexity, now_us), points: 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: Credential = Credential { key: String::new(), kind: Kind::ApiKey, requests: 5_000, complexity: 3_000_000 };

    #[test]
    fn requests_run_out_at_the_limit_and_drip_back_at_limit_per_period() {
        let mut b = Buckets::default();
        let t0 = 1_800_000_000_000_000;
        for n in 1..=5000 {
            let s = b.spend(&KEY, t0, 0.0).unwrap();
            assert_eq!(s.requests.remaining, 5000 - n);
        }
        let refused = b.spend(&KEY, t0, 0.0).unwrap_err();
        assert_eq!(refused.requests.remaining, 0);
        assert_eq!(refused.requests.reset_ms, t0 / 1000 + PERIOD_MS);
        // One request drips back every 720 ms (an hour / 5,000), not before.
        assert!(b.spend(&KEY, t0 + 719_999, 0.0).is_err());
        assert_eq!(b.spend(&KEY, t0 + 720_000, 0.0).unwrap().requests.remaining, 0);
        assert_eq!(b.peek(&KEY, t0 + 720_000 + PERIOD_US).1.requests.remaining, 5000);
    }

    #[test]
    fn complexity_is_spent_rounded_up_and_a_request_past_it_spends_nothing() {
        let mut b = Buckets::default();
        let oauth = Credential::new("app".into(), Kind::OAuth, None);
        let s = b.spend(&oauth, 0, 9_999.2).unwrap();
        assert_eq!((s.points, s.complexity.limit, s.complexity.remaining), (10_000, 2_000_000, 1_990_000));
        for _ in 0..199 {
            b.spend(&oauth, 0, 10_000.0).unwrap();
        }
        let refused = b.spend(&oauth, 0, 0.1).unwrap_err();
        assert_eq!((refused.complexity.remaining, refused.requests.remaining), (0, 4_800));
        // Another credential has its own buckets.
        assert_eq!(b.spend(&KEY, 0, 1.0).unwrap().complexity.remaining, 2_999_999);
    }
}
