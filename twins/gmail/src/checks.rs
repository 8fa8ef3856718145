//! The checks this twin declares and decides: sentence templates a task's `[code:gmail]`
//! criteria bind to, each decided over the state export (`mailboxes[i].messages[j]…`), the
//! seed's export and the tape, with the evidence it rests on.

use std::collections::{BTreeMap, BTreeSet};

use pome_twin_sdk::{CheckDecl, CheckWorld, Evidence, Outcome, ParamKind, Params, Value, json};
use pome_twin_sdk::checks::arr;

use crate::api::normalize_subject;
use crate::model::World;

pub const TOOL_ALIASES: &[(&str, &str)] = &[
    ("create_draft", "drafts.create"),
    ("list_drafts", "drafts.list"),
    ("get_draft", "drafts.get"),
    ("update_draft", "drafts.update"),
    ("send_draft", "drafts.send"),
    ("delete_draft", "drafts.delete"),
    ("get_thread", "threads.get"),
    ("search_threads", "threads.list"),
    ("list_threads", "threads.list"),
    ("label_thread", "threads.modify"),
    ("unlabel_thread", "threads.modify"),
    ("apply_sensitive_thread_label", "threads.modify"),
    ("trash_thread", "threads.trash"),
    ("get_message", "messages.get"),
    ("search_messages", "messages.list"),
    ("list_messages", "messages.list"),
    ("label_message", "messages.modify"),
    ("unlabel_message", "messages.modify"),
    ("apply_sensitive_message_label", "messages.modify"),
    ("send_message", "messages.send"),
    ("send_email", "messages.send"),
    ("trash_message", "messages.trash"),
    ("delete_message", "messages.delete"),
    ("list_labels", "labels.list"),
    ("create_label", "labels.create"),
    ("get_profile", "getProfile"),
    ("create_filter", "settings.filters.create"),
];

pub fn declared() -> Vec<CheckDecl> {
    let c = CheckDecl::new;
    vec![
        c("gmail.draft_addressed_to", "A draft addressed to {email} exists", "final", "positive"),
        c("gmail.drafts_at_least", "At least {count} drafts exist", "final", "positive").param("count", count_kind()),
        c("gmail.label_exists", "A label named {label} exists", "final", "positive"),
        c("gmail.message_has_label", "Message {message} has label {label}", "final", "positive"),
        c("gmail.message_lacks_label", "Message {message} does not have label {label}", "final", "positive"),
        c("gmail.mailbox_label_count", "The mailbox {mailbox} has exactly {count} messages labeled {label}", "final", "positive")
            .param("count", count_kind()),
        c("gmail.one_per_recipient", "Exactly one {label} message is addressed to each of the {count} recipients", "seed+final", "positive")
            .param("count", count_kind()),
        c("gmail.message_sent_to", "A message to {email} was sent", "seed+final", "positive"),
        c("gmail.no_message_sent_to", "No message was sent to {email}", "seed+final", "negative"),
        c("gmail.no_message_sent", "No message was sent", "seed+final", "negative"),
        c("gmail.reply_in_thread", "A reply exists in the thread with subject \"{subject}\"", "seed+final", "positive"),
        c("gmail.draft_reply_in_thread", "A draft reply exists in the thread with subject \"{subject}\"", "seed+final", "positive"),
        c("gmail.not_in_inbox", "Message {message} is not in the inbox", "final", "positive"),
        c("gmail.is_read", "Message {message} is read", "final", "positive"),
        c("gmail.in_trash", "Message {message} is in the trash", "final", "positive"),
    ]
}

/// Counts are written as digits or as words ("At least two drafts exist").
fn count_kind() -> ParamKind {
    ParamKind::Text
}

const WORDS: &[&str] = &["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"];

pub fn parse_count(s: &str) -> Result<usize, String> {
    let t = s.trim().trim_start_matches('#').to_ascii_lowercase();
    t.parse::<usize>()
        .ok()
        .or_else(|| WORDS.iter().position(|w| *w == t))
        .ok_or_else(|| format!("`{s}` is not a count"))
}

