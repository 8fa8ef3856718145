//! The world: Linear's entities kept generically, as JSON objects keyed by GraphQL type name
//! and id. Fields are named as the schema names them (`title`, `priority`), relations as the
//! schema's input types name them (`teamId`, `assigneeId`, `labelIds`), so a field resolves
//! from its entity the same way for every type. Hidden bookkeeping fields start with `_`.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

pub type Entity = Map<String, Value>;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Inner {
    /// type name → id → entity.
    pub entities: Types,
    /// Linear's sync id: grows by one per change.
    pub last_sync_id: u64,
    /// Counter for generated ids.
    pub seq: u64,
    /// The user the agent's token acts as.
    pub viewer: String,
    /// The organization's id.
    pub org: String,
    /// Seeded API tokens (kept for the state export; the host checks credentials).
    pub tokens: Vec<Value>,
    /// Requests served (rate-limit headers).
    pub requests: u64,
    /// The seed's `rateLimits`: hourly limits for every credential in place of Linear's.
    #[serde(default)]
    pub rate_limits: Option<crate::rate::Raised>,
    /// Each credential's rate-limit buckets ([`crate::rate`]).
    #[serde(default)]
    pub rate: crate::rate::Buckets,
    /// The running request's rate-limit levels, for `rateLimitStatus`: not state.
    #[serde(skip)]
    pub rate_status: Option<crate::rate::Status>,
    /// The seed's `clock`: requests run at it, advanced by the virtual time since the first.
    #[serde(default)]
    pub clock: Option<String>,
    /// The host's virtual time (µs) at the first request, when `clock` is set.
    #[serde(default)]
    pub clock_anchor_us: Option<i64>,
    /// The answer cache's view of this world: not state.
    #[serde(skip)]
    pub generation: crate::cache::Generation,
    /// The running request's now, for fields computed from the clock: not state.
    #[serde(skip)]
    pub request_clock: RequestClock,
    /// Entities in connection order, kept while the world does not change: not state.
    #[serde(skip)]
    pub order: Order,
}

/// The world's entities by type, in the order of the types' names. A world holds a few dozen
/// types and a request looks one up thousands of times: comparing lengths first finds it with
/// a byte comparison or two, where a search tree compares bytes at every step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Types(Vec<(String, BTreeMap<String, Entity>)>);

impl Types {
    pub fn get(&self, ty: &str) -> Option<&BTreeMap<String, Entity>> {
        self.0.iter().find(|(t, _)| t == ty).map(|(_, m)| m)
    }

    pub fn get_mut(&mut self, ty: &str) -> Option<&mut BTreeMap<String, Entity>> {
        self.0.iter_mut().find(|(t, _)| t == ty).map(|(_, m)| m)
    }

    /// Type `ty`'s entities, made empty if the world has none yet.
    fn entry(&mut self, ty: &str) -> &mut BTreeMap<String, Entity> {
        let at = match self.0.binary_search_by(|(t, _)| t.as_str().cmp(ty)) {
            Ok(at) => at,
            Err(at) => {
                self.0.insert(at, (ty.to_string(), BTreeMap::new()));
                at
            }
        };
        &mut self.0[at].1
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &BTreeMap<String, Entity>)> {
        self.0.iter().map(|(t, m)| (t, m))
    }
}

