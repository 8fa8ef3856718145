//! The tape: one row per request a twin served, in execution order, with what it changed.
//! Plain data; no wasmtime here.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the twin reported about one entity change through the `tape` import.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StateChange {
    pub entity: String,
    pub id: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Fidelity {
    Semantic,
    Unsupported,
}

/// One served request. Requests the host refused before the twin saw them (bad token, full
/// tape) are not rows.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TapeRow {
    pub seq: u64,
    /// The virtual time given to the twin for this request (RFC 3339, microseconds).
    pub ts: String,
    pub twin: String,
    pub request_id: String,
    pub method: String,
    pub path: String,
    pub query: String,
    /// Lower-cased, credentials redacted: exactly what the twin saw.
    pub request_headers: Vec<(String, String)>,
    pub request_body: String,
    /// The client's base URL the twin built links from (needed to replay byte-for-byte).
    pub base_url: String,
    /// How the request was authenticated: `agent` for nearly every row; `missing` or
    /// `invalid` only for routes a twin serves without a credential (pre-signed URLs).
    pub auth: String,
    pub status: u16,
    pub response_headers: Vec<(String, String)>,
    pub response_body: String,
    pub latency_ms: f64,
    pub action: Option<String>,
    pub fidelity: Fidelity,
    pub state_mutation: bool,
    pub state_delta: Vec<StateChange>,
    pub error: Option<String>,
}

impl TapeRow {
    /// Bytes this row holds, for the tape's byte cap.
    pub fn weight(&self) -> usize {
        self.request_body.len() + self.response_body.len() + self.path.len() + self.query.len() + 256
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
            } else {
                let v = redact_text(&v, secrets);
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
}
