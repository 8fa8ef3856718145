//! How objects are kept: compact JSON text, each object stored as the fields that differ
//! from its kind's template. Stripe objects are wide (a PaymentIntent has 45 fields, most of
//! them null or a constant), and a sandbox under load keeps tens of thousands of them inside
//! a 128 MiB store: a `serde_json::Value` tree costs about 3 KB per object, its text diff a
//! few hundred bytes.
//!
//! A kind's template is the first object of that kind the world stored; it never changes
//! afterwards (stored diffs depend on it), and it travels in snapshots. An object is stored
//! as a diff only when its keys start with the template's keys in the template's order, so
//! merging the diff back into the template gives the object byte for byte; any other object
//! is stored whole. An event's `data.object` is diffed against the template of its own kind.

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// Whether two texts are equal, compared eight bytes at a time and inlined: `==` calls
/// `memcmp` out of line (the SDK's, also eight bytes at a time), and a payment compares
/// kilobytes of short field texts (every field against its template's, every field of a
/// PaymentIntent against its previous value); the call alone cost a payment 7 %.
#[inline]
pub fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    if a.as_ptr() == b.as_ptr() {
        return true;
    }
    let (mut ca, mut cb) = (a.chunks_exact(8), b.chunks_exact(8));
    for (x, y) in (&mut ca).zip(&mut cb) {
        let word = |c: &[u8]| u64::from_ne_bytes(c.try_into().expect("chunks of eight"));
        if word(x) != word(y) {
            return false;
        }
    }
    ca.remainder().iter().zip(cb.remainder()).all(|(x, y)| x == y)
}

/// An object's id as the key of the world's object map ([`Objects`]): hashed by its text,
/// and ordered as its text is (byte by byte) but compared eight bytes at a time and inline,
/// for writing a world of a few hundred thousand objects out in id order without a `memcmp`
/// call per comparison. Serialised as the plain string it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Id {
    /// The first sixteen bytes, zero-padded, as two big-endian words: almost every
    /// comparison is decided by these.
    head: [u64; 2],
    pub text: String,
}

impl Id {
    pub fn of(id: &str) -> Id {
        Id::from(id.to_string())
    }
}

impl From<String> for Id {
    fn from(text: String) -> Id {
        let mut bytes = [0u8; 16];
        let n = text.len().min(16);
        bytes[..n].copy_from_slice(&text.as_bytes()[..n]);
        let word = |i: usize| u64::from_be_bytes(bytes[i..i + 8].try_into().expect("eight bytes"));
        Id { head: [word(0), word(8)], text }
    }
}

impl Ord for Id {
    fn cmp(&self, other: &Id) -> std::cmp::Ordering {
        // Zero padding keeps the heads in text order; equal heads fall back to the text.
        self.head.cmp(&other.head).then_with(|| lex_cmp(self.text.as_bytes(), other.text.as_bytes()))
    }
}

impl PartialOrd for Id {
    fn partial_cmp(&self, other: &Id) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::hash::Hash for Id {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        // The head is made from the text: equal texts have equal heads.
        self.text.hash(h)
    }
}

/// Every object of a world by id. A hash map: a sandbox under load holds a few hundred
/// thousand objects and a payment inserts seven, where a B-tree walked seven levels of
/// id comparisons for each (a sixth of a payment's time in the twin). Its hasher has no
/// seed, and it is written out in id order, so a snapshot is the same bytes whatever
/// order the objects went in.
///
/// Split into [`SHARDS`] maps by a hash of the id: a hash map grows by moving every entry
/// into a table twice the size, and one map of 450,000 objects held its payment for 160 ms
/// doing so (and every request queued behind it). A shard moves a thousandth of that: with
/// 64 shards, which fill evenly and so grow within a few thousand payments of each other, a
/// world of 450,000 objects still spent 1.5–2.5 ms of a payment on each of 64 growths.
///
/// Events (ids `evt_…`) are kept apart, in [`Events`]: the world keeps only the newest
/// ([`crate::EVENTS_KEPT`]), and forgetting a thousand of them at once must cost what
/// forgetting one does.
#[derive(Debug, Clone)]
pub struct Objects {
    shards: Vec<Shard>,
    events: Events,
}

type Shard = HashMap<Id, Stored, BuildHasherDefault<rustc_hash::FxHasher>>;