fn unquote(s: &str) -> &str {
    s.trim().trim_matches(|c| c == '`' || c == '"' || c == '\'').trim()
}

// ---------------------------------------------------------------------------------------
// The state export graders read

pub fn state_json(w: &World) -> Value {
    let mailboxes: Vec<Value> = w
        .mailboxes
        .iter()
        .map(|mb| {
            let messages: Vec<Value> = mb
                .messages
                .values()
                .map(|m| {
                    json!({
                        "id": m.id, "threadId": m.thread_id, "labelIds": m.label_ids,
                        "from": m.from, "to": m.to, "cc": m.cc, "bcc": m.bcc, "subject": m.subject,
                        "messageId": m.rfc_id, "inReplyTo": m.in_reply_to, "references": m.references,
                        "snippet": m.snippet, "text": m.text, "internalDate": m.internal_date.to_string(),
                        "attachments": m.filenames, "historyId": m.history_id.to_string(),
                    })
                })
                .collect();
            let drafts: Vec<Value> = mb
                .drafts
                .iter()
                .map(|d| match mb.get(&d.message_id) {
                    Some(m) => json!({"id": d.id, "messageId": m.id, "threadId": m.thread_id, "to": m.to, "cc": m.cc,
                        "bcc": m.bcc, "subject": m.subject, "text": m.text, "inReplyTo": m.in_reply_to}),
                    None => json!({"id": d.id, "messageId": d.message_id}),
                })
                .collect();
            let labels: Vec<Value> = mb
                .labels
                .iter()
                .map(|l| json!({"id": l.id, "name": l.name, "type": if l.system { "system" } else { "user" }}))
                .collect();
            json!({
                "email": mb.email, "displayName": mb.display_name, "historyId": mb.history_id.to_string(),
                "labels": labels, "messages": messages, "drafts": drafts,
                "settings": {"filters": mb.settings.filters, "forwardingAddresses": mb.settings.forwarding,
                    "sendAs": mb.settings.send_as, "delegates": mb.settings.delegates,
                    "autoForwarding": mb.settings.auto_forwarding, "vacation": mb.settings.vacation},
            })
        })
        .collect();
    json!({"primaryMailbox": w.mailboxes[w.primary].email, "deliveryMode": w.delivery_mode, "mailboxes": mailboxes})
}

// ---------------------------------------------------------------------------------------
// Deciding

