//! Gmail's search language (`q`), answered from the mailbox's index: word and field terms
//! come from postings, dates from the date-ordered set; only what the index cannot say
//! (sizes, exact phrases) is checked per candidate. An operator Gmail does not have is an
//! error, never a silent match-all.

use std::collections::BTreeSet;

use crate::limits::MAX_QUERY_DEPTH;
use crate::model::{Mailbox, term_key, tokens};

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    And(Vec<Node>),
    Or(Vec<Node>),
    Not(Box<Node>),
    Op(String, String),
    Word(String),
    Phrase(String),
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    LParen,
    RParen,
    LBrace,
    RBrace,
    Minus,
    Or,
    Term(String),
    Quoted(String),
}

fn lex(q: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let cs: Vec<char> = q.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        match c {
            c if c.is_whitespace() => i += 1,
            '(' => {
                out.push(Tok::LParen);
                i += 1
            }
            ')' => {
                out.push(Tok::RParen);
                i += 1
            }
            '{' => {
                out.push(Tok::LBrace);
                i += 1
            }
            '}' => {
                out.push(Tok::RBrace);
                i += 1
            }
            '-' if i + 1 < cs.len() && !cs[i + 1].is_whitespace() => {
                out.push(Tok::Minus);
                i += 1
            }
            '"' => {
                let start = i + 1;
                let mut j = start;
                while j < cs.len() && cs[j] != '"' {
                    j += 1;
                }
                out.push(Tok::Quoted(cs[start..j].iter().collect()));
                i = j + 1;
            }
            _ => {
                let start = i;
                while i < cs.len() && !cs[i].is_whitespace() && !matches!(cs[i], '(' | ')' | '{' | '}' | '"') {
                    i += 1;
                }
                let t: String = cs[start..i].iter().collect();
                if t == "OR" || t == "|" {
                    out.push(Tok::Or);
                } else if t == "AND" {
                    // Gmail's explicit AND is the same as juxtaposition.
                } else {
                    out.push(Tok::Term(t));
                }
            }
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    /// Groups and negations open around the current token ([`MAX_QUERY_DEPTH`] at most).
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }
    fn or(&mut self) -> Result<Node, String> {
        let mut alts = vec![self.and()?];
        while self.peek() == Some(&Tok::Or) {
            self.pos += 1;
            alts.push(self.and()?);
        }
        Ok(if alts.len() == 1 { alts.pop().unwrap() } else { Node::Or(alts) })
    }
    fn and(&mut self) -> Result<Node, String> {
        let mut items = Vec::new();
        while let Some(t) = self.peek() {
            if matches!(t, Tok::RParen | Tok::RBrace | Tok::Or) {
                break;
            }
            items.push(self.unary()?);
        }
        Ok(if items.len() == 1 { items.pop().unwrap() } else { Node::And(items) })
    }
    /// One operand, counting the nesting it opens: each group and negation recurses.
    fn unary(&mut self) -> Result<Node, String> {
        if self.depth >= MAX_QUERY_DEPTH {
            return Err(format!("Invalid search query: groups and negations nest more than {MAX_QUERY_DEPTH} levels deep"));
        }
        self.depth += 1;
        let n = self.operand();
        self.depth -= 1;
        n
    }
    fn operand(&mut self) -> Result<Node, String> {
        match self.next() {
            Some(Tok::Minus) => Ok(Node::Not(Box::new(self.unary()?))),
            Some(Tok::LParen) => {
                let n = self.or()?;
                if self.next() != Some(Tok::RParen) {
                    return Err("Invalid search query: unbalanced parentheses".into());
                }
                Ok(n)
            }
            Some(Tok::LBrace) => {
                let mut alts = Vec::new();
                while !matches!(self.peek(), Some(Tok::RBrace) | None) {
                    alts.push(self.unary()?);
                }
                if self.next() != Some(Tok::RBrace) {
                    return Err("Invalid search query: unbalanced braces".into());
                }
                Ok(Node::Or(alts))
            }
            Some(Tok::Quoted(p)) => Ok(Node::Phrase(p)),
            Some(Tok::Term(t)) => self.term(t),
            Some(t) => Err(format!("Invalid search query near {t:?}")),
            None => Err("Invalid search query".into()),
        }
    }
    fn term(&mut self, t: String) -> Result<Node, String> {
        let Some((op, val)) = t.split_once(':') else { return Ok(Node::Word(t)) };
        let op = op.to_ascii_lowercase();
        if !OPERATORS.contains(&op.as_str()) {
            return Err(format!("Invalid search query: unknown operator `{op}:`"));
        }
        if !val.is_empty() {
            return Ok(Node::Op(op, val.to_string()));
        }
        match self.next() {
            Some(Tok::Quoted(p)) => Ok(Node::Op(op, p)),
            Some(Tok::LParen) => {
                let mut vals = Vec::new();
                loop {
                    match self.next() {
                        Some(Tok::RParen) => break,
                        Some(Tok::Term(v)) | Some(Tok::Quoted(v)) => vals.push(Node::Op(op.clone(), v)),
                        Some(Tok::Or) => {}
                        _ => return Err("Invalid search query: unbalanced parentheses".into()),
                    }
                }
                Ok(Node::And(vals))
            }
            _ => Err(format!("Invalid search query: `{op}:` needs a value")),
        }
    }
}

