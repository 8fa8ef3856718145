//! The Stripe twin: Stripe's REST API (`/v1/...`, form bodies in, Stripe JSON out), stateful
//! enough that stripe-python and stripe-node cannot tell it from api.stripe.com in test mode.
//!
//! Objects are kept as compact JSON text diffed against their kind's template ([`store`]),
//! keyed by id in ordered maps, with one creation-order index per object type for lists.
//! [`core`] holds what every endpoint shares (parameters, errors, ids, lists, search, expand,
//! idempotency, failure injection), [`params`] the check of every parameter against Stripe's
//! description, [`api`] the resources and the payment state machine,
//! [`billing`] subscriptions, invoices and test clocks, [`commerce`] checkout, payment links
//! and promotion codes, [`seed`] the strict seed reader, [`checks`] the grading vocabulary,
//! [`three_ds`] the customer's 3-D Secure test page, [`tools`] the MCP tools of Stripe's
//! agent toolkit, [`typed`] the objects a card payment writes as Rust structs (its hot path
//! writes their text once, with no `Value` trees).

#![recursion_limit = "512"]

pub mod api;
pub mod billing;
pub mod checks;
pub mod commerce;
pub mod core;
pub mod limits;
pub mod mcp_tools;
pub mod params;
pub mod seed;
pub mod store;
pub mod three_ds;
pub mod tools;
pub mod typed;
pub mod versions;
pub mod x402;

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

use pome_twin_sdk::{
    Call, CheckDecl, CheckWorld, Credential, HostError, HostErrorKind, Outcome, Params, Request, Response, Router, Twin, Value, json,
};
use serde::{Deserialize, Serialize};