/// Maps the objects are split over: enough that growing one moves about 100 KB at a million
/// objects (a tenth of a millisecond); few enough that an empty world's maps are 32 KB.
const SHARDS: usize = 1024;

/// The objects whose id starts `evt_` (every event the twin makes; whatever a seed names so),
/// each with its generation: the events of a world are numbered in the order they joined
/// it (their kind's creation order), and the world forgets its oldest events by raising
/// [`Events::floor`]. An event below the floor is gone at once for every reader (`get`,
/// `iter`, `len`, snapshots) but leaves the map a few at a time ([`Objects::tidy`]), so no
/// write pays for a whole batch of removals (issue #36: a thousand removals from a large
/// world's maps took a payment 1–5 ms every 333 payments).
///
/// A B-tree, not a hash map: the events churn (as many leave as come), and a hash table
/// churned fills with deleted markers until it stops to rehash itself whole (about a
/// millisecond at ten thousand events); a B-tree's removal is local.
#[derive(Debug, Clone, Default)]
struct Events {
    map: BTreeMap<Id, (u64, Stored)>,
    /// The generation the next new event takes.
    next: u64,
    /// Entries below this generation are forgotten.
    floor: u64,
    /// Ids of forgotten entries, oldest first, not yet removed from the map.
    graveyard: std::collections::VecDeque<String>,
}

/// The generation of an object that is not an event kept in creation order (an object of
/// another kind with an `evt_` id): never forgotten by the floor.
const ALWAYS: u64 = u64::MAX;

/// Forgotten events removed from the map by each new object stored: a batch of
/// [`crate::EVENTS_KEPT`]` / 10` is gone long before the next batch is forgotten (that takes as
/// many new events).
const TIDIED_PER_WRITE: usize = 4;

impl Events {
    fn live(&self, entry: &(u64, Stored)) -> bool {
        entry.0 >= self.floor
    }
    fn get(&self, id: &Id) -> Option<&Stored> {
        self.map.get(id).filter(|e| self.live(e)).map(|e| &e.1)
    }
    fn insert(&mut self, id: Id, stored: Stored) -> Option<Stored> {
        let floor = self.floor;
        if let Some(e) = self.map.get_mut(&id).filter(|e| e.0 >= floor) {
            // The same object again (an update): an event keeps its place among the events.
            if &*stored.kind != "event" {
                e.0 = ALWAYS;
            }
            return Some(std::mem::replace(&mut e.1, stored));
        }
        // New, or back after being forgotten (a forgotten entry is no object).
        let generation = if &*stored.kind == "event" {
            self.next += 1;
            self.next - 1
        } else {
            ALWAYS
        };
        self.map.insert(id, (generation, stored));
        None
    }
    fn remove(&mut self, id: &Id) -> Option<Stored> {
        match self.map.get(id) {
            Some(e) if self.live(e) => self.map.remove(id).map(|e| e.1),
            _ => None,
        }
    }
    fn live_len(&self) -> usize {
        self.map.values().filter(|e| self.live(e)).count()
    }
}

impl Default for Objects {
    fn default() -> Objects {
        Objects { shards: (0..SHARDS).map(|_| Shard::default()).collect(), events: Events::default() }
    }
}

/// Whether an id is kept with the events.
fn is_event_id(id: &Id) -> bool {
    id.text.as_bytes().starts_with(b"evt_")
}

impl Objects {
    /// The shard of `id`: the high bits of a 64-bit FNV-1a of its text. Not the maps' own
    /// hasher: on wasm32 FxHasher's state is 32 bits, so the `>> 32` this once took was
    /// always 0 and every object went to one shard; and bits the maps' hasher also uses to
    /// place entries would crowd each shard's entries into the same slots.
    fn shard(&self, id: &Id) -> usize {
        let mut x: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in id.text.as_bytes() {
            x ^= u64::from(b);
            x = x.wrapping_mul(0x0100_0000_01b3);
        }
        (x >> 40) as usize % SHARDS
    }