pub const OPERATORS: &[&str] = &[
    "from", "to", "cc", "bcc", "subject", "label", "in", "is", "has", "filename", "after", "before", "older", "newer",
    "older_than", "newer_than", "larger", "smaller", "size", "category", "rfc822msgid", "deliveredto",
];

pub fn parse(q: &str) -> Result<Option<Node>, String> {
    let toks = lex(q)?;
    if toks.is_empty() {
        return Ok(None);
    }
    let mut p = Parser { toks, pos: 0, depth: 0 };
    let n = p.or()?;
    if p.pos < p.toks.len() {
        return Err("Invalid search query: unbalanced parentheses".into());
    }
    Ok(Some(n))
}

/// Whether the query asks for spam or trash itself (then they are not excluded).
fn names_spam_trash(n: &Node) -> bool {
    match n {
        Node::And(v) | Node::Or(v) => v.iter().any(names_spam_trash),
        Node::Not(_) => false,
        Node::Op(op, v) => {
            let v = v.to_ascii_lowercase();
            (op == "in" || op == "label") && matches!(v.as_str(), "spam" | "trash" | "anywhere")
        }
        _ => false,
    }
}

/// Keys of messages matching, newest first.
pub fn run(mb: &mut Mailbox, q: &str, label_ids: &[String], include_spam_trash: bool) -> Result<Vec<u64>, String> {
    let node = parse(q)?;
    let keep_spam_trash = include_spam_trash || node.as_ref().is_some_and(names_spam_trash);
    let mut set: Option<BTreeSet<u64>> = match &node {
        Some(n) => Some(eval(mb, n)?),
        None => None,
    };
    for l in label_ids {
        let s = mb.idx().labels.get(l).cloned().unwrap_or_default();
        set = Some(match set {
            Some(x) => x.intersection(&s).copied().collect(),
            None => s,
        });
    }
    // `labelIds=TRASH` (or `SPAM`) asks for that folder: Gmail lists it without
    // `includeSpamTrash`, as it does when the query names it.
    let names = |l: &str| label_ids.iter().any(|x| x == l);
    let ix = mb.idx();
    let empty = BTreeSet::new();
    let spam = if keep_spam_trash || names("SPAM") { &empty } else { ix.labels.get("SPAM").unwrap_or(&empty) };
    let trash = if keep_spam_trash || names("TRASH") { &empty } else { ix.labels.get("TRASH").unwrap_or(&empty) };
    let excluded = |k: &u64| spam.contains(k) || trash.contains(k);
    let keys: Vec<u64> = match set {
        None => ix.by_date.iter().rev().map(|(_, k)| *k).filter(|k| !excluded(k)).collect(),
        Some(s) => {
            let mut v: Vec<(i64, u64)> = s.into_iter().filter(|k| !excluded(k)).map(|k| (ix.dates[k as usize], k)).collect();
            v.sort_unstable_by(|a, b| b.cmp(a));
            v.into_iter().map(|(_, k)| k).collect()
        }
    };
    Ok(keys)
}

fn all(mb: &mut Mailbox) -> BTreeSet<u64> {
    mb.messages.keys().copied().collect()
}

