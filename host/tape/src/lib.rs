//! The tape: one row per request a twin served, in execution order, with what it changed.
//! Plain data; no wasmtime here.

use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// What the twin reported about one entity change through the `tape` import.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StateChange {
    pub entity: String,
    pub id: String,
    pub before: Option<EntityText>,
    pub after: Option<EntityText>,
}

impl StateChange {
    fn weight(&self) -> usize {
        let len = |v: &Option<EntityText>| v.as_ref().map_or(0, |v| v.0.len());
        self.entity.len() + self.id.len() + len(&self.before) + len(&self.after)
    }
}

/// An entity as the JSON text the twin sent, kept as it came: never rebuilt into a tree,
/// since most rows are written once and read only at finalize. It is checked when it is
/// written out, not when it arrives: the twin store serves its requests one at a time, and
/// parsing kilobytes of state per request there held up every other request of the
/// sandbox, while writing a row happens off that path (the journal's writer, a reader of
/// the tape). Text that is not JSON is written as a JSON string.
#[derive(Debug, Clone)]
pub struct EntityText(pub Box<str>);

impl EntityText {
    /// The text as JSON, if it is JSON.
    fn checked(&self) -> Option<&RawValue> {
        serde_json::from_str(&self.0).ok()
    }

    /// The JSON it is written as.
    fn json(&self) -> std::borrow::Cow<'_, str> {
        match self.checked() {
            Some(raw) => std::borrow::Cow::Borrowed(raw.get()),
            None => std::borrow::Cow::Owned(serde_json::to_string(&*self.0).expect("a string is JSON")),
        }
    }
}

impl From<String> for EntityText {
    fn from(text: String) -> EntityText {
        EntityText(text.into_boxed_str())
    }
}

/// Equal when written the same: text that is not JSON equals the JSON string it is written
/// as, so a row read back from storage equals the row as recorded.
impl PartialEq for EntityText {
    fn eq(&self, other: &EntityText) -> bool {
        self.0 == other.0 || self.json() == other.json()
    }
}

impl Serialize for EntityText {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.checked() {
            Some(raw) => raw.serialize(s),
            None => s.serialize_str(&self.0),
        }
    }
}

impl<'de> Deserialize<'de> for EntityText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<EntityText, D::Error> {
        Box::<RawValue>::deserialize(d).map(|raw| EntityText(raw.into()))
    }
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Fidelity {
    #[default]
    Semantic,
    Unsupported,
}

/// One served request. Requests the host refused before the twin saw them (bad token, full
/// tape) are not rows.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TapeRow {
    pub seq: u64,
    /// The virtual time given to the twin for this request, in Unix microseconds; written
    /// as RFC 3339 with microseconds.
    #[serde(with = "rfc3339_micros")]
    pub ts: u64,
    pub twin: String,
    pub request_id: String,
    pub method: String,
    pub path: String,
    pub query: String,
    /// Lower-cased, credentials redacted: exactly what the twin saw.
    pub request_headers: Vec<(String, String)>,
    pub request_body: Body,
    /// The client's base URL the twin built links from (needed to replay byte-for-byte).
    pub base_url: String,
    /// How the request was authenticated: `agent` for nearly every row; `missing` or
    /// `invalid` only for routes a twin serves without a credential (pre-signed URLs).
    pub auth: String,
    /// The door the call came through when it was not REST: `mcp`. Absent for REST.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// The MCP tool the agent called, for a row made through the MCP door.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    pub status: u16,
    pub response_headers: Headers,
    pub response_body: Body,
    pub latency_ms: f64,
    pub action: Option<String>,
    pub fidelity: Fidelity,
    pub state_mutation: bool,
    pub state_delta: Vec<StateChange>,
    /// Webhooks the twin asked the host to deliver while serving this request; the attempts
    /// are in the sandbox's delivery log.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deliveries: Vec<pome_contract::Delivery>,
    pub error: Option<String>,
    /// Whether the twin's world kept what this request did. False only when the twin failed
    /// mid-request and the store was rebuilt without it; a request answered with an error
    /// for another reason (an answer over the size cap) still changed the world, and
    /// recovery and replay must apply it again.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub applied: bool,
    /// The row was served in the sandbox (or run) this one was forked from: it is here
    /// because the fork began from the world it left, and grading sees it like any other.
    #[serde(default, skip_serializing_if = "is_false")]
    pub inherited: bool,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl TapeRow {
    /// Bytes this row holds, for the tape's byte cap and the server's memory budget: every
    /// field a client controls counts (request headers alone may be ~400 KB per request).
    /// Bodies and response headers shared with an earlier row are counted again: an upper
    /// bound, never an undercount.
    pub fn weight(&self) -> usize {
        let pairs = |h: &[(String, String)]| h.iter().map(|(k, v)| k.len() + v.len() + 16).sum::<usize>();
        let delta: usize = self.state_delta.iter().map(StateChange::weight).sum::<usize>()
            + self.deliveries.iter().map(|d| d.url.len() + d.method.len() + d.event.len() + d.body.len() + pairs(&d.headers)).sum::<usize>();
        let text = self.twin.len() + self.request_id.len() + self.method.len() + self.path.len() + self.query.len() + self.base_url.len() + self.auth.len();
        let extra = self.action.as_ref().map_or(0, String::len) + self.error.as_ref().map_or(0, String::len);
        self.request_body.served_len() + self.response_body.served_len() + pairs(&self.request_headers) + pairs(&self.response_headers) + text + extra + delta + 256
    }
}