pub const API_VERSION: &str = "2024-06-20";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IdemEntry {
    pub fingerprint: String,
    pub status: u16,
    pub body: String,
    pub request_id: String,
    /// When the key was first used (Unix seconds, sandbox clock): it is kept 24 hours.
    pub created: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FailureRule {
    pub method: String,
    pub path: String,
    pub attempt: Option<u32>,
    /// `before_handler` (the request never runs) or `after_handler` (it runs, its answer is
    /// replaced).
    pub mode: String,
    pub status: u16,
    pub body: Option<Value>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Data {
    pub account_id: String,
    pub api_keys: Vec<Value>,
    /// The id counter every new object takes its id from.
    pub seq: u64,
    pub request_seq: u64,
    /// Every object by id, as compact text (see [`store`]).
    pub objects: store::Objects,
    /// Each kind's template, the first object of the kind stored.
    #[serde(default)]
    pub templates: store::Templates,
    /// Object type (`payment_intent`) → ids in creation order.
    pub order: BTreeMap<String, store::Ids>,
    pub idempotency: BTreeMap<String, IdemEntry>,
    /// Idempotency keys, oldest first: Stripe forgets a key 24 hours after its first use
    /// ([`IDEMPOTENCY_KEPT_SECS`]); the saved answers are bounded by [`IDEMPOTENCY_MAX_BYTES`].
    #[serde(default)]
    pub idempotency_order: std::collections::VecDeque<String>,
    /// What the saved answers weigh (keys, fingerprints and bodies).
    #[serde(default)]
    pub idempotency_bytes: usize,
    pub failure_injection: Vec<FailureRule>,
    pub attempts: BTreeMap<String, u32>,
    /// Seeded balance on top of what balance transactions add up to: currency → (available, pending).
    pub seeded_balance: BTreeMap<String, (i64, i64)>,
    /// Ids of deleted customers (retrieving one answers `deleted: true`).
    #[serde(default)]
    pub deleted: std::collections::BTreeSet<String>,
    #[serde(default)]
    pub current_request: String,
    #[serde(default)]
    pub current_idempotency_key: Option<String>,
    /// The payment methods the current request made from test names (`pm_card_visa`), by
    /// name: a request naming the same test card twice (`payment_method` and
    /// `invoice_settings[default_payment_method]`) gets one payment method, as from Stripe.
    /// Emptied when each request ends ([`core::run`]).
    #[serde(skip)]
    pub test_pms: BTreeMap<String, String>,
    /// PaymentIntents (`confirmation_method: manual`) whose customer completed 3-D Secure on
    /// the test page ([`three_ds`]) and that wait for the server's confirmation, as
    /// `"pi_… pm_…"`: that confirmation charges the authenticated method without asking again.
    #[serde(default)]
    pub authenticated: std::collections::BTreeSet<String>,
    /// Uploaded files' bytes, base64, by file id ([`api::files`]).
    #[serde(default)]
    pub file_bytes: BTreeMap<String, String>,
    /// What the uploaded files weigh, in bytes (bounded by [`api::MAX_SANDBOX_FILE_BYTES`]).
    #[serde(default)]
    pub file_bytes_total: usize,
}

/// Events kept in the world: Stripe serves events of the last 30 days only, and a sandbox
/// under load must not grow without bound. Older events leave the world (the tape keeps
/// their rows).
pub const EVENTS_KEPT: usize = 10_000;
/// Idempotency keys remembered.
pub const IDEMPOTENCY_KEPT_SECS: i64 = 24 * 3600;

/// The bytes of saved answers a world keeps for idempotent replays: a day of an agent's keyed
/// requests is far below it (a thousand 4 KB answers are 4 MB); only a flood of keys makes the
/// oldest go before their 24 hours, so a world stays within its store's memory.
pub const IDEMPOTENCY_MAX_BYTES: usize = 16 << 20;

impl Data {
    pub fn tombstone(&mut self, id: &str) {
        self.deleted.insert(id.to_string());
    }
    pub fn tombstones_contains(&self, id: &str) -> bool {
        self.deleted.contains(id)
    }
}

/// The world (see its `Serialize` for how snapshots carry it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct World(pub Data);

impl Deref for World {
    type Target = Data;
    fn deref(&self) -> &Data {
        &self.0
    }
}
impl DerefMut for World {
    fn deref_mut(&mut self) -> &mut Data {
        &mut self.0
    }
}

/// What a snapshot carries besides the objects, as JSON (seeds and injected failures hold
/// free-form JSON, which postcard cannot describe).
#[derive(Serialize)]
struct MetaRef<'a> {
    account_id: &'a String,
    api_keys: &'a Vec<Value>,
    seq: u64,
    request_seq: u64,
    templates: &'a store::Templates,
    idempotency: &'a BTreeMap<String, IdemEntry>,
    idempotency_order: &'a std::collections::VecDeque<String>,
    idempotency_bytes: usize,
    failure_injection: &'a Vec<FailureRule>,
    attempts: &'a BTreeMap<String, u32>,
    seeded_balance: &'a BTreeMap<String, (i64, i64)>,
    deleted: &'a std::collections::BTreeSet<String>,
    current_request: &'a String,
    current_idempotency_key: &'a Option<String>,
    authenticated: &'a std::collections::BTreeSet<String>,
    file_bytes: &'a BTreeMap<String, String>,
    file_bytes_total: usize,
}

#[derive(Deserialize)]
struct Meta {
    account_id: String,
    api_keys: Vec<Value>,
    seq: u64,
    request_seq: u64,
    templates: store::Templates,
    idempotency: BTreeMap<String, IdemEntry>,
    idempotency_order: std::collections::VecDeque<String>,
    #[serde(default)]
    idempotency_bytes: usize,
    failure_injection: Vec<FailureRule>,
    attempts: BTreeMap<String, u32>,
    seeded_balance: BTreeMap<String, (i64, i64)>,
    deleted: std::collections::BTreeSet<String>,
    current_request: String,
    current_idempotency_key: Option<String>,
    #[serde(default)]
    authenticated: std::collections::BTreeSet<String>,
    #[serde(default)]
    file_bytes: BTreeMap<String, String>,
    #[serde(default)]
    file_bytes_total: usize,
}

impl Serialize for World {
    /// Human-readable formats get the world as it is; snapshots (postcard) get the small
    /// JSON part beside the objects and their order in postcard's own encoding, so a loaded
    /// world's stored text is neither escaped into a JSON string nor held twice on restore.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            return self.0.serialize(s);
        }
        let d = &self.0;
        let meta = MetaRef {
            account_id: &d.account_id,
            api_keys: &d.api_keys,
            seq: d.seq,
            request_seq: d.request_seq,
            templates: &d.templates,
            idempotency: &d.idempotency,
            idempotency_order: &d.idempotency_order,
            idempotency_bytes: d.idempotency_bytes,
            failure_injection: &d.failure_injection,
            attempts: &d.attempts,
            seeded_balance: &d.seeded_balance,
            deleted: &d.deleted,
            current_request: &d.current_request,
            current_idempotency_key: &d.current_idempotency_key,
            authenticated: &d.authenticated,
            file_bytes: &d.file_bytes,
            file_bytes_total: d.file_bytes_total,
        };
        let json = serde_json::to_string(&meta).map_err(serde::ser::Error::custom)?;
        (json, &d.objects, &d.order).serialize(s)
    }
}