/// Keys whose `field` holds every token of `value`: the smallest posting list is walked and
/// the others are probed, so nothing is copied but the answer.
fn postings(mb: &mut Mailbox, field: &str, value: &str) -> Option<BTreeSet<u64>> {
    let keys: Vec<u64> = tokens(value).map(|t| term_key(field, &t)).collect();
    if keys.is_empty() {
        return None;
    }
    let ix = mb.idx();
    let mut lists: Vec<&BTreeSet<u64>> = Vec::with_capacity(keys.len());
    for k in &keys {
        match ix.terms.get(k) {
            Some(l) => lists.push(l),
            None => return Some(BTreeSet::new()),
        }
    }
    lists.sort_by_key(|l| l.len());
    Some(lists[0].iter().copied().filter(|k| lists[1..].iter().all(|l| l.contains(k))).collect())
}

/// Whether message `key` holds every token of `value` in `field`, by probing postings.
fn has_tokens(mb: &mut Mailbox, field: &str, value: &str, key: u64) -> bool {
    let ix = mb.idx();
    tokens(value).all(|t| ix.terms.get(&term_key(field, &t)).is_some_and(|l| l.contains(&key)))
}

fn label_set(mb: &mut Mailbox, id: &str) -> BTreeSet<u64> {
    mb.idx().labels.get(id).cloned().unwrap_or_default()
}

fn parse_size(v: &str) -> Result<usize, String> {
    let l = v.to_ascii_lowercase();
    let (num, mul) = if let Some(n) = l.strip_suffix('m').or_else(|| l.strip_suffix("mb")) {
        (n, 1024 * 1024)
    } else if let Some(n) = l.strip_suffix('k').or_else(|| l.strip_suffix("kb")) {
        (n, 1024)
    } else {
        (l.as_str(), 1)
    };
    num.trim().parse::<usize>().map(|n| n * mul).map_err(|_| format!("Invalid search query: bad size `{v}`"))
}

/// A date operand in milliseconds: `2026/07/19`, `2026-07-19` or unix seconds.
fn parse_date(v: &str) -> Result<i64, String> {
    if let Ok(secs) = v.parse::<i64>() {
        return Ok(secs * 1000);
    }
    let parts: Vec<&str> = v.split(['/', '-']).collect();
    if parts.len() == 3
        && let (Ok(y), Ok(m), Ok(d)) = (parts[0].parse::<i32>(), parts[1].parse::<u32>(), parts[2].parse::<u32>())
            && let Some(date) = chrono::NaiveDate::from_ymd_opt(y, m, d) {
                return Ok(date.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp_millis());
            }
    Err(format!("Invalid search query: bad date `{v}`"))
}

fn parse_age(v: &str) -> Result<i64, String> {
    let l = v.to_ascii_lowercase();
    let (n, unit) = l.split_at(l.len().saturating_sub(1));
    let n: i64 = n.parse().map_err(|_| format!("Invalid search query: bad age `{v}`"))?;
    let day = 24 * 3600 * 1000i64;
    let ms = match unit {
        "d" => n * day,
        "m" => n * 30 * day,
        "y" => n * 365 * day,
        "h" => n * 3600 * 1000,
        _ => return Err(format!("Invalid search query: bad age `{v}`")),
    };
    Ok(pome_twin_sdk::time::now().timestamp_millis() - ms)
}

fn by_date(mb: &mut Mailbox, from: i64, to: i64) -> BTreeSet<u64> {
    mb.idx().by_date.range((from, 0)..(to, 0)).map(|(_, k)| *k).collect()
}

fn filter(mb: &mut Mailbox, s: BTreeSet<u64>, f: impl Fn(&crate::model::Message) -> bool) -> BTreeSet<u64> {
    s.into_iter().filter(|k| f(&mb.messages[k])).collect()
}

