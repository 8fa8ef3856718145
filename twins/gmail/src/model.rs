//! The world: mailboxes holding messages (RFC 5322 bytes plus what Gmail derives from them),
//! labels, drafts, history and settings. Ordered containers only; the search index is derived
//! and rebuilt after a restore.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::mime::{self, Summary};

pub const SYSTEM_LABELS: &[&str] = &[
    "CHAT", "SENT", "INBOX", "IMPORTANT", "TRASH", "DRAFT", "SPAM", "CATEGORY_FORUMS", "CATEGORY_UPDATES",
    "CATEGORY_PERSONAL", "CATEGORY_PROMOTIONS", "CATEGORY_SOCIAL", "STARRED", "UNREAD", "YELLOW_STAR",
];

pub use crate::limits::{HISTORY_KEPT_MS, HISTORY_MAX_BYTES};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct World {
    pub primary: usize,
    pub mailboxes: Vec<Mailbox>,
    /// `sender-only` or `seeded-mailboxes`.
    pub delivery_mode: String,
    pub clock: Option<String>,
    pub faults: Vec<Fault>,
    /// Resumable uploads under way: upload id → (action, userId, metadata JSON, bytes so far).
    pub uploads: BTreeMap<String, Upload>,
    pub seq: u64,
    /// The seed's Cloud Pub/Sub topics and subscriptions, and what was published to them.
    pub pubsub: crate::push::PubSub,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Upload {
    pub action: String,
    pub user: String,
    pub path_id: Option<String>,
    pub metadata: String,
    pub bytes: Vec<u8>,
    /// When the session began, in Unix milliseconds of the sandbox clock: Google's upload
    /// sessions expire a week after they begin.
    pub created_ms: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Fault {
    /// An action name (`messages.send`) or `*`.
    pub method: String,
    pub after: u64,
    pub count: u64,
    pub retry_after: u64,
    pub seen: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Label {
    pub id: String,
    pub name: String,
    pub system: bool,
    pub message_list_visibility: Option<String>,
    pub label_list_visibility: Option<String>,
    #[serde(with = "json_text")]
    pub color: Option<Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Message {
    pub id: String,
    pub thread_id: String,
    pub label_ids: Vec<String>,
    pub history_id: u64,
    pub internal_date: i64,
    pub raw: Vec<u8>,
    // Derived from `raw` when stored.
    pub from: String,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
    pub subject: String,
    pub rfc_id: String,
    pub in_reply_to: String,
    pub references: Vec<String>,
    pub text: String,
    pub snippet: String,
    pub filenames: Vec<String>,
}

impl Message {
    pub fn new(id: String, thread_id: String, label_ids: Vec<String>, internal_date: i64, raw: Vec<u8>, s: Summary) -> Message {
        Message {
            id,
            thread_id,
            label_ids,
            history_id: 0,
            internal_date,
            raw,
            from: s.from,
            to: s.to,
            cc: s.cc,
            bcc: s.bcc,
            subject: s.subject,
            rfc_id: s.message_id,
            in_reply_to: s.in_reply_to,
            references: s.references,
            text: s.text,
            snippet: s.snippet,
            filenames: s.filenames,
        }
    }
    pub fn has(&self, label: &str) -> bool {
        self.label_ids.iter().any(|l| l == label)
    }
    pub fn size(&self) -> usize {
        self.raw.len()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Draft {
    pub id: String,
    pub message_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub enum HistKind {
    Added,
    Deleted,
    LabelsAdded(Vec<String>),
    LabelsRemoved(Vec<String>),
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HistoryRecord {
    pub id: u64,
    pub message_id: String,
    pub thread_id: String,
    /// The message's labels after the change.
    pub label_ids: Vec<String>,
    pub kind: HistKind,
    /// When it happened, in Unix milliseconds of the sandbox clock (for the week kept).
    pub at_ms: i64,
}

impl HistoryRecord {
    /// What the record costs to keep, counted toward [`HISTORY_MAX_BYTES`].
    pub fn weight(&self) -> usize {
        let labels = |l: &[String]| l.iter().map(|x| x.len() + 24).sum::<usize>();
        let kind = match &self.kind {
            HistKind::LabelsAdded(l) | HistKind::LabelsRemoved(l) => labels(l),
            HistKind::Added | HistKind::Deleted => 0,
        };
        std::mem::size_of::<HistoryRecord>() + self.message_id.len() + self.thread_id.len() + labels(&self.label_ids) + kind
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Mailbox {
    pub email: String,
    pub display_name: String,
    pub labels: Vec<Label>,
    /// Keyed by an internal sequence number (insertion order).
    pub messages: BTreeMap<u64, Message>,
    pub ids: BTreeMap<String, u64>,
    pub drafts: Vec<Draft>,
    pub history_id: u64,
    pub history: Vec<HistoryRecord>,
    /// The oldest history id still answerable.
    pub history_floor: u64,
    /// The [`HistoryRecord::weight`] of `history`, kept as records come and go.
    pub history_bytes: usize,
    pub next_key: u64,
    pub label_seq: u64,
    #[serde(with = "json_text")]
    pub settings: Settings,
    #[serde(skip)]
    pub index: Option<Index>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Settings {
    pub auto_forwarding: Value,
    pub imap: Value,
    pub pop: Value,
    pub language: Value,
    pub vacation: Value,
    pub filters: Vec<Value>,
    pub forwarding: Vec<Value>,
    pub send_as: Vec<Value>,
    pub delegates: Vec<Value>,
    pub watch: Option<Value>,
    #[serde(default)]
    pub smime: Vec<Value>,
    #[serde(default)]
    pub cse_identities: Vec<Value>,
    #[serde(default)]
    pub cse_keypairs: Vec<Value>,
}

impl Settings {
    pub fn defaults(email: &str, name: &str) -> Settings {
        Settings {
            auto_forwarding: serde_json::json!({"enabled": false}),
            imap: serde_json::json!({"enabled": true, "autoExpunge": true, "expungeBehavior": "archive", "maxFolderSize": 0}),
            pop: serde_json::json!({"accessWindow": "disabled", "disposition": "leaveInInbox"}),
            language: serde_json::json!({"displayLanguage": "en"}),
            vacation: serde_json::json!({"enableAutoReply": false, "responseBodyPlainText": "", "restrictToContacts": false, "restrictToDomain": false}),
            filters: Vec::new(),
            forwarding: Vec::new(),
            send_as: vec![serde_json::json!({
                "sendAsEmail": email, "displayName": name, "replyToAddress": "", "signature": "",
                "isPrimary": true, "isDefault": true
            })],
            delegates: Vec::new(),
            watch: None,
            smime: Vec::new(),
            cse_identities: Vec::new(),
            cse_keypairs: Vec::new(),
        }
    }
}

/// Derived lookups: messages by date, by thread, by label and by search term.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Index {
    pub by_date: BTreeSet<(i64, u64)>,
    pub by_size: BTreeSet<(usize, u64)>,
    /// Each message's internal date by key, for ordering results without touching messages.
    pub dates: Vec<i64>,
    pub threads: BTreeMap<String, BTreeSet<u64>>,
    pub labels: BTreeMap<String, BTreeSet<u64>>,
    /// Word postings keyed by [`term_key`] of (field, word).
    pub terms: BTreeMap<u64, BTreeSet<u64>>,
    pub rfc_ids: BTreeMap<String, u64>,
}

/// The posting key of a word in a field: 64-bit FNV-1a of `field:word`, so the index holds
/// no strings and compares integers (a collision would only widen a candidate set).
pub fn term_key(field: &str, word: &str) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in field.bytes().chain(std::iter::once(b':')).chain(word.bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// Lower-case word tokens of `s` (letters and digits).
pub fn tokens(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(|c: char| !c.is_alphanumeric()).filter(|t| !t.is_empty()).map(|t| t.to_lowercase())
}

impl Index {
    fn terms_of(m: &Message) -> BTreeSet<u64> {
        let mut out = BTreeSet::new();
        let mut field = |f: &str, s: &str| {
            for t in tokens(s) {
                out.insert(term_key(f, &t));
            }
        };
        field("from", &m.from);
        for a in &m.to {
            field("to", a);
        }
        for a in &m.cc {
            field("cc", a);
        }
        for a in &m.bcc {
            field("bcc", a);
        }
        field("subject", &m.subject);
        for f in &m.filenames {
            field("filename", f);
        }
        field("w", &m.subject);
        field("w", &m.text);
        field("w", &m.from);
        for a in m.to.iter().chain(&m.cc) {
            field("w", a);
        }
        out
    }

    pub fn add(&mut self, key: u64, m: &Message) {
        self.by_date.insert((m.internal_date, key));
        self.by_size.insert((m.size(), key));
        if self.dates.len() <= key as usize {
            self.dates.resize(key as usize + 1, 0);
        }
        self.dates[key as usize] = m.internal_date;
        self.threads.entry(m.thread_id.clone()).or_default().insert(key);
        for l in &m.label_ids {
            self.labels.entry(l.clone()).or_default().insert(key);
        }
        for t in Self::terms_of(m) {
            self.terms.entry(t).or_default().insert(key);
        }
        if !m.rfc_id.is_empty() {
            self.rfc_ids.insert(m.rfc_id.clone(), key);
        }
    }

    pub fn remove(&mut self, key: u64, m: &Message) {
        self.by_date.remove(&(m.internal_date, key));
        self.by_size.remove(&(m.size(), key));
        if let Some(s) = self.threads.get_mut(&m.thread_id) {
            s.remove(&key);
            if s.is_empty() {
                self.threads.remove(&m.thread_id);
            }
        }
        for l in &m.label_ids {
            if let Some(s) = self.labels.get_mut(l) {
                s.remove(&key);
            }
        }
        for t in Self::terms_of(m) {
            if let Some(s) = self.terms.get_mut(&t) {
                s.remove(&key);
                if s.is_empty() {
                    self.terms.remove(&t);
                }
            }
        }
        if self.rfc_ids.get(&m.rfc_id) == Some(&key) {
            self.rfc_ids.remove(&m.rfc_id);
        }
    }
}

impl Mailbox {
    pub fn new(email: &str, name: &str) -> Mailbox {
        let labels = SYSTEM_LABELS
            .iter()
            .map(|id| Label {
                id: id.to_string(),
                name: id.to_string(),
                system: true,
                message_list_visibility: None,
                label_list_visibility: None,
                color: None,
            })
            .collect();
        Mailbox {
            email: email.to_string(),
            display_name: name.to_string(),
            labels,
            messages: BTreeMap::new(),
            ids: BTreeMap::new(),
            drafts: Vec::new(),
            history_id: 1000,
            history: Vec::new(),
            history_floor: 1000,
            history_bytes: 0,
            next_key: 1,
            label_seq: 1,
            settings: Settings::defaults(email, name),
            index: None,
        }
    }

    /// The index, built on first use (after seeding or a restore).
    pub fn idx(&mut self) -> &mut Index {
        if self.index.is_none() {
            let mut ix = Index::default();
            for (k, m) in &self.messages {
                ix.add(*k, m);
            }
            self.index = Some(ix);
        }
        self.index.as_mut().unwrap()
    }

    pub fn key(&self, id: &str) -> Option<u64> {
        self.ids.get(id).copied()
    }
    pub fn get(&self, id: &str) -> Option<&Message> {
        self.messages.get(&self.key(id)?)
    }

    pub fn label_by_id(&self, id: &str) -> Option<&Label> {
        self.labels.iter().find(|l| l.id == id)
    }
    /// A label by id, or by name without regard to case.
    pub fn resolve_label(&self, s: &str) -> Option<&Label> {
        self.label_by_id(s).or_else(|| self.labels.iter().find(|l| l.name.eq_ignore_ascii_case(s)))
    }

    pub fn bump(&mut self) -> u64 {
        self.history_id += 1;
        self.history_id
    }

    /// Record a change at the sandbox clock's now.
    fn push_history(&mut self, kind: HistKind, message_id: &str, thread_id: &str, label_ids: &[String]) -> u64 {
        let id = self.bump();
        let at_ms = pome_twin_sdk::time::now().timestamp_millis();
        let rec = HistoryRecord { id, message_id: message_id.to_string(), thread_id: thread_id.to_string(), label_ids: label_ids.to_vec(), kind, at_ms };
        self.keep_history(rec);
        id
    }

    /// Keep a record, then let go of what Gmail would no longer answer: records older than a
    /// week of the sandbox clock, and the oldest ones while the log is over its bytes. The
    /// floor moves to the last record let go, so a start id at or after it is still whole.
    pub fn keep_history(&mut self, rec: HistoryRecord) {
        let now = rec.at_ms;
        self.history_bytes += rec.weight();
        self.history.push(rec);
        let expired = self.history.partition_point(|r| r.at_ms < now - HISTORY_KEPT_MS);
        let mut drop = expired;
        if self.history_bytes > HISTORY_MAX_BYTES {
            // Down to three quarters, so a full log does not shift on every change.
            let mut bytes = self.history_bytes;
            let mut n = 0;
            for r in &self.history {
                if bytes <= HISTORY_MAX_BYTES / 4 * 3 {
                    break;
                }
                bytes -= r.weight();
                n += 1;
            }
            drop = drop.max(n);
        }
        if drop > 0 {
            self.history_floor = self.history[drop - 1].id;
            let gone: usize = self.history.drain(..drop).map(|r| r.weight()).sum();
            self.history_bytes -= gone;
        }
    }

    /// Store a new message (recording history unless `quiet`, which seeding uses).
    pub fn insert(&mut self, mut m: Message, quiet: bool) -> u64 {
        m.history_id = if quiet {
            let hid = self.bump();
            self.history_floor = hid;
            hid
        } else {
            self.push_history(HistKind::Added, &m.id, &m.thread_id, &m.label_ids)
        };
        let key = self.next_key;
        self.next_key += 1;
        self.idx().add(key, &m);
        self.ids.insert(m.id.clone(), key);
        self.messages.insert(key, m);
        key
    }

    pub fn remove(&mut self, id: &str) -> Option<Message> {
        let key = self.ids.remove(id)?;
        let m = self.messages.remove(&key)?;
        self.idx().remove(key, &m);
        self.push_history(HistKind::Deleted, &m.id, &m.thread_id, &m.label_ids);
        Some(m)
    }

    /// Add and remove labels on a message, recording history when anything changed.
    /// Returns whether the labels changed.
    pub fn relabel(&mut self, id: &str, add: &[String], remove: &[String]) -> bool {
        let Some(key) = self.key(id) else { return false };
        let before = self.messages[&key].label_ids.clone();
        let mut after = before.clone();
        let mut added = Vec::new();
        let mut removed = Vec::new();
        for l in add {
            if !after.contains(l) {
                after.push(l.clone());
                added.push(l.clone());
            }
        }
        for l in remove {
            if let Some(p) = after.iter().position(|x| x == l) {
                after.remove(p);
                removed.push(l.clone());
            }
        }
        if added.is_empty() && removed.is_empty() {
            return false;
        }
        let ix = self.idx();
        for l in &added {
            ix.labels.entry(l.clone()).or_default().insert(key);
        }
        for l in &removed {
            if let Some(s) = ix.labels.get_mut(l) {
                s.remove(&key);
            }
        }
        let thread_id = self.messages[&key].thread_id.clone();
        for (kind, list) in [(true, added), (false, removed)] {
            if list.is_empty() {
                continue;
            }
            let kind = if kind { HistKind::LabelsAdded(list) } else { HistKind::LabelsRemoved(list) };
            self.push_history(kind, id, &thread_id, &after);
        }
        let hid = self.history_id;
        let m = self.messages.get_mut(&key).unwrap();
        m.label_ids = after;
        m.history_id = hid;
        true
    }

    /// Messages of a thread, oldest first.
    pub fn thread(&mut self, thread_id: &str) -> Vec<u64> {
        let keys: Vec<u64> = self.idx().threads.get(thread_id).map(|s| s.iter().copied().collect()).unwrap_or_default();
        let mut v: Vec<(i64, u64)> = keys.iter().map(|k| (self.messages[k].internal_date, *k)).collect();
        v.sort();
        v.into_iter().map(|(_, k)| k).collect()
    }

    pub fn summary_of(&self, key: u64) -> &Message {
        &self.messages[&key]
    }
}

/// Free-form JSON kept as its text in snapshots: postcard cannot carry `serde_json::Value`.
mod json_text {
    use serde::de::{DeserializeOwned, Error as _};
    use serde::ser::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<T: Serialize, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&serde_json::to_string(v).map_err(S::Error::custom)?)
    }

    pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
        let text = String::deserialize(d)?;
        serde_json::from_str(&text).map_err(D::Error::custom)
    }
}

/// `Summary` of a stored raw message; panics never (a stored message parsed once already).
pub fn resummarize(raw: &[u8]) -> Summary {
    mime::summarize(raw).unwrap_or_default()
}