/// Written as the map it is, by type name.
impl Serialize for Types {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for Types {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Types, D::Error> {
        BTreeMap::<String, BTreeMap<String, Entity>>::deserialize(d).map(|m| Types(m.into_iter().collect()))
    }
}

/// Each listed type's entities in a connection's default order (newest `createdAt` or
/// `updatedAt` first, then id), as positions in [`Inner::all`]'s order. A root connection
/// walks them and stops once its page is full, rather than testing and sorting every entity;
/// a world of 200 issues and a page of 50 reads about half of them. Kept for one generation of
/// the world ([`crate::cache::Generation`]): any write makes it stale.
#[derive(Debug, Default)]
pub struct Order {
    kept: std::cell::RefCell<Vec<OrderKey>>,
}

#[derive(Debug)]
struct OrderKey {
    at: (u64, u64),
    ty: String,
    key: String,
    positions: std::rc::Rc<[u32]>,
}

impl Clone for Order {
    /// A cloned world is another identity: nothing kept applies to it.
    fn clone(&self) -> Self {
        Order::default()
    }
}

impl PartialEq for Order {
    /// Bookkeeping: two worlds with equal entities are equal whatever they keep.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// The time the running request reads (`Cycle.isActive` depends on it) and whether it read
/// it: an answer that did is not cached, since the same question later has another answer.
#[derive(Debug, Clone, Default)]
pub struct RequestClock {
    now: String,
    read: std::cell::Cell<bool>,
}

impl PartialEq for RequestClock {
    /// Bookkeeping: two worlds with equal entities are equal at any time.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl RequestClock {
    pub fn start(&mut self, now: &str) {
        self.now = now.to_string();
        self.read.set(false);
    }

    pub fn now(&self) -> &str {
        self.read.set(true);
        &self.now
    }

    pub fn was_read(&self) -> bool {
        self.read.get()
    }
}

/// The world, stored as JSON text in snapshots: postcard cannot carry free-form JSON. A
/// human-readable format (the world written as a seed) gets the JSON itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct World(pub Inner);

impl Serialize for World {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            return self.0.serialize(s);
        }
        let text = serde_json::to_string(&self.0).map_err(serde::ser::Error::custom)?;
        s.serialize_str(&text)
    }
}

impl<'de> Deserialize<'de> for World {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<World, D::Error> {
        if d.is_human_readable() {
            return Inner::deserialize(d).map(World);
        }
        let text = String::deserialize(d)?;
        serde_json::from_str(&text).map(World).map_err(serde::de::Error::custom)
    }
}

impl std::ops::Deref for World {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}
impl std::ops::DerefMut for World {
    fn deref_mut(&mut self) -> &mut Inner {
        &mut self.0
    }
}

impl Inner {
    pub fn get(&self, ty: &str, id: &str) -> Option<&Entity> {
        self.entities.get(ty)?.get(id)
    }

    pub fn get_mut(&mut self, ty: &str, id: &str) -> Option<&mut Entity> {
        self.entities.get_mut(ty)?.get_mut(id)
    }

    pub fn all(&self, ty: &str) -> impl Iterator<Item = (&String, &Entity)> {
        self.entities.get(ty).into_iter().flat_map(|m| m.iter())
    }

    /// The entities of type `ty` by `key` (a `DateTime` field) newest first, ties broken by
    /// id, highest first: as positions in [`Inner::all`]'s order, built once per generation.
    pub fn order(&self, ty: &str, key: &str) -> std::rc::Rc<[u32]> {
        let at = self.generation.key();
        let mut kept = self.order.kept.borrow_mut();
        // Orders of an older generation can never be asked for again.
        kept.retain(|k| k.at == at);
        if let Some(k) = kept.iter().find(|k| k.ty == ty && k.key == key) {
            return k.positions.clone();
        }
        let all: Vec<(&String, &str)> = self.all(ty).map(|(id, e)| (id, field(e, key).and_then(Value::as_str).unwrap_or(""))).collect();
        let mut positions: Vec<u32> = (0..all.len() as u32).collect();
        positions.sort_by(|&a, &b| {
            let ((ia, ka), (ib, kb)) = (all[a as usize], all[b as usize]);
            kb.cmp(ka).then_with(|| ib.cmp(ia))
        });
        let positions: std::rc::Rc<[u32]> = positions.into();
        kept.push(OrderKey { at, ty: ty.to_string(), key: key.to_string(), positions: positions.clone() });
        positions
    }

    /// Store entity `id` of type `ty`; a new one gets what Linear keeps on every new entity of
    /// its type ([`crate::created`]).
    pub fn insert(&mut self, ty: &str, id: &str, mut e: Entity) {
        let all = self.entities.entry(ty);
        if !all.contains_key(id) {
            crate::created::fill(ty, &mut e, all.len());
        }
        all.insert(id.to_string(), e);
    }

