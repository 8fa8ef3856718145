//! Linear's relative dates: an ISO-8601 duration (`P2W`, `-P1D`, `-PT12H`) wherever a
//! `DateTime` or `TimelessDate` is compared, read against the request's now (`-P1W` is a week
//! ago, `P1D` tomorrow), as Linear's filter documentation describes.

use chrono::{DateTime, Duration, Utc};

/// The signed seconds of an ISO-8601 duration (`-P2W1D` is −1,296,000; a year is 365 days
/// and a month 30): `None` when `s` is not written as a duration at all, an error when it
/// starts like one and is malformed.
pub fn duration_secs(s: &str) -> Option<Result<i64, String>> {
    let t = s.trim();
    let (sign, d) = match t.strip_prefix("-P") {
        Some(d) => (-1, d),
        None => (1, t.strip_prefix('P')?),
    };
    let (date, time) = d.split_once('T').unwrap_or((d, ""));
    let bad = || Err(format!("{s:?} is not an ISO-8601 duration"));
    if d.is_empty() {
        return Some(bad());
    }
    let mut secs = 0.0;
    for (part, units) in [(date, [('Y', 365 * 86400), ('M', 30 * 86400), ('W', 7 * 86400), ('D', 86400)]), (time, [('H', 3600), ('M', 60), ('S', 1), ('\0', 0)])] {
        let mut num = String::new();
        for c in part.chars() {
            if c.is_ascii_digit() || c == '.' {
                num.push(c);
                continue;
            }
            let Some((_, unit)) = units.iter().find(|(u, _)| *u == c) else { return Some(bad()) };
            let Ok(n) = num.parse::<f64>() else { return Some(bad()) };
            secs += n * *unit as f64;
            num.clear();
        }
        if !num.is_empty() {
            return Some(bad());
        }
    }
    Some(Ok(sign * secs as i64))
}

/// The instant a duration names relative to `now`, written as Linear writes a `DateTime`
/// (or, with `date_only`, a `TimelessDate`); `None` when `s` is not a well-formed duration.
pub fn relative(now: DateTime<Utc>, s: &str, date_only: bool) -> Option<String> {
    let at = now + Duration::seconds(duration_secs(s)?.ok()?);
    Some(if date_only { at.format("%Y-%m-%d").to_string() } else { at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true) })
}

/// The request's now, as the executor carries it (RFC 3339).
pub fn parse_now(now: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(now).ok().map(|t| t.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_signed_and_read_against_now() {
        assert_eq!(duration_secs("-P2W1D").unwrap().unwrap(), -15 * 86400);
        assert_eq!(duration_secs("PT1H30M").unwrap().unwrap(), 5400);
        assert!(duration_secs("2026-01-01").is_none(), "a date is not a duration");
        assert!(duration_secs("Planning").unwrap().is_err());
        let now = parse_now("2026-03-10T12:00:00.000Z").unwrap();
        assert_eq!(relative(now, "-P1D", false).unwrap(), "2026-03-09T12:00:00.000Z");
        assert_eq!(relative(now, "P1W", true).unwrap(), "2026-03-17");
    }
}

/// A `DateTime` input as Linear keeps it: UTC with milliseconds (`2026-12-05T08:00:00.000Z`
/// for `2026-12-05T10:00:00+02:00`); a plain date is its midnight UTC.
pub fn date_time(s: &str) -> Option<String> {
    let t = s.trim();
    let at = DateTime::parse_from_rfc3339(t).map(|d| d.with_timezone(&Utc)).ok().or_else(|| {
        let day = chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d").ok()?;
        Some(day.and_hms_opt(0, 0, 0)?.and_utc())
    })?;
    Some(at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

/// A `TimelessDate` input as Linear keeps it: the date alone (`2026-12-05`), also when a
/// time was given with it.
pub fn timeless_date(s: &str) -> Option<String> {
    let t = s.trim();
    let day = t.get(..10)?;
    chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").ok()?;
    (t.len() == 10 || DateTime::parse_from_rfc3339(t).is_ok()).then(|| day.to_string())
}