impl<'de> Deserialize<'de> for World {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<World, D::Error> {
        if d.is_human_readable() {
            let mut data = Data::deserialize(d)?;
            data.objects.number_events(data.order.get("event"));
            return Ok(World(data));
        }
        let (json, objects, order): (String, store::Objects, BTreeMap<String, store::Ids>) = Deserialize::deserialize(d)?;
        let m: Meta = serde_json::from_str(&json).map_err(serde::de::Error::custom)?;
        let mut objects = objects;
        objects.number_events(order.get("event"));
        Ok(World(Data {
            account_id: m.account_id,
            api_keys: m.api_keys,
            seq: m.seq,
            request_seq: m.request_seq,
            objects,
            templates: m.templates,
            order,
            idempotency: m.idempotency,
            idempotency_order: m.idempotency_order,
            idempotency_bytes: m.idempotency_bytes,
            failure_injection: m.failure_injection,
            attempts: m.attempts,
            seeded_balance: m.seeded_balance,
            deleted: m.deleted,
            current_request: m.current_request,
            current_idempotency_key: m.current_idempotency_key,
            test_pms: BTreeMap::new(),
            authenticated: m.authenticated,
            file_bytes: m.file_bytes,
            file_bytes_total: m.file_bytes_total,
        }))
    }
}

/// The plural collection name of an object type in the state export.
pub fn plural(kind: &str) -> String {
    match kind {
        "balance_transaction" => "balance_transactions".into(),
        "customer_balance_transaction" => "customer_balance_transactions".into(),
        "test_helpers.test_clock" => "test_clocks".into(),
        "checkout.session" => "checkout_sessions".into(),
        "customer_cash_balance_transaction" => "customer_cash_balance_transactions".into(),
        "billing.meter_event" => "billing_meter_events".into(),
        "billing.meter" => "billing_meters".into(),
        "billing_portal.configuration" => "billing_portal_configurations".into(),
        "billing_portal.session" => "billing_portal_sessions".into(),
        "radar.early_fraud_warning" => "early_fraud_warnings".into(),
        "radar.value_list" => "value_lists".into(),
        "radar.value_list_item" => "value_list_items".into(),
        k => format!("{k}s"),
    }
}

impl World {
    /// A new id with Stripe's prefix for the type.
    pub fn new_id(&mut self, prefix: &str) -> String {
        self.seq += 1;
        core::make_id(prefix, self.seq)
    }

    /// Store a new object (its `object` field names its type) and record it on the tape.
    pub fn insert(&mut self, call: Option<&mut Call>, obj: Value) -> Value {
        let kind = obj["object"].as_str().unwrap_or_default();
        if kind == "event" {
            let id = obj["id"].as_str().unwrap_or_default().to_string();
            if let Some(call) = call {
                // An event repeats an object the same call recorded; its row names it only.
                call.created("event", &id, &json!({"id": id, "object": "event", "type": obj["type"], "data": {"object": {"id": obj["data"]["object"]["id"], "object": obj["data"]["object"]["object"]}}}));
            }
            let stored = store::encode(&mut self.0.templates, &obj);
            self.put(&id, "event", stored);
            return obj;
        }
        let (id, kind) = (obj["id"].as_str().unwrap_or_default().to_string(), kind.to_string());
        self.insert_text(call, &kind, &id, obj.to_string());
        obj
    }

    /// Store a new object of `kind` (not an event) given as its compact JSON text, and record
    /// it on the tape: the text is written once and serves the store and the tape row.
    pub fn insert_text(&mut self, call: Option<&mut Call>, kind: &str, id: &str, text: String) {
        if let Some(call) = call {
            call.created(kind, id, &store::Raw(&text));
        }
        let stored = store::stored_text(&mut self.0.templates, kind, text);
        self.put(id, kind, stored);
    }