fn eval(mb: &mut Mailbox, n: &Node) -> Result<BTreeSet<u64>, String> {
    Ok(match n {
        Node::And(items) => {
            // Positive terms: word postings and label lists are probed where they lie,
            // smallest first; anything else is evaluated to a set and joins them.
            let mut term_keys: Vec<u64> = Vec::new();
            let mut label_ids: Vec<String> = Vec::new();
            let mut sets: Vec<BTreeSet<u64>> = Vec::new();
            for it in items.iter().filter(|i| !matches!(i, Node::Not(_))) {
                if let Some((field, value)) = token_operand(it) {
                    term_keys.extend(tokens(value).map(|t| term_key(field, &t)));
                } else if let Some(l) = simple_label(mb, it) {
                    label_ids.push(l);
                } else {
                    sets.push(eval(mb, it)?);
                }
            }
            let mut acc = if term_keys.is_empty() && label_ids.is_empty() && sets.is_empty() {
                all(mb)
            } else {
                let empty = BTreeSet::new();
                let ix = mb.idx();
                let mut refs: Vec<&BTreeSet<u64>> = Vec::new();
                for k in &term_keys {
                    refs.push(ix.terms.get(k).unwrap_or(&empty));
                }
                for l in &label_ids {
                    refs.push(ix.labels.get(l).unwrap_or(&empty));
                }
                refs.extend(sets.iter());
                refs.sort_by_key(|l| l.len());
                refs[0].iter().copied().filter(|k| refs[1..].iter().all(|l| l.contains(k))).collect()
            };
            for it in items {
                if let Node::Not(inner) = it {
                    if let Some((field, value)) = token_operand(inner) {
                        // Probe the posting lists in place: nothing is copied.
                        let keys: Vec<u64> = tokens(value).map(|t| term_key(field, &t)).collect();
                        if keys.is_empty() {
                            continue;
                        }
                        let ix = mb.idx();
                        let lists: Vec<Option<&BTreeSet<u64>>> = keys.iter().map(|k| ix.terms.get(k)).collect();
                        acc.retain(|k| !lists.iter().all(|l| l.is_some_and(|l| l.contains(k))));
                        continue;
                    }
                    let mut keep = BTreeSet::new();
                    for k in acc {
                        if !matches(mb, inner, k)? {
                            keep.insert(k);
                        }
                    }
                    acc = keep;
                }
            }
            acc
        }
        Node::Or(items) => {
            let mut acc = BTreeSet::new();
            for it in items {
                acc.extend(eval(mb, it)?);
            }
            acc
        }
        Node::Not(inner) => {
            let s = eval(mb, inner)?;
            all(mb).difference(&s).copied().collect()
        }
        Node::Word(w) => postings(mb, "w", w).unwrap_or_else(|| all(mb)),
        Node::Phrase(p) => {
            let lower = p.to_lowercase();
            let cands = postings(mb, "w", p).unwrap_or_else(|| all(mb));
            filter(mb, cands, |m| {
                m.subject.to_lowercase().contains(&lower) || m.text.to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ").contains(&lower)
            })
        }
        Node::Op(op, v) => op_set(mb, op, v)?,
    })
}