impl TapeRow {
    /// The row's wire form with both bodies written as `""`, for storage that keeps the
    /// bodies beside it as bytes: escaping a multi-kilobyte body into a JSON string costs
    /// more than everything else about storing the row.
    pub fn json_without_bodies(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(1024 + self.request_headers.len() * 48);
        self.write_json_without_bodies(&mut out);
        out
    }

    /// `json_without_bodies`, appended to `out`.
    pub fn write_json_without_bodies(&self, out: &mut Vec<u8>) {
        struct Apart;
        impl Drop for Apart {
            fn drop(&mut self) {
                BODIES_APART.with(|b| b.set(false));
            }
        }
        BODIES_APART.with(|b| b.set(true));
        let _apart = Apart;
        serde_json::to_writer(out, self).expect("a tape row serializes");
    }
}

thread_local! {
    /// Set while [`TapeRow::json_without_bodies`] runs.
    static BODIES_APART: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Response headers, shared between the tape and the HTTP answer (and between rows that
/// recorded the same ones).
pub type Headers = Arc<[(String, String)]>;

/// A recorded body. It is shared, not copied: the tape row and the HTTP answer hold one
/// allocation, and rows that recorded the same bytes (a client polling an unchanged list)
/// hold one between them. On the wire it is text: UTF-8 as it is, anything else as
/// `base64:<data>`, so a replay sends exactly the bytes the twin saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Body(pub Bytes);

const BASE64_PREFIX: &str = "base64:";

impl Body {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Bytes of its JSON form, as the events route and a run serve it: a body of control
    /// bytes is six times its size there (`\u0001`), binary a third more (base64). Tape caps
    /// and the memory budget count this, so what an agent can make the host serve is what
    /// they bound.
    pub fn served_len(&self) -> usize {
        match std::str::from_utf8(&self.0) {
            Ok(text) if !text.starts_with(BASE64_PREFIX) => {
                let b = text.as_bytes();
                // Every tape row's weight walks its bodies, so the common case (JSON: quotes,
                // no control bytes) is two counts that vectorize; control bytes are rare.
                let quoted = count_where(b, |c| c == b'"' || c == b'\\');
                let control = match count_where(b, |c| c < 0x20) {
                    0 => 0,
                    _ => b.iter().map(|&c| match c {
                        b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
                        0..0x20 => 5,
                        _ => 0,
                    }).sum::<usize>(),
                };
                2 + b.len() + quoted + control
            }
            _ => 2 + BASE64_PREFIX.len() + self.0.len().div_ceil(3) * 4,
        }
    }

    /// The text form.
    pub fn to_text(&self) -> String {
        match std::str::from_utf8(&self.0) {
            Ok(s) if !s.starts_with(BASE64_PREFIX) => s.to_string(),
            _ => format!("{BASE64_PREFIX}{}", base64::engine::general_purpose::STANDARD.encode(&self.0)),
        }
    }

    /// Back from the text form.
    pub fn from_text(s: &str) -> Body {
        Body(match s.strip_prefix(BASE64_PREFIX) {
            Some(b64) => base64::engine::general_purpose::STANDARD.decode(b64).unwrap_or_default().into(),
            None => Bytes::copy_from_slice(s.as_bytes()),
        })
    }
}

/// How many bytes of `b` match `f`, counted in byte-wide lanes (255 at most per lane).
fn count_where(b: &[u8], f: impl Fn(u8) -> bool) -> usize {
    b.chunks(255).map(|c| c.iter().fold(0u8, |n, &x| n + f(x) as u8) as usize).sum()
}

impl Serialize for Body {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if BODIES_APART.with(std::cell::Cell::get) {
            return s.serialize_str("");
        }
        match std::str::from_utf8(&self.0) {
            Ok(text) if !text.starts_with(BASE64_PREFIX) => s.serialize_str(text),
            _ => s.serialize_str(&self.to_text()),
        }
    }
}

impl<'de> Deserialize<'de> for Body {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Body, D::Error> {
        Ok(Body::from_text(&String::deserialize(d)?))
    }
}

/// `ts` on the wire: RFC 3339 with microseconds, in UTC.
pub mod rfc3339_micros {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::{Duration, UNIX_EPOCH};

    pub fn format(us: u64) -> String {
        humantime::format_rfc3339_micros(UNIX_EPOCH + Duration::from_micros(us)).to_string()
    }

    pub fn parse(s: &str) -> Option<u64> {
        let t = humantime::parse_rfc3339(s).ok()?;
        Some(t.duration_since(UNIX_EPOCH).ok()?.as_micros() as u64)
    }

    pub fn serialize<S: Serializer>(us: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(*us))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let text = String::deserialize(d)?;
        parse(&text).ok_or_else(|| serde::de::Error::custom(format!("`{text}` is not an RFC 3339 time")))
    }
}