    /// How many objects each shard holds (events apart).
    #[cfg(test)]
    pub fn shard_sizes(&self) -> Vec<usize> {
        self.shards.iter().map(HashMap::len).collect()
    }
    pub fn get(&self, id: &Id) -> Option<&Stored> {
        if is_event_id(id) {
            return self.events.get(id);
        }
        self.shards[self.shard(id)].get(id)
    }
    pub fn contains_key(&self, id: &Id) -> bool {
        self.get(id).is_some()
    }
    pub fn insert(&mut self, id: Id, stored: Stored) -> Option<Stored> {
        if is_event_id(&id) {
            return self.events.insert(id, stored);
        }
        let shard = self.shard(&id);
        self.shards[shard].insert(id, stored)
    }
    pub fn remove(&mut self, id: &Id) -> Option<Stored> {
        if is_event_id(id) {
            return self.events.remove(id);
        }
        let shard = self.shard(id);
        self.shards[shard].remove(id)
    }
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.len()).sum::<usize>() + self.events.live_len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// In no particular order (the same order for the same world).
    pub fn iter(&self) -> impl Iterator<Item = (&Id, &Stored)> {
        let events = self.events.map.iter().filter(|(_, e)| self.events.live(e)).map(|(id, e)| (id, &e.1));
        self.shards.iter().flatten().chain(events)
    }
    pub fn values(&self) -> impl Iterator<Item = &Stored> {
        self.iter().map(|(_, s)| s)
    }

    /// Forget the events `oldest`: the oldest of the world's order of events, oldest first
    /// (every event older than them is forgotten already). They are gone at once; the map
    /// lets them go over the next writes ([`Objects::tidy`]).
    pub fn forget_events(&mut self, oldest: Vec<String>) {
        // Events are numbered in the order the world lists them: the newest forgotten one's
        // number is the new floor, and no event of the list is below it.
        let newest = oldest.iter().rev().map(|id| Id::of(id)).find(is_event_id);
        if let Some(&(generation, _)) = newest.and_then(|id| self.events.map.get(&id)).filter(|e| self.events.live(e) && e.0 != ALWAYS) {
            self.events.floor = generation + 1;
        }
        for id in oldest {
            let id = Id::from(id);
            if is_event_id(&id) {
                self.events.graveyard.push_back(id.text);
            } else {
                // A seeded event with an id of another shape, kept with the other objects.
                self.remove(&id);
            }
        }
    }

    /// Let a few forgotten events go from the map: what each new object stored pays.
    pub fn tidy(&mut self) {
        for _ in 0..TIDIED_PER_WRITE {
            let Some(text) = self.events.graveyard.pop_front() else { return };
            let id = Id::from(text);
            if self.events.map.get(&id).is_some_and(|e| !self.events.live(e)) {
                self.events.map.remove(&id);
            }
        }
    }

    /// Number the events in the order the world lists them (`order`, oldest first), as
    /// storing them one by one did: for a world read back from a snapshot, whose objects
    /// come in id order.
    pub fn number_events(&mut self, order: Option<&Ids>) {
        let ev = &mut self.events;
        ev.graveyard.clear();
        ev.floor = 0;
        for e in ev.map.values_mut() {
            e.0 = ALWAYS;
        }
        let mut next = 0;
        for id in order.into_iter().flat_map(Ids::iter) {
            if let Some(e) = ev.map.get_mut(&Id::of(id)).filter(|e| &*e.1.kind == "event") {
                e.0 = next;
                next += 1;
            }
        }
        ev.next = next;
    }
}

impl PartialEq for Objects {
    /// The same objects (forgotten events that have not left the map yet are none).
    fn eq(&self, other: &Objects) -> bool {
        self.len() == other.len() && self.iter().all(|(id, s)| other.get(id) == Some(s))
    }
}

impl Serialize for Objects {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut sorted: Vec<(&Id, &Stored)> = self.iter().collect();
        sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
        s.collect_map(sorted)
    }
}

impl<'de> Deserialize<'de> for Objects {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Objects, D::Error> {
        struct Each;
        impl<'de> serde::de::Visitor<'de> for Each {
            type Value = Objects;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of objects by id")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Objects, A::Error> {
                let mut objects = Objects::default();
                while let Some((id, stored)) = map.next_entry::<Id, Stored>()? {
                    objects.insert(id, stored);
                }
                Ok(objects)
            }
        }
        d.deserialize_map(Each)
    }
}

impl Serialize for Id {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Id, D::Error> {
        String::deserialize(d).map(Id::from)
    }
}

