//! Stripe API versions: a `Stripe-Version` header Stripe never released is refused with
//! "Invalid Stripe API version: …" before anything runs, as Stripe refuses it.
//!
//! Dated versions up to 2024-06-20 are Stripe's list (the `api_version` enum of its OpenAPI
//! description, plus the 2023–2024 releases). From 2024-09-30 every version carries its
//! release's name (`2024-09-30.acacia`, `2025-03-31.basil`, `2026-10-28.endive`, or `.preview`),
//! and a new one ships every month or so: those are taken when well formed and not dated after
//! the sandbox's today, since a version from the future cannot exist.

/// Every version Stripe released before named releases began.
const DATED: &[&str] = &[
    "2011-01-01", "2011-06-21", "2011-06-28", "2011-08-01", "2011-09-15", "2011-11-17", "2012-02-23", "2012-03-25", "2012-06-18", "2012-06-28",
    "2012-07-09", "2012-09-24", "2012-10-26", "2012-11-07", "2013-02-11", "2013-02-13", "2013-07-05", "2013-08-12", "2013-08-13", "2013-10-29",
    "2013-12-03", "2014-01-31", "2014-03-13", "2014-03-28", "2014-05-19", "2014-06-13", "2014-06-17", "2014-07-22", "2014-07-26", "2014-08-04",
    "2014-08-20", "2014-09-08", "2014-10-07", "2014-11-05", "2014-11-20", "2014-12-08", "2014-12-17", "2014-12-22", "2015-01-11", "2015-01-26",
    "2015-02-10", "2015-02-16", "2015-02-18", "2015-03-24", "2015-04-07", "2015-06-15", "2015-07-07", "2015-07-13", "2015-07-28", "2015-08-07",
    "2015-08-19", "2015-09-03", "2015-09-08", "2015-09-23", "2015-10-01", "2015-10-12", "2015-10-16", "2016-02-03", "2016-02-19", "2016-02-22",
    "2016-02-23", "2016-02-29", "2016-03-07", "2016-06-15", "2016-07-06", "2016-10-19", "2017-01-27", "2017-02-14", "2017-04-06", "2017-05-25",
    "2017-06-05", "2017-08-15", "2017-12-14", "2018-01-23", "2018-02-05", "2018-02-06", "2018-02-28", "2018-05-21", "2018-07-27", "2018-08-23",
    "2018-09-06", "2018-09-24", "2018-10-31", "2018-11-08", "2019-02-11", "2019-02-19", "2019-03-14", "2019-05-16", "2019-08-14", "2019-09-09",
    "2019-10-08", "2019-10-17", "2019-11-05", "2019-12-03", "2020-03-02", "2020-08-27", "2022-08-01", "2022-11-15", "2023-08-16", "2023-10-16",
    "2024-04-10", "2024-06-20",
];

/// The first named release (`acacia`).
const FIRST_NAMED: &str = "2024-09-30";

/// Whether Stripe could have answered under `version` at Unix time `now`.
pub fn is_known(version: &str, now: i64) -> bool {
    let (date, name) = match version.split_once('.') {
        Some((d, n)) => (d, Some(n)),
        None => (version, None),
    };
    if !is_date(date) {
        return false;
    }
    match name {
        None => DATED.binary_search(&date).is_ok(),
        Some(n) => date >= FIRST_NAMED && date <= today(now).as_str() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_lowercase()),
    }
}

/// `YYYY-MM-DD` naming a day of the calendar.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' || !s.bytes().enumerate().all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit()) {
        return false;
    }
    let (y, m, d): (i64, u32, u32) = (s[..4].parse().unwrap_or(0), s[5..7].parse().unwrap_or(0), s[8..].parse().unwrap_or(0));
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// The day of Unix time `now` as `YYYY-MM-DD` (the civil calendar, UTC).
fn today(now: i64) -> String {
    let (y, m, d) = pome_twin_sdk::time::civil_date(now);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEC_2026: i64 = 1_796_083_200;

    #[test]
    fn released_versions_are_known_and_others_are_not() {
        assert!(DATED.windows(2).all(|w| w[0] < w[1]), "sorted for the binary search");
        for v in ["2024-06-20", "2020-08-27", "2024-09-30.acacia", "2025-08-27.basil", "2026-10-28.endive", "2025-08-27.preview"] {
            assert!(is_known(v, DEC_2026), "{v}");
        }
        assert_eq!(today(DEC_2026), "2026-12-01");
        assert_eq!(today(0), "1970-01-01");
        for v in ["2099-01-01", "2020-01-01", "2024-06-21", "banana", "2024-13-01", "2027-01-01.future", "2024-06-20.acacia", "2025-03-31.Basil", "2025-03-31."] {
            assert!(!is_known(v, DEC_2026), "{v}");
        }
    }
}