/// Header names whose values never reach a twin or a tape.
pub const SECRET_HEADERS: &[&str] =
    &["authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key"];

pub const REDACTED: &str = "[redacted]";

/// Redact credentials from a request before a twin sees it: secret headers by name, and any
/// occurrence of a known secret (the sandbox token) in other headers, the query or the body.
pub fn redact_headers(headers: Vec<(String, String)>, secrets: &[&str]) -> Vec<(String, String)> {
    headers
        .into_iter()
        .map(|(k, v)| {
            if SECRET_HEADERS.contains(&k.as_str()) || looks_like_key(&v) {
                (k, REDACTED.to_string())
            } else if secrets.iter().any(|s| !s.is_empty() && v.contains(s)) {
                let v = redact_text(&v, secrets);
                (k, v)
            } else {
                (k, v)
            }
        })
        .collect()
}

/// Replace every occurrence of each secret in `text`.
pub fn redact_text(text: &str, secrets: &[&str]) -> String {
    let mut out = text.to_string();
    for s in secrets.iter().filter(|s| !s.is_empty()) {
        if out.contains(s) {
            out = out.replace(s, REDACTED);
        }
    }
    out
}

/// Same as [`redact_text`] on raw bytes; bodies that are not UTF-8 are left alone unless the
/// secret appears verbatim.
pub fn redact_bytes(body: Vec<u8>, secrets: &[&str]) -> Vec<u8> {
    let hit = secrets.iter().any(|s| !s.is_empty() && contains(&body, s.as_bytes()));
    if !hit {
        return body;
    }
    match String::from_utf8(body) {
        Ok(text) => redact_text(&text, secrets).into_bytes(),
        Err(e) => {
            let mut body = e.into_bytes();
            for s in secrets.iter().filter(|s| !s.is_empty()) {
                while let Some(at) = find(&body, s.as_bytes()) {
                    body.splice(at..at + s.len(), REDACTED.bytes());
                }
            }
            body
        }
    }
}