/// Byte-wise (lexicographic) order, eight bytes at a time.
fn lex_cmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let (mut ca, mut cb) = (a.chunks_exact(8), b.chunks_exact(8));
    for (x, y) in (&mut ca).zip(&mut cb) {
        let word = |c: &[u8]| u64::from_be_bytes(c.try_into().expect("chunks of eight"));
        let (x, y) = (word(x), word(y));
        if x != y {
            return x.cmp(&y);
        }
    }
    let n = a.len().min(b.len()) / 8 * 8;
    for (x, y) in a[n..].iter().zip(&b[n..]) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

/// One stored object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stored {
    /// Its `object` field (`payment_intent`).
    pub kind: Box<str>,
    /// Compact JSON: the diff against the kind's template, or the whole object.
    pub text: Box<str>,
    /// (Every field is always written: postcard snapshots cannot skip one.)
    #[serde(default)]
    pub diff: bool,
    /// For an event: the kind of `data.object`, when that is stored as a diff.
    #[serde(default)]
    pub inner: Option<Box<str>>,
}

/// A kind's template, with each field's compact JSON rendered once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "Map<String, Value>", into = "Map<String, Value>")]
pub struct Template {
    pub map: Map<String, Value>,
    /// `"key":` and the value's text, in order.
    parts: Vec<(String, String)>,
}

impl From<Map<String, Value>> for Template {
    fn from(map: Map<String, Value>) -> Template {
        let parts = map
            .iter()
            .map(|(k, v)| (format!("{}:", serde_json::to_string(k).unwrap()), serde_json::to_string(v).unwrap()))
            .collect();
        Template { map, parts }
    }
}

impl From<Template> for Map<String, Value> {
    fn from(t: Template) -> Map<String, Value> {
        t.map
    }
}

pub type Templates = BTreeMap<String, Template>;

/// The diff of an object's compact text against its kind's template `t`, if its keys start
/// with the template's keys: the fields whose text differs, then the fields the template
/// lacks. Values are compared as text, which is what rendering gives back.
fn diff_text(t: &Template, text: &str) -> Option<String> {
    let pairs = fields(text)?;
    if pairs.len() < t.parts.len() || !pairs.iter().zip(&t.parts).all(|((pk, _), (k, _))| k.len() == pk.len() + 3 && same(&k[1..k.len() - 2], pk)) {
        return None;
    }
    let mut out = String::with_capacity(text.len() / 2);
    out.push('{');
    for (i, (pk, v)) in pairs.iter().enumerate() {
        let key = match t.parts.get(i) {
            Some((_, tv)) if same(tv, v) => continue,
            Some((k, _)) => k.as_str(),
            None => "",
        };
        if out.len() > 1 {
            out.push(',');
        }
        if key.is_empty() {
            out.push('"');
            out.push_str(pk);
            out.push_str("\":");
        } else {
            out.push_str(key);
        }
        out.push_str(v);
    }
    out.push('}');
    Some(out)
}

/// Encode an object of `kind` given as compact JSON text, learning the kind's template if it
/// has none yet: (stored text, whether it is a diff).
pub fn encode_text(templates: &mut Templates, kind: &str, text: String) -> (String, bool) {
    if !templates.contains_key(kind) {
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(m)) => {
                templates.insert(kind.to_string(), Template::from(m));
            }
            _ => return (text, false),
        }
    }
    match diff_text(&templates[kind], &text) {
        Some(d) => (d, true),
        None => (text, false),
    }
}

/// [`encode_text`] of a `Value`.
pub fn encode_obj(templates: &mut Templates, kind: &str, obj: &Value) -> (String, bool) {
    if !obj.is_object() {
        return (obj.to_string(), false);
    }
    encode_text(templates, kind, obj.to_string())
}

/// Store an object of `kind` given as compact JSON text (not an event).
pub fn stored_text(templates: &mut Templates, kind: &str, text: String) -> Stored {
    let (text, diff) = encode_text(templates, kind, text);
    Stored { kind: kind.into(), text: text.into(), diff, inner: None }
}