fn op_set(mb: &mut Mailbox, op: &str, v: &str) -> Result<BTreeSet<u64>, String> {
    let lv = v.to_lowercase();
    Ok(match op {
        "from" | "to" | "cc" | "bcc" | "deliveredto" => {
            let field = if op == "deliveredto" { "to" } else { op };
            if lv == "me" {
                let me = mb.email.clone();
                let c = postings(mb, field, &me).unwrap_or_default();
                return Ok(filter(mb, c, |m| field_values(m, field).iter().any(|a| a.eq_ignore_ascii_case(&me))));
            }
            // Gmail matches words of the field; a whole address must be one of its addresses.
            let c = postings(mb, field, v).unwrap_or_else(|| all(mb));
            if lv.contains('@') {
                filter(mb, c, |m| field_values(m, field).iter().any(|a| **a == lv))
            } else {
                c
            }
        }
        "subject" | "filename" => postings(mb, op, v).unwrap_or_else(|| all(mb)),
        "label" => {
            let id = mb
                .resolve_label(v)
                .or_else(|| {
                    let spaced = v.replace(['-', '_'], " ");
                    mb.labels.iter().find(|l| l.name.eq_ignore_ascii_case(&spaced) || l.name.replace('/', "-").eq_ignore_ascii_case(v))
                })
                .map(|l| l.id.clone());
            match id {
                Some(id) => label_set(mb, &id),
                None => BTreeSet::new(),
            }
        }
        "in" => match lv.as_str() {
            "anywhere" | "all" => all(mb),
            "inbox" => label_set(mb, "INBOX"),
            "sent" => label_set(mb, "SENT"),
            "trash" => label_set(mb, "TRASH"),
            "spam" => label_set(mb, "SPAM"),
            "drafts" | "draft" => label_set(mb, "DRAFT"),
            "starred" => label_set(mb, "STARRED"),
            "important" => label_set(mb, "IMPORTANT"),
            "chats" | "chat" => label_set(mb, "CHAT"),
            _ => match mb.resolve_label(v).map(|l| l.id.clone()) {
                Some(id) => label_set(mb, &id),
                None => return Err(format!("Invalid search query: unknown location `in:{v}`")),
            },
        },
        "is" => match lv.as_str() {
            "unread" => label_set(mb, "UNREAD"),
            "read" => {
                let u = label_set(mb, "UNREAD");
                all(mb).difference(&u).copied().collect()
            }
            "starred" => label_set(mb, "STARRED"),
            "important" => label_set(mb, "IMPORTANT"),
            "sent" => label_set(mb, "SENT"),
            "draft" => label_set(mb, "DRAFT"),
            "chat" => label_set(mb, "CHAT"),
            _ => return Err(format!("Invalid search query: unknown `is:{v}`")),
        },
        "has" => match lv.as_str() {
            "attachment" => {
                let a = all(mb);
                filter(mb, a, |m| !m.filenames.is_empty())
            }
            "userlabels" | "nouserlabels" => {
                let want = lv == "userlabels";
                let a = all(mb);
                filter(mb, a, |m| m.label_ids.iter().any(|l| l.starts_with("Label_") || !l.chars().all(|c| c.is_ascii_uppercase() || c == '_')) == want)
            }
            _ => return Err(format!("Invalid search query: unknown `has:{v}`")),
        },
        "category" => {
            let id = match lv.as_str() {
                "primary" | "personal" => "CATEGORY_PERSONAL",
                "social" => "CATEGORY_SOCIAL",
                "promotions" => "CATEGORY_PROMOTIONS",
                "updates" => "CATEGORY_UPDATES",
                "forums" => "CATEGORY_FORUMS",
                _ => return Err(format!("Invalid search query: unknown `category:{v}`")),
            };
            label_set(mb, id)
        }
        "after" | "newer" => {
            let t = parse_date(v)?;
            by_date(mb, t, i64::MAX)
        }
        "before" | "older" => {
            let t = parse_date(v)?;
            by_date(mb, i64::MIN, t)
        }
        "newer_than" => {
            let t = parse_age(v)?;
            by_date(mb, t, i64::MAX)
        }
        "older_than" => {
            let t = parse_age(v)?;
            by_date(mb, i64::MIN, t)
        }
        "larger" | "size" => {
            let n = parse_size(v)?;
            mb.idx().by_size.range((n + 1, 0)..).map(|(_, k)| *k).collect()
        }
        "smaller" => {
            let n = parse_size(v)?;
            mb.idx().by_size.range(..(n, 0)).map(|(_, k)| *k).collect()
        }
        "rfc822msgid" => {
            let id = v.trim_matches(|c| c == '<' || c == '>');
            mb.idx().rfc_ids.get(id).copied().into_iter().collect()
        }
        _ => return Err(format!("Invalid search query: unknown operator `{op}:`")),
    })
}

/// The label a node stands for, when it is one label's list (`is:unread`, `in:inbox`,
/// `label:Build`, `category:social`); an unknown label stands for a label no message has.
fn simple_label(mb: &Mailbox, n: &Node) -> Option<String> {
    let Node::Op(op, v) = n else { return None };
    let lv = v.to_ascii_lowercase();
    let id = match (op.as_str(), lv.as_str()) {
        ("is", "unread") => "UNREAD",
        ("is" | "in", "starred") => "STARRED",
        ("is" | "in", "important") => "IMPORTANT",
        ("in", "inbox") => "INBOX",
        ("in" | "is", "sent") => "SENT",
        ("in", "trash") => "TRASH",
        ("in", "spam") => "SPAM",
        ("in", "drafts" | "draft") | ("is", "draft") => "DRAFT",
        ("category", "primary" | "personal") => "CATEGORY_PERSONAL",
        ("category", "social") => "CATEGORY_SOCIAL",
        ("category", "promotions") => "CATEGORY_PROMOTIONS",
        ("category", "updates") => "CATEGORY_UPDATES",
        ("category", "forums") => "CATEGORY_FORUMS",
        ("label", _) => {
            let spaced = v.replace(['-', '_'], " ");
            return Some(
                mb.resolve_label(v)
                    .or_else(|| mb.labels.iter().find(|l| l.name.eq_ignore_ascii_case(&spaced) || l.name.replace('/', "-").eq_ignore_ascii_case(v)))
                    .map(|l| l.id.clone())
                    .unwrap_or_else(|| "\u{0}no such label".to_string()),
            );
        }
        _ => return None,
    };
    Some(id.to_string())
}

