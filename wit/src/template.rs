//! Check templates: sentences with `{param}` holes, such as
//! ``Issue #{issue} in `{repo}` is in state {state}``. A criterion sentence binds to a
//! template when each hole can take some non-empty text and the literals match.
//!
//! This is the only matcher: the host binds criteria with it and twins test with it that the
//! sentences task writers use fit their declarations, so the two can never disagree.
//!
//! Matching is lenient in exactly two ways, both about how people write list items: the
//! case of the sentence's first letter, and one trailing full stop.

use std::collections::BTreeMap;

enum Part<'a> {
    Lit(&'a str),
    Hole(&'a str),
}

/// The template split into literals and holes; `None` for an unclosed `{`.
fn parts(template: &str) -> Option<Vec<Part<'_>>> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(i) = rest.find('{') {
        if i > 0 {
            parts.push(Part::Lit(&rest[..i]));
        }
        let j = rest[i..].find('}')? + i;
        parts.push(Part::Hole(&rest[i + 1..j]));
        rest = &rest[j + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Lit(rest));
    }
    Some(parts)
}

/// Match `sentence` against `template`, returning each hole's text. Holes take the shortest
/// text that lets the rest match, trying only the places where the next literal occurs, so
/// the cost is bounded by the literal's occurrences rather than by every prefix.
pub fn match_template(template: &str, sentence: &str) -> Option<BTreeMap<String, String>> {
    let parts = parts(template)?;
    let s = sentence.trim();
    let s = s.strip_suffix('.').filter(|_| !template.trim_end().ends_with('.')).unwrap_or(s);
    let mut out = Vec::new();
    if go(&parts, s, &mut out) {
        return Some(collect(out));
    }
    // `a PaymentIntent…` for `A PaymentIntent…`, and the other way round.
    let mut chars = s.chars();
    let first = chars.next()?;
    let flipped: String = if first.is_lowercase() {
        first.to_uppercase().chain(chars).collect()
    } else {
        first.to_lowercase().chain(chars).collect()
    };
    out.clear();
    go(&parts, &flipped, &mut out).then(|| collect(out))
}

fn collect(out: Vec<(&str, &str)>) -> BTreeMap<String, String> {
    out.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn go<'t, 's>(parts: &[Part<'t>], s: &'s str, out: &mut Vec<(&'t str, &'s str)>) -> bool {
    match parts.split_first() {
        None => s.is_empty(),
        Some((Part::Lit(l), tail)) => s.strip_prefix(l).is_some_and(|s| go(tail, s, out)),
        Some((Part::Hole(name), tail)) => match tail.first() {
            // The last hole takes the rest.
            None => {
                if s.is_empty() {
                    return false;
                }
                out.push((name, s));
                true
            }
            Some(Part::Lit(next)) => {
                // Only where the next literal starts can this hole end.
                for (k, _) in s.match_indices(next) {
                    if k == 0 {
                        continue;
                    }
                    out.push((name, &s[..k]));
                    if go(tail, &s[k..], out) {
                        return true;
                    }
                    out.pop();
                }
                false
            }
            // Two holes side by side: any split (templates rarely do this).
            Some(Part::Hole(_)) => {
                for k in (1..s.len()).filter(|&k| s.is_char_boundary(k)) {
                    out.push((name, &s[..k]));
                    if go(tail, &s[k..], out) {
                        return true;
                    }
                    out.pop();
                }
                false
            }
        },
    }
}

/// How much literal text a template has: when several templates match, the one with the most
/// literal text is the most specific and wins.
pub fn literal_len(template: &str) -> usize {
    parts(template).map_or(0, |ps| ps.iter().map(|p| if let Part::Lit(l) = p { l.chars().count() } else { 0 }).sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holes_take_the_text_between_the_literals() {
        let p = match_template("Issue #{issue} in `{repo}` is in state {state}", "Issue #1 in `acme/api` is in state open").unwrap();
        assert_eq!((p["issue"].as_str(), p["repo"].as_str(), p["state"].as_str()), ("1", "acme/api", "open"));
        let p = match_template("Pull request #{pr} in `{repo}` is {state}", "Pull request #1 in `a/b` is not merged").unwrap();
        assert_eq!(p["state"], "not merged");
    }

    #[test]
    fn literals_must_match_and_holes_are_never_empty() {
        assert!(match_template("`{tool}` was called", "`create_commit_status` was never called").is_none());
        assert!(match_template("A message in \"{channel}\" contains \"{needle}\"", "A message in eng-alerts").is_none());
        assert!(match_template("A message in \"{channel}\" contains \"{needle}\"", "A message in \"\" contains \"x\"").is_none());
    }

    #[test]
    fn the_first_letters_case_and_a_trailing_full_stop_are_forgiven() {
        assert!(match_template("A refund exists on charge \"{charge}\"", "a refund exists on charge \"ch_1\".").is_some());
        assert!(match_template("{event} is emitted", "charge.refunded is emitted.").is_some_and(|p| p["event"] == "charge.refunded"));
    }

    #[test]
    fn a_hole_may_contain_its_next_literal_when_the_rest_needs_it() {
        let p = match_template("A message in \"{channel}\" contains \"{needle}\"", "A message in \"eng\" contains \"say \"hi\" now\"").unwrap();
        assert_eq!(p["needle"], "say \"hi\" now");
    }

    #[test]
    fn long_sentences_match_in_bounded_time() {
        let long = "x".repeat(200_000);
        let sentence = format!("A comment on issue \"{long}\" in ENG contains \"{long}\"");
        let p = match_template("A comment on issue \"{title}\" in {team} contains \"{needle}\"", &sentence).unwrap();
        assert_eq!(p["team"], "ENG");
    }

    #[test]
    fn specificity_counts_literal_text() {
        assert!(literal_len("`{tool}` was never called") > literal_len("`{tool}` was called"));
    }
}