    /// [`World::insert_text`] of a typed object, serialised as a [`store::Cut`].
    pub fn insert_cut(&mut self, call: Option<&mut Call>, kind: &str, id: &str, c: &store::Cut) {
        if let Some(call) = call {
            call.created(kind, id, &store::Raw(&c.text));
        }
        let stored = c.stored(&mut self.0.templates, kind);
        self.put(id, kind, stored);
    }

    /// [`World::update_text`] of a typed object: `before` is it as stored now.
    pub fn update_cut(&mut self, call: &mut Call, kind: &str, id: &str, before: &store::Cut, after: &store::Cut) {
        if store::same(&before.text, &after.text) {
            return;
        }
        if let Some((b, a)) = after.changed_since(before) {
            call.updated(kind, id, &store::Raw(&b), &store::Raw(&a));
        }
        let stored = after.stored(&mut self.0.templates, kind);
        self.0.objects.insert(store::Id::of(id), stored);
    }

    /// Replace a stored object by its new compact text, recording the top-level fields that
    /// changed from `before` (its text as stored now) as the tape row; nothing when none did.
    pub fn update_text(&mut self, call: &mut Call, kind: &str, id: &str, before: &str, after: String) {
        if store::same(before, &after) {
            return;
        }
        if let Some((b, a)) = changed_text(before, &after) {
            call.updated(kind, id, &store::Raw(&b), &store::Raw(&a));
        }
        let stored = store::stored_text(&mut self.0.templates, kind, after);
        self.0.objects.insert(store::Id::of(id), stored);
    }

    /// Store an encoded object; a new one joins its kind's order (events beyond
    /// [`EVENTS_KEPT`] leave, oldest first).
    pub fn put(&mut self, id: &str, kind: &str, stored: store::Stored) {
        if self.0.objects.insert(store::Id::of(id), stored).is_none() {
            if !self.0.order.contains_key(kind) {
                self.0.order.insert(kind.to_string(), store::Ids::default());
            }
            let ids = self.0.order.get_mut(kind).expect("just ensured");
            ids.push(id.to_string());
            // In batches, so a long run does not shift ten thousand ids on every event; the
            // forgotten events leave the object map a few per write (`Objects::tidy`), so
            // no write pays for a thousand removals.
            if kind == "event" && ids.len() >= EVENTS_KEPT + EVENTS_KEPT / 10 {
                let old = ids.take_front(ids.len() - EVENTS_KEPT);
                self.0.objects.forget_events(old);
            }
            self.0.objects.tidy();
        }
    }

    pub fn get(&self, id: &str) -> Option<Value> {
        self.objects.get(&store::Id::of(id)).map(|s| store::decode(&self.templates, s))
    }

    pub fn exists(&self, id: &str) -> bool {
        self.objects.contains_key(&store::Id::of(id))
    }

    /// The object's compact JSON.
    pub fn render(&self, id: &str) -> Option<String> {
        self.objects.get(&store::Id::of(id)).map(|s| store::render(&self.templates, s))
    }

    /// An object of the given type by id.
    pub fn get_kind(&self, kind: &str, id: &str) -> Option<Value> {
        self.objects.get(&store::Id::of(id)).filter(|o| &*o.kind == kind).map(|s| store::decode(&self.templates, s))
    }

    pub fn is_kind(&self, kind: &str, id: &str) -> bool {
        self.objects.get(&store::Id::of(id)).is_some_and(|o| &*o.kind == kind)
    }

    /// Change an object in place, recording the fields that changed (before and after);
    /// returns the new object.
    pub fn modify(&mut self, call: &mut Call, id: &str, f: impl FnOnce(&mut Value)) -> Value {
        match self.get(id) {
            Some(current) => self.modify_current(call, id, current, f),
            None => Value::Null,
        }
    }

    /// [`World::modify`] for a caller that holds the object as it is stored now (just
    /// inserted or changed): it is not decoded again.
    pub fn modify_current(&mut self, call: &mut Call, id: &str, current: Value, f: impl FnOnce(&mut Value)) -> Value {
        let mut obj = current;
        let before = obj.to_string();
        f(&mut obj);
        let kind = obj["object"].as_str().unwrap_or_default().to_string();
        let after = obj.to_string();
        self.update_text(call, &kind, id, &before, after);
        obj
    }