pub fn encode(templates: &mut Templates, obj: &Value) -> Stored {
    let kind = obj["object"].as_str().unwrap_or_default().to_string();
    if kind == "event" {
        if let Some(inner_kind) = obj["data"]["object"]["object"].as_str().filter(|k| *k != "event").map(str::to_string) {
            let (inner_text, inner_diff) = encode_obj(templates, &inner_kind, &obj["data"]["object"]);
            if inner_diff {
                // The event with `data.object` swapped for its diff (a placeholder of the
                // same key keeps the event's field order).
                let mut ev = obj.clone();
                ev["data"]["object"] = Value::Null;
                let mut text = ev.to_string();
                let hole = "\"object\":null";
                let at = text.find("\"data\":{").map(|d| d + 8).filter(|d| text[*d..].starts_with(hole));
                if let Some(at) = at {
                    text.replace_range(at..at + hole.len(), &format!("\"object\":{inner_text}"));
                    return Stored { kind: kind.into(), text: text.into(), diff: false, inner: Some(inner_kind.into()) };
                }
            }
        }
        return Stored { kind: kind.into(), text: obj.to_string().into(), diff: false, inner: None };
    }
    stored_text(templates, &kind, obj.to_string())
}

/// A JSON object's fields as raw text, in order, borrowed from the input.
pub(crate) struct RawPairs<'a>(pub(crate) Vec<(&'a str, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for RawPairs<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawPairs<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<RawPairs<'de>, A::Error> {
                let mut out = Vec::with_capacity(m.size_hint().unwrap_or(8));
                while let Some((k, v)) = m.next_entry::<&'de str, &'de RawValue>()? {
                    out.push((k, v));
                }
                Ok(RawPairs(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// Write the object a diff stands for: the template's fields with the diff's values in
/// their places, then the diff's fields the template lacks.
fn merge_into(out: &mut String, t: &Template, diff: &str) {
    let pairs = fields(diff).expect("a stored diff is a JSON object");
    let mut used = vec![false; pairs.len()];
    let start = out.len();
    out.push('{');
    // Diff fields come in template order: look from where the last one was found.
    let mut next = 0;
    for (i, (k, v)) in t.parts.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(k);
        let key = &k[1..k.len() - 2];
        let found = (next..pairs.len()).chain(0..next).find(|&j| same(pairs[j].0, key));
        match found {
            Some(j) => {
                used[j] = true;
                next = j + 1;
                out.push_str(pairs[j].1);
            }
            None => out.push_str(v),
        }
    }
    for (j, (k, v)) in pairs.iter().enumerate() {
        if !used[j] {
            if out.len() > start + 1 {
                out.push(',');
            }
            out.push('"');
            out.push_str(k);
            out.push_str("\":");
            out.push_str(v);
        }
    }
    out.push('}');
}

/// Append the object's compact JSON to `out`.
pub fn render_into(out: &mut String, templates: &Templates, s: &Stored) {
    if s.diff {
        if let Some(t) = templates.get(&*s.kind) {
            return merge_into(out, t, &s.text);
        }
    }
    if let Some(inner) = s.inner.as_deref().and_then(|k| templates.get(k)) {
        // An event: expand `data.object` in place.
        let at = s.text.find("\"data\":{\"object\":").map(|d| d + 17);
        if let Some(at) = at {
            let rest = &s.text[at..];
            let mut de = serde_json::Deserializer::from_str(rest);
            let raw: &RawValue = <&RawValue>::deserialize(&mut de).expect("a stored event's data.object is JSON");
            let len = raw.get().len();
            out.push_str(&s.text[..at]);
            merge_into(out, inner, raw.get());
            out.push_str(&rest[len..]);
            return;
        }
    }
    out.push_str(&s.text);
}

pub fn render(templates: &Templates, s: &Stored) -> String {
    let mut out = String::with_capacity(s.text.len() * 3);
    render_into(&mut out, templates, s);
    out
}

pub fn decode(templates: &Templates, s: &Stored) -> Value {
    serde_json::from_str(&render(templates, s)).expect("a stored object is JSON")
}

/// The top-level fields of a JSON object as (key, value) text slices, the key as written
/// between its quotes (escapes kept). The twin's own text is compact and is cut by a byte
/// scan; anything else (whitespace) goes through serde_json. `None` if not an object.
pub fn fields(text: &str) -> Option<Vec<(&str, &str)>> {
    scan_fields(text).or_else(|| {
        let pairs: RawPairs = serde_json::from_str(text).ok()?;
        // serde_json hands keys back unescaped; only keys without escapes borrow, so these are as written.
        Some(pairs.0.into_iter().map(|(k, v)| (k, v.get())).collect())
    })
}

fn scan_fields(text: &str) -> Option<Vec<(&str, &str)>> {
    let b = text.as_bytes();
    if b.first() != Some(&b'{') {
        return None;
    }
    let mut out = Vec::with_capacity(48);
    let mut i = 1;
    if b.get(1) == Some(&b'}') {
        return (b.len() == 2).then_some(out);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let kend = string_end(b, i)?;
        let key = &text[i + 1..kend - 1];
        if b.get(kend) != Some(&b':') {
            return None;
        }
        let vstart = kend + 1;
        let vend = value_end(b, vstart)?;
        out.push((key, &text[vstart..vend]));
        match b.get(vend) {
            Some(b',') => i = vend + 1,
            Some(b'}') if vend + 1 == b.len() => return Some(out),
            _ => return None,
        }
    }
}

/// The index just past the string starting at `b[i] == '"'`.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

/// The index just past the compact JSON value starting at `b[i]`.
fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    b' ' | b'\n' | b'\t' | b'\r' => return None,
                    _ => {}
                }
                j += 1;
            }
            None
        }
        b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']') {
                if b[j].is_ascii_whitespace() {
                    return None;
                }
                j += 1;
            }
            Some(j)
        }
        _ => None,
    }
}