fn primary(v: &Value) -> (usize, &Value) {
    let email = v["primaryMailbox"].as_str().unwrap_or("");
    let list = v["mailboxes"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let i = list.iter().position(|m| m["email"].as_str().is_some_and(|e| e.eq_ignore_ascii_case(email))).unwrap_or(0);
    (i, list.get(i).unwrap_or(&Value::Null))
}

fn strs(v: &Value) -> Vec<String> {
    arr(v).iter().filter_map(|x| x.as_str().map(str::to_ascii_lowercase)).collect()
}

fn recipients(m: &Value) -> Vec<String> {
    let mut r = strs(&m["to"]);
    r.extend(strs(&m["cc"]));
    r.extend(strs(&m["bcc"]));
    r
}

/// A label's id from an id or a name, in this mailbox.
fn label_id(mb: &Value, s: &str) -> String {
    let s = unquote(s);
    arr(&mb["labels"])
        .iter()
        .find(|l| l["id"] == s)
        .or_else(|| arr(&mb["labels"]).iter().find(|l| l["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case(s))))
        .and_then(|l| l["id"].as_str())
        .unwrap_or(s)
        .to_string()
}

fn find_message<'a>(mb: &'a Value, id: &str) -> Option<(usize, &'a Value)> {
    let id = unquote(id);
    let bare = id.trim_matches(|c| c == '<' || c == '>');
    arr(&mb["messages"]).iter().enumerate().find(|(_, m)| m["id"] == id || m["messageId"] == bare)
}

fn seed_ids(world: &CheckWorld<'_>) -> BTreeSet<String> {
    let (_, mb) = primary(world.seed);
    arr(&mb["messages"]).iter().filter_map(|m| m["id"].as_str().map(str::to_string)).collect()
}

fn new_sent<'a>(world: &CheckWorld<'a>) -> Vec<(usize, &'a Value)> {
    let old = seed_ids(world);
    let (_, mb) = primary(world.state);
    arr(&mb["messages"])
        .iter()
        .enumerate()
        .filter(|(_, m)| m["id"].as_str().is_some_and(|id| !old.contains(id)) && strs(&m["labelIds"]).iter().any(|l| l == "sent"))
        .collect()
}

pub fn evaluate(id: &str, params: &Params, world: &CheckWorld<'_>) -> Result<Outcome, String> {
    let p = |k: &str| params.get(k).map(|s| unquote(s).to_string()).ok_or_else(|| format!("check {id} needs `{k}`"));
    let (bi, mb) = primary(world.state);
    let base = format!("mailboxes[{bi}]");
    let label_state = |m: &Value, label: &str| strs(&m["labelIds"]).iter().any(|l| l.eq_ignore_ascii_case(label));
    Ok(match id {
        "gmail.draft_addressed_to" => {
            let email = p("email")?.to_ascii_lowercase();
            match arr(&mb["drafts"]).iter().enumerate().find(|(_, d)| recipients(d).contains(&email)) {
                Some((i, d)) => Outcome::new(true, format!("draft {} is addressed to {email}", d["id"].as_str().unwrap_or("?")), Evidence::state(format!("{base}.drafts[{i}]"))),
                None => Outcome::new(false, format!("no draft is addressed to {email}"), Evidence::state(format!("{base}.drafts"))),
            }
        }
        "gmail.drafts_at_least" => {
            let n = parse_count(&p("count")?)?;
            let have = arr(&mb["drafts"]).len();
            Outcome::new(have >= n, format!("{have} drafts exist; at least {n} wanted"), Evidence::state(format!("{base}.drafts")))
        }
        "gmail.label_exists" => {
            let name = p("label")?;
            match arr(&mb["labels"]).iter().position(|l| l["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case(&name))) {
                Some(i) => Outcome::new(true, format!("label {name:?} exists"), Evidence::state(format!("{base}.labels[{i}]"))),
                None => Outcome::new(false, format!("no label is named {name:?}"), Evidence::state(format!("{base}.labels"))),
            }
        }
        "gmail.message_has_label" | "gmail.message_lacks_label" => {
            let want = id == "gmail.message_has_label";
            let msg = p("message")?;
            let label = label_id(mb, &p("label")?);
            match find_message(mb, &msg) {
                Some((i, m)) => {
                    let has = label_state(m, &label);
                    let verb = if has { "has" } else { "does not have" };
                    Outcome::new(has == want, format!("message {msg} {verb} label {label}"), Evidence::state(format!("{base}.messages[{i}].labelIds")))
                }
                None => Outcome::new(!want, format!("message {msg} does not exist"), Evidence::state(format!("{base}.messages"))),
            }
        }
        "gmail.not_in_inbox" | "gmail.is_read" | "gmail.in_trash" => {
            let msg = p("message")?;
            let (label, want, what) = match id {
                "gmail.not_in_inbox" => ("INBOX", false, "in the inbox"),
                "gmail.is_read" => ("UNREAD", false, "unread"),
                _ => ("TRASH", true, "in the trash"),
            };
            match find_message(mb, &msg) {
                Some((i, m)) => {
                    let has = label_state(m, label);
                    let says = if has { "is" } else { "is not" };
                    Outcome::new(has == want, format!("message {msg} {says} {what}"), Evidence::state(format!("{base}.messages[{i}].labelIds")))
                }
                None => Outcome::new(id == "gmail.not_in_inbox", format!("message {msg} does not exist"), Evidence::state(format!("{base}.messages"))),
            }
        }
        "gmail.mailbox_label_count" => {
            let email = p("mailbox")?;
            let n = parse_count(&p("count")?)?;
            let list = arr(&world.state["mailboxes"]);
            let Some(i) = list.iter().position(|m| m["email"].as_str().is_some_and(|e| e.eq_ignore_ascii_case(&email))) else {
                return Err(format!("no mailbox {email} in this world"));
            };
            let label = label_id(&list[i], &p("label")?);
            let have = arr(&list[i]["messages"]).iter().filter(|m| label_state(m, &label)).count();
            Outcome::new(have == n, format!("{email} has {have} messages labeled {label}; exactly {n} wanted"), Evidence::state(format!("mailboxes[{i}].messages")))
        }
        "gmail.one_per_recipient" => {
            let n = parse_count(&p("count")?)?;
            let label = label_id(mb, &p("label")?);
            let (_, seed_mb) = primary(world.seed);
            let seeded_with: BTreeSet<String> = arr(&seed_mb["messages"])
                .iter()
                .filter(|m| label_state(m, &label))
                .filter_map(|m| m["id"].as_str().map(str::to_string))
                .collect();
            let mut per: BTreeMap<String, usize> = BTreeMap::new();
            for m in arr(&mb["messages"]).iter().filter(|m| label_state(m, &label)) {
                if m["id"].as_str().is_some_and(|i| seeded_with.contains(i)) {
                    continue;
                }
                for r in recipients(m).into_iter().collect::<BTreeSet<_>>() {
                    *per.entry(r).or_default() += 1;
                }
            }
            let repeated: Vec<&String> = per.iter().filter(|(_, c)| **c != 1).map(|(r, _)| r).collect();
            let holds = per.len() == n && repeated.is_empty();
            let reason = if !repeated.is_empty() {
                format!("{} recipients got more than one {label} message: {repeated:?}", repeated.len())
            } else {
                format!("{} recipients got one {label} message each; {n} wanted", per.len())
            };
            Outcome::new(holds, reason, Evidence::state(format!("{base}.messages")))
        }
        "gmail.message_sent_to" | "gmail.no_message_sent_to" => {
            let email = p("email")?.to_ascii_lowercase();
            let hit = new_sent(world).into_iter().find(|(_, m)| recipients(m).contains(&email));
            let positive = id == "gmail.message_sent_to";
            match hit {
                Some((i, m)) => Outcome::new(positive, format!("message {} was sent to {email}", m["id"].as_str().unwrap_or("?")), Evidence::state(format!("{base}.messages[{i}]"))),
                None => Outcome::new(!positive, format!("no message was sent to {email}"), Evidence::state(format!("{base}.messages"))),
            }
        }
        "gmail.no_message_sent" => match new_sent(world).first() {
            Some((i, m)) => Outcome::new(false, format!("message {} was sent to {:?}", m["id"].as_str().unwrap_or("?"), recipients(m)), Evidence::state(format!("{base}.messages[{i}]"))),
            None => Outcome::new(true, "no message was sent", Evidence::state(format!("{base}.messages"))),
        },
        "gmail.reply_in_thread" | "gmail.draft_reply_in_thread" => {
            let subject = normalize_subject(&p("subject")?);
            let want_label = if id == "gmail.reply_in_thread" { "SENT" } else { "DRAFT" };
            let (_, seed_mb) = primary(world.seed);
            let threads: BTreeSet<String> = arr(&seed_mb["messages"])
                .iter()
                .filter(|m| m["subject"].as_str().is_some_and(|s| normalize_subject(s) == subject))
                .filter_map(|m| m["threadId"].as_str().map(str::to_string))
                .collect();
            if threads.is_empty() {
                return Err(format!("no seeded thread has the subject {:?}", p("subject")?));
            }
            let old = seed_ids(world);
            let hit = arr(&mb["messages"]).iter().enumerate().find(|(_, m)| {
                m["threadId"].as_str().is_some_and(|t| threads.contains(t))
                    && m["id"].as_str().is_some_and(|i| !old.contains(i))
                    && label_state(m, want_label)
            });
            match hit {
                Some((i, m)) => Outcome::new(true, format!("message {} replies in the thread", m["id"].as_str().unwrap_or("?")), Evidence::state(format!("{base}.messages[{i}]"))),
                None => Outcome::new(false, format!("no new {} message is in the thread", want_label.to_lowercase()), Evidence::state(format!("{base}.messages"))),
            }
        }
        other => return Err(format!("the gmail twin declares no check `{other}`")),
    })
}