    pub fn remove(&mut self, call: &mut Call, id: &str) -> Option<Value> {
        let obj = self.get(id)?;
        self.0.objects.remove(&store::Id::of(id));
        let kind = obj["object"].as_str().unwrap_or_default().to_string();
        if let Some(ids) = self.order.get_mut(&kind) {
            ids.retain(|x| x != id);
        }
        call.deleted(&kind, id, &obj);
        Some(obj)
    }

    /// Objects of a type, newest first.
    pub fn all(&self, kind: &str) -> impl Iterator<Item = Value> + '_ {
        self.ids(kind).filter_map(|id| self.get(id))
    }

    /// Ids of a type, newest first.
    pub fn ids(&self, kind: &str) -> impl DoubleEndedIterator<Item = &String> + '_ {
        self.order.get(kind).into_iter().flat_map(|ids| ids.iter().rev())
    }

    pub fn now(&self) -> i64 {
        pome_twin_sdk::time::now_unix()
    }
}

/// The top-level fields that differ between two objects (`id` always named), as the
/// before and after halves of a state delta: a changed PaymentIntent records its status and
/// charge, not its 45 fields twice.
pub fn changed_fields(before: &Value, after: &Value) -> (serde_json::Map<String, Value>, serde_json::Map<String, Value>) {
    let (mut b, mut a) = (serde_json::Map::new(), serde_json::Map::new());
    let empty = serde_json::Map::new();
    let bm = before.as_object().unwrap_or(&empty);
    let am = after.as_object().unwrap_or(&empty);
    for (k, v) in am {
        if bm.get(k) != Some(v) {
            if let Some(old) = bm.get(k) {
                b.insert(k.clone(), old.clone());
            }
            a.insert(k.clone(), v.clone());
        }
    }
    for (k, v) in bm {
        if !am.contains_key(k) {
            b.insert(k.clone(), v.clone());
        }
    }
    if !a.is_empty() || !b.is_empty() {
        if let Some(id) = am.get("id").or(bm.get("id")) {
            b.insert("id".into(), id.clone());
            a.insert("id".into(), id.clone());
        }
    }
    (b, a)
}

/// [`changed_fields`] of two objects given as compact text, written as text: the before and
/// after halves, or `None` when no field differs. Fields are compared by their text.
pub fn changed_text(before: &str, after: &str) -> Option<(String, String)> {
    let b = store::fields(before)?;
    let a = store::fields(after)?;
    let (mut bo, mut ao) = (String::from("{"), String::from("{"));
    let push = |out: &mut String, k: &str, v: &str| {
        if out.len() > 1 {
            out.push(',');
        }
        out.push('"');
        out.push_str(k);
        out.push_str("\":");
        out.push_str(v);
    };
    fn find<'a>(pairs: &[(&str, &'a str)], k: &str, hint: usize) -> Option<&'a str> {
        match pairs.get(hint) {
            Some((pk, v)) if store::same(pk, k) => Some(*v),
            _ => pairs.iter().find(|(pk, _)| store::same(pk, k)).map(|(_, v)| *v),
        }
    }
    let (mut any, mut id_in_b, mut id_in_a) = (false, false, false);
    for (i, (k, v)) in a.iter().enumerate() {
        let old = find(&b, k, i);
        if old.is_none_or(|old| !store::same(old, v)) {
            if let Some(old) = old {
                push(&mut bo, k, old);
                id_in_b |= *k == "id";
            }
            push(&mut ao, k, v);
            id_in_a |= *k == "id";
            any = true;
        }
    }
    for (i, (k, v)) in b.iter().enumerate() {
        if find(&a, k, i).is_none() {
            push(&mut bo, k, v);
            id_in_b |= *k == "id";
            any = true;
        }
    }
    if !any {
        return None;
    }
    // `id` is always named: last, where inserting it into the changed fields' map puts it
    // (a changed `id` keeps its place and takes the after value, as that insert does).
    if let Some(id) = find(&a, "id", 0).or(find(&b, "id", 0)) {
        if !id_in_b {
            push(&mut bo, "id", id);
        }
        if !id_in_a {
            push(&mut ao, "id", id);
        }
    }
    bo.push('}');
    ao.push('}');
    Some((bo, ao))
}