/// JSON text the twin wrote itself, serialised as it is (tape rows written from stored
/// text): serde_json's raw-value protocol, without `RawValue::from_string`'s second parse.
/// `raw_text_serialises_verbatim` (tests) fails if serde_json ever changes that protocol.
pub struct Raw<'a>(pub &'a str);

impl Serialize for Raw<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        const TOKEN: &str = "$serde_json::private::RawValue";
        let mut st = s.serialize_struct(TOKEN, 1)?;
        st.serialize_field(TOKEN, self.0)?;
        st.end()
    }
}

/// An object's compact JSON with where each top-level field's value lies in it: what a
/// typed object serialises to, so storing it (a diff against the template) and recording
/// what changed need no second read of the text.
#[derive(Debug, Clone, PartialEq)]
pub struct Cut {
    pub text: String,
    /// (field, start, end) of each value in `text`, in order.
    pub fields: Vec<(&'static str, usize, usize)>,
}

impl Cut {
    /// Serialise a struct (derived `Serialize`, plain field names) as a [`Cut`].
    pub fn of<T: Serialize>(value: &T) -> Cut {
        let mut c = Cut { text: String::new(), fields: Vec::with_capacity(48) };
        let mut buf = Vec::with_capacity(2048);
        value.serialize(cut::Top { out: &mut buf, fields: &mut c.fields }).expect("a typed object serialises as a struct");
        c.text = String::from_utf8(buf).expect("serde_json writes UTF-8");
        c
    }

    pub fn value(&self, i: usize) -> &str {
        let (_, a, b) = self.fields[i];
        &self.text[a..b]
    }

    /// The diff against `t`, if the fields start with the template's (as [`diff_text`]).
    fn diff(&self, t: &Template) -> Option<String> {
        if self.fields.len() < t.parts.len() || !self.fields.iter().zip(&t.parts).all(|((f, _, _), (k, _))| k.len() == f.len() + 3 && same(&k[1..k.len() - 2], f)) {
            return None;
        }
        let mut out = String::with_capacity(self.text.len() / 2);
        out.push('{');
        for (i, (f, _, _)) in self.fields.iter().enumerate() {
            let v = self.value(i);
            let key = match t.parts.get(i) {
                Some((_, tv)) if same(tv, v) => continue,
                Some((k, _)) => k.as_str(),
                None => "",
            };
            if out.len() > 1 {
                out.push(',');
            }
            if key.is_empty() {
                out.push('"');
                out.push_str(f);
                out.push_str("\":");
            } else {
                out.push_str(key);
            }
            out.push_str(v);
        }
        out.push('}');
        Some(out)
    }

    /// Store it as an object of `kind` (not an event), learning the kind's template if it has
    /// none yet.
    pub fn stored(&self, templates: &mut Templates, kind: &str) -> Stored {
        let diff = match templates.get(kind) {
            Some(t) => self.diff(t),
            None => return stored_text(templates, kind, self.text.clone()),
        };
        match diff {
            Some(d) => Stored { kind: kind.into(), text: d.into(), diff: true, inner: None },
            None => Stored { kind: kind.into(), text: self.text.clone().into(), diff: false, inner: None },
        }
    }

