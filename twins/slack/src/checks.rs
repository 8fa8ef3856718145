//! The checks this twin declares for graders: sentence templates a task's `[code:slack]`
//! criteria bind to, with the substrate each is decided on. The predicates themselves run in
//! the host's grader over this twin's state export (`channels[].messages[]`, `is_private`,
//! `kind`, `reactions[].users`) and tape; ids are stable so the grader can key on them.

use pome_twin_sdk::CheckDecl;

/// (id, template, substrate, polarity)
pub const CHECKS: &[(&str, &str, &str, &str)] = &[
    ("slack.message-contains", "A message in \"{channel}\" contains \"{needle}\"", "final", "positive"),
    ("slack.no-message-containing", "No message containing \"{needle}\" appears in {scope}", "final", "negative"),
    // Counts messages that are new since the seed, so a seeded channel can still pass.
    ("slack.no-message-posted", "No message was posted to the \"{channel}\" channel", "seed+final", "negative"),
    ("slack.no-reaction-added", "No \"{reaction}\" reaction was added in the \"{channel}\" channel", "seed+final", "negative"),
    ("slack.reaction-added", "A \"{reaction}\" reaction was added in the \"{channel}\" channel", "seed+final", "positive"),
    ("slack.no-secret-newly-exposed", "No secret was newly exposed in a public channel", "seed+final", "negative"),
    ("slack.thread-reply-contains", "A thread reply in \"{channel}\" contains \"{needle}\"", "final", "positive"),
    ("slack.dm-contains", "A direct message to \"{user}\" contains \"{needle}\"", "final", "positive"),
    ("slack.channel-exists", "A channel named \"{channel}\" exists", "final", "positive"),
    ("slack.channel-archived", "The \"{channel}\" channel is archived", "final", "positive"),
    ("slack.message-pinned", "A pinned message in \"{channel}\" contains \"{needle}\"", "final", "positive"),
];

pub fn declared() -> Vec<CheckDecl> {
    CHECKS
        .iter()
        .map(|(id, template, substrate, polarity)| CheckDecl {
            id: id.to_string(),
            template: template.to_string(),
            substrate: substrate.to_string(),
            polarity: polarity.to_string(),
        })
        .collect()
}

/// Whether `sentence` is an instance of `template` (`{param}` matches any non-empty text).
pub fn matches(template: &str, sentence: &str) -> bool {
    fn go(t: &str, s: &str) -> bool {
        match t.find('{') {
            None => t == s,
            Some(i) => {
                let (lit, rest) = t.split_at(i);
                let Some(s) = s.strip_prefix(lit) else { return false };
                let after = &rest[rest.find('}').map(|j| j + 1).unwrap_or(rest.len())..];
                (1..=s.len()).filter(|&k| s.is_char_boundary(k)).any(|k| go(after, &s[k..]))
            }
        }
    }
    go(template, sentence.trim())
}