fn router() -> Router<World> {
    api::routes(Router::new())
}

impl Twin for World {
    const NAME: &'static str = "stripe";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const CLIENT_BASE_PATH: &'static str = "";

    fn init(seed: Option<Value>) -> Result<World, String> {
        seed::init(seed)
    }

    fn router() -> &'static Router<World> {
        static R: OnceLock<Router<World>> = OnceLock::new();
        R.get_or_init(router)
    }

    fn unsupported(call: &Call) -> Response {
        let e = core::StripeError::new(
            404,
            "invalid_request_error",
            format!(
                "Unrecognized request URL ({}: {}). This operation is not served by the Stripe twin. Please see https://stripe.com/docs or we can help at https://support.stripe.com/.",
                call.req.method.as_str(),
                call.req.path
            ),
        );
        core::error_response(&e, "req_unsupported")
    }

    fn auth_error(call: &Call) -> Response {
        let msg = match call.req.auth {
            pome_twin_sdk::Auth::Missing => "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').".to_string(),
            _ => "Invalid API Key provided.".to_string(),
        };
        let e = core::StripeError::new(401, "invalid_request_error", msg);
        core::error_response(&e, "req_auth")
    }

    fn host_error(err: &HostError) -> Response {
        let (kind, code) = match err.kind {
            HostErrorKind::RateLimited | HostErrorKind::TapeFull => ("invalid_request_error", Some("rate_limit")),
            HostErrorKind::PayloadTooLarge => ("invalid_request_error", None),
            HostErrorKind::TwinFailed => ("api_error", None),
        };
        let mut e = core::StripeError::new(err.kind.status(), kind, err.message.clone());
        e.code = code.map(str::to_string);
        core::error_response(&e, "req_host")
    }

    fn serves_without_auth(req: &Request) -> bool {
        // The 3-D Secure test page is the customer's, opened in their browser: its link's
        // client secret is what admits them, not the merchant's key.
        // So are the pages of account links and file links: the link is the credential.
        req.path.starts_with("/x402/") || req.path.starts_with(three_ds::PAGE) || req.path.starts_with(api::ONBOARDING) || req.path.starts_with(api::LINKS)
    }

    fn state(&self) -> Value {
        let mut out = serde_json::Map::new();
        out.insert("account_id".into(), json!(self.account_id));
        for (kind, ids) in &self.order {
            let items: Vec<Value> = ids.iter().filter_map(|id| self.get(id)).collect();
            out.insert(plural(kind), Value::Array(items));
        }
        for k in ["payment_intents", "charges", "refunds", "events", "customers"] {
            out.entry(k).or_insert(Value::Array(vec![]));
        }
        Value::Object(out)
    }

    fn tool_aliases() -> Vec<(&'static str, &'static str)> {
        api::TOOL_ALIASES.to_vec()
    }

    fn checks() -> Vec<CheckDecl> {
        checks::declared()
    }

    fn evaluate_check(id: &str, params: &Params, world: &CheckWorld<'_>) -> Result<Outcome, String> {
        checks::evaluate(id, params, world)
    }

    fn credentials() -> Vec<Credential> {
        // Stripe's clients expect a secret key shaped `sk_test_…`; the sandbox hands one out.
        vec![Credential::Bearer, Credential::BasicUser, Credential::Prefix("sk_test_".into())]
    }

    fn tools() -> Vec<pome_twin_sdk::ToolDecl> {
        tools::declared()
    }

    fn tool_body() -> pome_twin_sdk::ToolBody {
        pome_twin_sdk::ToolBody::Form
    }

    fn agent_env() -> Vec<(&'static str, &'static str)> {
        vec![("POME_STRIPE_API_BASE", "{base_url}"), ("POME_STRIPE_API_KEY", "{token}")]
    }
}

pome_twin_sdk::export_twin!(World);

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_3ds;
#[cfg(test)]
mod tests_growth;
#[cfg(test)]
mod tests_input;
#[cfg(test)]
mod tests_params;
#[cfg(test)]
mod tests_surface;