    /// The top-level fields that differ from `before` (the same struct), as the before and
    /// after halves of a tape row (`id` named last), or `None` when none do.
    pub fn changed_since(&self, before: &Cut) -> Option<(String, String)> {
        let same_shape = self.fields.len() == before.fields.len() && self.fields.iter().zip(&before.fields).all(|(a, b)| same(a.0, b.0));
        if !same_shape {
            return crate::changed_text(&before.text, &self.text);
        }
        let (mut bo, mut ao) = (String::from("{"), String::from("{"));
        for (i, (f, _, _)) in self.fields.iter().enumerate() {
            let (old, new) = (before.value(i), self.value(i));
            if !same(old, new) {
                for (out, v) in [(&mut bo, old), (&mut ao, new)] {
                    if out.len() > 1 {
                        out.push(',');
                    }
                    out.push('"');
                    out.push_str(f);
                    out.push_str("\":");
                    out.push_str(v);
                }
            }
        }
        if bo.len() == 1 {
            return None;
        }
        match self.fields.iter().position(|f| f.0 == "id") {
            // A changed id is rare enough for the general path.
            Some(i) if !same(before.value(i), self.value(i)) => return crate::changed_text(&before.text, &self.text),
            Some(i) => {
                for out in [&mut bo, &mut ao] {
                    out.push_str(",\"id\":");
                    out.push_str(self.value(i));
                }
            }
            None => {}
        }
        bo.push('}');
        ao.push('}');
        Some((bo, ao))
    }
}

/// The serde serializer behind [`Cut::of`]: a struct at the top, each field's value written
/// by serde_json.
mod cut {
    use serde::ser::{self, Impossible, Serialize, SerializeStruct};

    pub struct Top<'a> {
        pub out: &'a mut Vec<u8>,
        pub fields: &'a mut Vec<(&'static str, usize, usize)>,
    }

    #[derive(Debug)]
    pub struct NotAStruct(String);

    impl std::fmt::Display for NotAStruct {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }
    impl std::error::Error for NotAStruct {}
    impl ser::Error for NotAStruct {
        fn custom<T: std::fmt::Display>(msg: T) -> Self {
            NotAStruct(msg.to_string())
        }
    }

    fn no<T>() -> Result<T, NotAStruct> {
        Err(NotAStruct("a Cut is made of a struct".into()))
    }

    impl<'a> SerializeStruct for Top<'a> {
        type Ok = ();
        type Error = NotAStruct;
        fn serialize_field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> Result<(), NotAStruct> {
            self.out.push(if self.fields.is_empty() { b'{' } else { b',' });
            self.out.push(b'"');
            self.out.extend_from_slice(key.as_bytes());
            self.out.extend_from_slice(b"\":");
            let start = self.out.len();
            value.serialize(&mut serde_json::Serializer::new(&mut *self.out)).map_err(|e| NotAStruct(e.to_string()))?;
            self.fields.push((key, start, self.out.len()));
            Ok(())
        }
        fn end(self) -> Result<(), NotAStruct> {
            if self.fields.is_empty() {
                self.out.push(b'{');
            }
            self.out.push(b'}');
            Ok(())
        }
    }

    macro_rules! refuse {
        ($($f:ident($($t:ty),*)),* $(,)?) => {
            $(fn $f(self, $(_: $t),*) -> Result<(), NotAStruct> { no() })*
        };
    }

    impl<'a> ser::Serializer for Top<'a> {
        type Ok = ();
        type Error = NotAStruct;
        type SerializeSeq = Impossible<(), NotAStruct>;
        type SerializeTuple = Impossible<(), NotAStruct>;
        type SerializeTupleStruct = Impossible<(), NotAStruct>;
        type SerializeTupleVariant = Impossible<(), NotAStruct>;
        type SerializeMap = Impossible<(), NotAStruct>;
        type SerializeStruct = Self;
        type SerializeStructVariant = Impossible<(), NotAStruct>;

        fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self, NotAStruct> {
            Ok(self)
        }
        refuse!(
            serialize_bool(bool), serialize_i8(i8), serialize_i16(i16), serialize_i32(i32), serialize_i64(i64),
            serialize_u8(u8), serialize_u16(u16), serialize_u32(u32), serialize_u64(u64), serialize_f32(f32),
            serialize_f64(f64), serialize_char(char), serialize_str(&str), serialize_bytes(&[u8]), serialize_none(),
            serialize_unit(), serialize_unit_struct(&'static str), serialize_unit_variant(&'static str, u32, &'static str),
        );
        fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<(), NotAStruct> {
            no()
        }
        fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, _: &T) -> Result<(), NotAStruct> {
            no()
        }
        fn serialize_newtype_variant<T: ?Sized + Serialize>(self, _: &'static str, _: u32, _: &'static str, _: &T) -> Result<(), NotAStruct> {
            no()
        }
        fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, NotAStruct> {
            no()
        }
        fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NotAStruct> {
            no()
        }
        fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, NotAStruct> {
            no()
        }
        fn serialize_tuple_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Self::SerializeTupleVariant, NotAStruct> {
            no()
        }
        fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotAStruct> {
            no()
        }
        fn serialize_struct_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Self::SerializeStructVariant, NotAStruct> {
            no()
        }
    }
}

