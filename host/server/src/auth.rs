//! Credentials: team API keys (`pme_…`, stored only as SHA-256 hashes) and sandbox agent
//! tokens (256 random bits, compared in constant time). Also how a credential is read off
//! a twin request in every form real clients send it.

use axum::http::HeaderMap;
use base64::Engine as _;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).expect("the OS provides randomness");
    hex::encode(buf)
}

/// A new team API key.
pub fn new_api_key() -> String {
    format!("pme_{}", random_hex(24))
}

/// A new sandbox agent token: 256 bits.
pub fn new_agent_token() -> String {
    format!("tok_{}", random_hex(32))
}

/// A new sandbox id (`ses_…`).
pub fn new_sandbox_id() -> String {
    format!("ses_{}", random_hex(12))
}

pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", random_hex(12))
}

pub fn hash_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// Constant-time equality, so response timing says nothing about how much of a guess matched.
pub fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// The credential on a twin request: `Authorization: Bearer <t>`, `token <t>` (PyGithub,
/// Octokit), a raw `Authorization: <t>` (Linear's SDK), Basic with the token as user
/// (Stripe's curl style), or a `token` query/form field (Slack).
pub fn twin_credential(headers: &HeaderMap, query: &str, form_body: Option<&[u8]>) -> Option<String> {
    if let Some(v) = headers.get("authorization").and_then(|v| v.to_str().ok()) {
        let v = v.trim();
        let (scheme, rest) = v.split_once(' ').unwrap_or(("", v));
        return Some(match scheme.to_ascii_lowercase().as_str() {
            "bearer" | "token" => rest.trim().to_string(),
            "basic" => {
                let decoded = base64::engine::general_purpose::STANDARD.decode(rest.trim()).ok()?;
                let text = String::from_utf8(decoded).ok()?;
                let (user, pass) = text.split_once(':').unwrap_or((&text, ""));
                if user.is_empty() { pass.to_string() } else { user.to_string() }
            }
            _ => v.to_string(),
        });
    }
    let from_pairs = |bytes: &[u8]| {
        form_urlencoded::parse(bytes).find(|(k, _)| k == "token").map(|(_, v)| v.into_owned())
    };
    from_pairs(query.as_bytes()).or_else(|| form_body.and_then(from_pairs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(v: &str) -> HeaderMap {
        let mut m = HeaderMap::new();
        m.insert("authorization", v.parse().unwrap());
        m
    }

    #[test]
    fn every_client_style_of_credential_is_read() {
        assert_eq!(twin_credential(&h("Bearer tok_1"), "", None).as_deref(), Some("tok_1"));
        assert_eq!(twin_credential(&h("token tok_1"), "", None).as_deref(), Some("tok_1"));
        assert_eq!(twin_credential(&h("tok_1"), "", None).as_deref(), Some("tok_1"));
        let basic = base64::engine::general_purpose::STANDARD.encode("tok_1:");
        assert_eq!(twin_credential(&h(&format!("Basic {basic}")), "", None).as_deref(), Some("tok_1"));
        assert_eq!(twin_credential(&HeaderMap::new(), "a=1&token=tok_1", None).as_deref(), Some("tok_1"));
        assert_eq!(twin_credential(&HeaderMap::new(), "", Some(b"token=tok_1&channel=C1")).as_deref(), Some("tok_1"));
        assert_eq!(twin_credential(&HeaderMap::new(), "", None), None);
    }

    #[test]
    fn tokens_are_long_and_distinct() {
        let (a, b) = (new_agent_token(), new_agent_token());
        assert_ne!(a, b);
        assert!(a.len() >= 4 + 32, "at least 128 bits of randomness");
        assert!(same(&a, &a.clone()) && !same(&a, &b));
    }
}
