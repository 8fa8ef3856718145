//! Time as twins see it. `wasi:clocks` in a twin reads the sandbox's virtual clock, so these
//! are deterministic under replay.

use chrono::{DateTime, SecondsFormat, Utc};

/// Now, on the virtual clock.
pub fn now() -> DateTime<Utc> {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    DateTime::from_timestamp(d.as_secs() as i64, d.subsec_nanos()).unwrap_or_default()
}

/// Unix seconds now.
pub fn now_unix() -> i64 {
    now().timestamp()
}

/// `2026-01-01T00:00:00Z`, the ISO 8601 form GitHub and most REST APIs use.
pub fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// ISO 8601 of now.
pub fn now_iso() -> String {
    iso(now())
}

/// Parse an ISO 8601 timestamp (`2026-01-01T00:00:00Z` or with an offset).
pub fn parse_iso(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s).ok().map(|t| t.with_timezone(&Utc))
}

/// The civil date (year, month, day, UTC) of Unix seconds `unix`, by plain arithmetic (Howard
/// Hinnant's days-to-civil): defined for every `i64`, where chrono stops at year 262,143.
pub fn civil_date(unix: i64) -> (i64, i64, i64) {
    let z = unix.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}