/// The ids of one kind of object in creation order (the world's `order`), in chunks of
/// [`CHUNK`] that never move: a `Vec` of a few hundred thousand ids grows by copying them
/// all into one twice the size (megabytes, inside one payment), and forgetting the oldest
/// events shifted the ten thousand kept. Serialised as the plain sequence it is.
#[derive(Debug, Clone, Default)]
pub struct Ids {
    chunks: std::collections::VecDeque<Vec<String>>,
    /// Ids already taken from the front of the first chunk (their places hold empty strings).
    head: usize,
    len: usize,
}

/// Ids per chunk: a chunk is 96 KiB of `String`s; the first grows as a `Vec` does up to it,
/// so a small world's kinds hold no more than their ids.
const CHUNK: usize = 4096;

impl Ids {
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn push(&mut self, id: String) {
        match self.chunks.back_mut() {
            Some(c) if c.len() < CHUNK => c.push(id),
            _ => {
                let mut c = if self.chunks.is_empty() { Vec::new() } else { Vec::with_capacity(CHUNK) };
                c.push(id);
                self.chunks.push_back(c);
            }
        }
        self.len += 1;
    }
    /// Oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &String> + '_ {
        let head = self.head;
        self.chunks.iter().enumerate().flat_map(move |(i, c)| c[if i == 0 { head } else { 0 }..].iter())
    }
    pub fn last(&self) -> Option<&String> {
        if self.len == 0 {
            return None;
        }
        self.chunks.back().and_then(|c| c.last())
    }
    /// Take the `n` oldest ids out, oldest first.
    pub fn take_front(&mut self, n: usize) -> Vec<String> {
        let n = n.min(self.len);
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let first = self.chunks.front_mut().expect("ids left");
            let k = (n - out.len()).min(first.len() - self.head);
            out.extend(first[self.head..self.head + k].iter_mut().map(std::mem::take));
            self.head += k;
            if self.head == first.len() {
                self.chunks.pop_front();
                self.head = 0;
            }
        }
        self.len -= n;
        out
    }
    pub fn retain(&mut self, mut keep: impl FnMut(&String) -> bool) {
        let old = std::mem::take(self);
        for id in old {
            if keep(&id) {
                self.push(id);
            }
        }
    }
}

impl IntoIterator for Ids {
    type Item = String;
    type IntoIter = std::vec::IntoIter<String>;
    fn into_iter(self) -> Self::IntoIter {
        let head = self.head;
        let mut out = Vec::with_capacity(self.len);
        for (i, c) in self.chunks.into_iter().enumerate() {
            out.extend(c.into_iter().skip(if i == 0 { head } else { 0 }));
        }
        out.into_iter()
    }
}

impl From<Vec<String>> for Ids {
    fn from(ids: Vec<String>) -> Ids {
        let mut out = Ids::default();
        for id in ids {
            out.push(id);
        }
        out
    }
}

impl PartialEq for Ids {
    fn eq(&self, other: &Ids) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl Serialize for Ids {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.len))?;
        for id in self.iter() {
            seq.serialize_element(id)?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for Ids {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Ids, D::Error> {
        Vec::<String>::deserialize(d).map(Ids::from)
    }
}