    pub fn remove(&mut self, ty: &str, id: &str) -> Option<Entity> {
        self.entities.get_mut(ty)?.remove(id)
    }

    /// A fresh id in Linear's UUID form, from a counter (deterministic).
    pub fn new_id(&mut self) -> String {
        self.seq += 1;
        let n = self.seq;
        let mix = (n as u32).wrapping_mul(2_654_435_761);
        format!("{n:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}", mix >> 16, mix & 0xfff, (mix >> 4) & 0xfff, (mix as u64).wrapping_mul(0x9e37_79b9) & 0xffff_ffff_ffff)
    }

    pub fn bump_sync(&mut self) -> u64 {
        self.last_sync_id += 1;
        self.last_sync_id
    }

    /// Find an issue by id or by its `ENG-123` identifier.
    pub fn issue_id(&self, key: &str) -> Option<String> {
        if self.get("Issue", key).is_some() {
            return Some(key.to_string());
        }
        let upper = key.to_ascii_uppercase();
        let was = |e: &Entity| e.get("previousIdentifiers").and_then(Value::as_array).is_some_and(|p| p.iter().any(|x| x.as_str() == Some(upper.as_str())));
        self.all("Issue")
            .find(|(_, e)| e.get("identifier").and_then(Value::as_str) == Some(upper.as_str()))
            .or_else(|| self.all("Issue").find(|(_, e)| was(e)))
            .map(|(id, _)| id.clone())
    }

    /// Find a team by id or key.
    pub fn team_id(&self, key: &str) -> Option<String> {
        if self.get("Team", key).is_some() {
            return Some(key.to_string());
        }
        self.all("Team").find(|(_, e)| e.get("key").and_then(Value::as_str).is_some_and(|k| k.eq_ignore_ascii_case(key))).map(|(id, _)| id.clone())
    }

    pub fn str_field<'a>(&'a self, ty: &str, id: &str, field: &str) -> Option<&'a str> {
        self.get(ty, id)?.get(field)?.as_str()
    }

    pub fn org_url_key(&self) -> String {
        self.str_field("Organization", &self.org, "urlKey").unwrap_or("pome").to_string()
    }

    /// The state export: every entity by type, and the sync id.
    pub fn export(&self) -> Value {
        let mut ents = Map::new();
        for (ty, m) in self.entities.iter() {
            let mut list = Map::new();
            for (id, e) in m {
                let mut clean = Map::new();
                for (k, v) in e {
                    if !k.starts_with('_') {
                        clean.insert(k.clone(), v.clone());
                    }
                }
                list.insert(id.clone(), Value::Object(clean));
            }
            ents.insert(ty.clone(), Value::Object(list));
        }
        json!({"entities": ents, "lastSyncId": self.last_sync_id, "viewer": self.viewer, "organization": self.org})
    }
}

/// Field `name` of an entity. Entities hold a few dozen fields, so comparing names in order
/// is cheaper than hashing the name (the map's hasher is SipHash).
pub fn field<'e>(e: &'e Entity, name: &str) -> Option<&'e Value> {
    e.iter().find(|(k, _)| k.as_str() == name).map(|(_, v)| v)
}

/// Linear's priority labels by number.
pub fn priority_label(p: i64) -> &'static str {
    match p {
        1 => "Urgent",
        2 => "High",
        3 => "Medium",
        4 => "Low",
        _ => "No priority",
    }
}

/// The short id Linear gives projects, documents and initiatives for their URLs: twelve hex
/// digits (`5c1a3b9e2f0d`), here derived from the entity's id so a replay gives the same.
pub fn slug_id(id: &str) -> String {
    use sha2::Digest;
    hex::encode(&sha2::Sha256::digest(id.as_bytes())[..6])
}

/// `Fix the login bug!` → `fix-the-login-bug`, as Linear slugs titles for URLs and branches.
pub fn slug(title: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c.to_ascii_lowercase());
        } else {
            dash = true;
        }
        if out.len() >= 60 {
            break;
        }
    }
    out
}