/// The (index field, words) of a node answered by word postings alone.
fn token_operand(n: &Node) -> Option<(&'static str, &str)> {
    match n {
        Node::Word(w) => Some(("w", w.as_str())),
        Node::Op(op, v) => match op.as_str() {
            "subject" => Some(("subject", v.as_str())),
            "filename" => Some(("filename", v.as_str())),
            "from" if !v.contains('@') && v != "me" => Some(("from", v.as_str())),
            "to" if !v.contains('@') && v != "me" => Some(("to", v.as_str())),
            "cc" if !v.contains('@') && v != "me" => Some(("cc", v.as_str())),
            "bcc" if !v.contains('@') && v != "me" => Some(("bcc", v.as_str())),
            _ => None,
        },
        _ => None,
    }
}

/// Whether message `key` matches `n`, decided for that message alone (negations inside a
/// conjunction filter its candidates this way instead of building the complement).
fn matches(mb: &mut Mailbox, n: &Node, key: u64) -> Result<bool, String> {
    Ok(match n {
        Node::And(items) => {
            for it in items {
                if !matches(mb, it, key)? {
                    return Ok(false);
                }
            }
            true
        }
        Node::Or(items) => {
            for it in items {
                if matches(mb, it, key)? {
                    return Ok(true);
                }
            }
            false
        }
        Node::Not(inner) => !matches(mb, inner, key)?,
        Node::Word(w) => has_tokens(mb, "w", w, key),
        Node::Op(op, v) if matches!(op.as_str(), "subject" | "filename") => has_tokens(mb, op, v, key),
        Node::Op(op, v) if matches!(op.as_str(), "from" | "to" | "cc" | "bcc") && !v.contains('@') && v != "me" => has_tokens(mb, op, v, key),
        Node::Op(op, v) if op == "label" || op == "in" || op == "is" || op == "category" => {
            let lv = v.to_ascii_lowercase();
            let m = &mb.messages[&key];
            match (op.as_str(), lv.as_str()) {
                ("in", "anywhere" | "all") => true,
                ("is", "read") => !m.has("UNREAD"),
                ("is", "unread") => m.has("UNREAD"),
                ("is" | "in", "starred") => m.has("STARRED"),
                ("is" | "in", "important") => m.has("IMPORTANT"),
                ("in", "inbox") => m.has("INBOX"),
                ("in", "sent") | ("is", "sent") => m.has("SENT"),
                ("in", "trash") => m.has("TRASH"),
                ("in", "spam") => m.has("SPAM"),
                ("in", "drafts" | "draft") | ("is", "draft") => m.has("DRAFT"),
                _ => op_set(mb, op, v)?.contains(&key),
            }
        }
        other => eval(mb, other)?.contains(&key),
    })
}

fn field_values<'a>(m: &'a crate::model::Message, field: &str) -> Vec<&'a String> {
    match field {
        "from" => vec![&m.from],
        "to" => m.to.iter().collect(),
        "cc" => m.cc.iter().collect(),
        "bcc" => m.bcc.iter().collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parser_reads_groups_negation_or_and_quoted_operands() {
        let n = parse("from:alice -is:read (subject:\"export stuck\" OR {label:Build filename:log})").unwrap().unwrap();
        let Node::And(items) = n else { panic!("{n:?}") };
        assert_eq!(items[0], Node::Op("from".into(), "alice".into()));
        assert_eq!(items[1], Node::Not(Box::new(Node::Op("is".into(), "read".into()))));
        assert!(matches!(&items[2], Node::Or(v) if v.len() == 2));
    }

    #[test]
    fn an_unknown_operator_is_an_error() {
        assert!(parse("frmo:alice").unwrap_err().contains("frmo"));
        assert!(parse("(from:alice").is_err());
    }
}