fn looks_like_key(v: &str) -> bool {
    // Team API keys must never reach a twin even under an unusual header name.
    v.split_whitespace().any(|w| w.starts_with("pme_") || w.starts_with("pat_"))
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    find(hay, needle).is_some()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || needle.len() > hay.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_weighed_as_the_json_it_is_served_as() {
        let bodies: [&[u8]; 6] = [b"", b"plain text", &[0x01; 1000], b"quote \" back\\slash\n\t", &[0xff, 0xfe, 0x00, 0x10], b"base64:looks encoded"];
        for b in bodies {
            let body = Body(Bytes::copy_from_slice(b));
            assert_eq!(body.served_len(), serde_json::to_string(&body).unwrap().len(), "{b:?}");
        }
        assert_eq!(Body(Bytes::from(vec![1u8; 8 << 20])).served_len(), (6 << 23) + 2, "control bytes weigh six each");
    }

    #[test]
    fn secret_headers_and_token_occurrences_are_redacted() {
        let h = redact_headers(
            vec![
                ("authorization".into(), "Bearer tok_abc".into()),
                ("x-echo".into(), "my token is tok_abc".into()),
                ("x-other".into(), "pme_secretkey".into()),
                ("accept".into(), "application/json".into()),
            ],
            &["tok_abc"],
        );
        assert_eq!(h[0].1, REDACTED);
        assert_eq!(h[1].1, "my token is [redacted]");
        assert_eq!(h[2].1, REDACTED);
        assert_eq!(h[3].1, "application/json");
        assert_eq!(redact_bytes(b"token=tok_abc&x=1".to_vec(), &["tok_abc"]), b"token=[redacted]&x=1");
        let binary = redact_bytes(vec![0xff, b'a', b't', b'k', 0xfe], &["tk"]);
        assert_eq!(binary, [&[0xff, b'a'][..], REDACTED.as_bytes(), &[0xfe]].concat());
    }

    #[test]
    fn a_row_without_its_bodies_is_its_wire_form_with_empty_bodies_and_nothing_else_changes() {
        let row = TapeRow { seq: 7, request_body: Body(Bytes::from_static(b"{\"q\":1}")), response_body: Body(Bytes::from_static(&[0xff])), ..TapeRow::default() };
        let apart: TapeRow = serde_json::from_slice(&row.json_without_bodies()).unwrap();
        assert_eq!(apart, TapeRow { request_body: Body::default(), response_body: Body::default(), ..row.clone() });
        let whole: TapeRow = serde_json::from_str(&serde_json::to_string(&row).unwrap()).unwrap();
        assert_eq!(whole, row, "the wire form after it still carries the bodies");
    }

    #[test]
    fn bodies_are_text_on_the_wire_and_round_trip_whatever_the_bytes() {
        for bytes in [&b"{\"ok\":true}"[..], b"", &[0xff, 0x00, 0xfe], b"base64:looks encoded"] {
            let body = Body(Bytes::copy_from_slice(bytes));
            let json = serde_json::to_string(&body).unwrap();
            assert_eq!(serde_json::from_str::<Body>(&json).unwrap(), body, "{json}");
        }
        assert_eq!(serde_json::to_string(&Body(Bytes::from_static(b"hi"))).unwrap(), "\"hi\"");
        assert_eq!(serde_json::to_string(&Body(Bytes::from_static(&[0xff]))).unwrap(), "\"base64:/w==\"");
    }

    #[test]
    fn an_entity_is_written_verbatim_and_text_that_is_not_json_as_a_string() {
        let json = |text: &str| serde_json::to_string(&EntityText::from(text.to_string())).unwrap();
        assert_eq!(json(r#"{"id":1,"b":[true]}"#), r#"{"id":1,"b":[true]}"#);
        assert_eq!(json("not json"), r#""not json""#);
        assert_eq!(json(r#"{"id":1} trailing"#), r#""{\"id\":1} trailing""#);
        let back: EntityText = serde_json::from_str(r#"{"id": 1}"#).unwrap();
        assert_eq!(&*back.0, r#"{"id": 1}"#, "read back as written");
        let not_json = EntityText::from("not json".to_string());
        let read_back: EntityText = serde_json::from_str(&serde_json::to_string(&not_json).unwrap()).unwrap();
        assert_eq!(read_back, not_json, "a row read back equals the row recorded");
    }
}

// ---- Outbound deliveries (webhooks) -------------------------------------------------------

/// One attempt at one delivery.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Attempt {
    pub attempt: u32,
    /// RFC 3339, wall clock: attempts happen in the real world, not in the twin's.
    pub at: String,
    pub status: Option<u16>,
    pub error: Option<String>,
}

/// One delivery the twin asked for, with what became of it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeliveryLog {
    /// `<seq>.<n>`: the tape row that asked for it and its place among that row's deliveries.
    pub id: String,
    pub seq: u64,
    pub event: String,
    pub method: String,
    pub url: String,
    pub request_headers: Vec<(String, String)>,
    pub request_body: Body,
    /// `pending` until it ends `delivered`, `failed` (every attempt used) or `refused` (not an
    /// allowed destination; never attempted).
    pub state: String,
    pub attempts: Vec<Attempt>,
}


impl Default for TapeRow {
    fn default() -> TapeRow {
        TapeRow {
            seq: 0,
            ts: 0,
            twin: String::new(),
            request_id: String::new(),
            method: String::new(),
            path: String::new(),
            query: String::new(),
            request_headers: Vec::new(),
            request_body: Body::default(),
            base_url: String::new(),
            auth: String::new(),
            via: None,
            tool: None,
            status: 0,
            response_headers: Headers::default(),
            response_body: Body::default(),
            latency_ms: 0.0,
            action: None,
            fidelity: Fidelity::Semantic,
            state_mutation: false,
            state_delta: Vec::new(),
            deliveries: Vec::new(),
            error: None,
            applied: true,
            inherited: false,
        }
    }
}
