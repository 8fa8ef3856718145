//! Credentials: team API keys (`pme_…`, stored only as SHA-256 hashes) and sandbox agent
//! tokens (256 random bits, compared in constant time). Also how a credential is read off
//! a twin request in every form real clients send it.

use axum::http::HeaderMap;
use pome_contract::Credential;
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

/// Whether `key` has the shape of a team key: `pme_` and at least 16 more characters of
/// `[A-Za-z0-9_-]`. Checked where a key enters from outside (`POME_API_KEY`).
pub fn is_api_key_shaped(key: &str) -> bool {
    key.strip_prefix("pme_").is_some_and(|rest| rest.len() >= 16 && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'))
}

pub fn hash_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// Constant-time equality, so response timing says nothing about how much of a guess matched.
pub fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// Every form a credential may take, for the host's own routes under a twin.
pub const ANY_FORM: &[Credential] = &[Credential::Bearer, Credential::TokenScheme, Credential::RawAuthorization, Credential::BasicUser, Credential::BasicPassword];

/// The credential on a twin request, read only in the forms the twin declares (its API's
/// clients' forms): `Authorization: Bearer <t>`, `token <t>` (GitHub's clients), a raw
/// `Authorization: <t>` (Linear's SDK), Basic with the token as user (Stripe's SDKs) or as
/// password, a header of its own, or a query or form field (Slack's `token`). A credential in
/// a form the twin does not declare counts as present but wrong, so the agent is told.
pub fn twin_credential(headers: &HeaderMap, query: &str, form_body: Option<&[u8]>, forms: &[Credential]) -> Option<String> {
    let found = read_credential(headers, query, form_body, forms)?;
    // A prefixed form (`sk_test_<token>`) is the same token.
    Some(match Credential::prefix_of(forms).and_then(|p| found.strip_prefix(p)) {
        Some(bare) => bare.to_string(),
        None => found,
    })
}

fn read_credential(headers: &HeaderMap, query: &str, form_body: Option<&[u8]>, forms: &[Credential]) -> Option<String> {
    let allows = |c: &Credential| forms.contains(c);
    if let Some(v) = headers.get("authorization").and_then(|v| v.to_str().ok()) {
        let v = v.trim();
        let (scheme, rest) = v.split_once(' ').unwrap_or(("", v));
        let read = match scheme.to_ascii_lowercase().as_str() {
            "bearer" if allows(&Credential::Bearer) => Some(rest.trim().to_string()),
            "token" if allows(&Credential::TokenScheme) => Some(rest.trim().to_string()),
            "basic" => (|| {
                let decoded = base64::engine::general_purpose::STANDARD.decode(rest.trim()).ok()?;
                let text = String::from_utf8(decoded).ok()?;
                let (user, pass) = text.split_once(':').unwrap_or((&text, ""));
                match (allows(&Credential::BasicUser) && !user.is_empty(), allows(&Credential::BasicPassword) && !pass.is_empty()) {
                    (true, _) => Some(user.to_string()),
                    (false, true) => Some(pass.to_string()),
                    _ => None,
                }
            })(),
            "bearer" | "token" => None,
            _ if allows(&Credential::RawAuthorization) => Some(v.to_string()),
            _ => None,
        };
        // An Authorization header in a form the twin does not take is a wrong credential.
        return Some(read.unwrap_or_default());
    }
    for form in forms {
        let found = match form {
            Credential::Header(name) => headers.get(name.as_str()).and_then(|v| v.to_str().ok()).map(|v| v.trim().to_string()),
            Credential::Query(name) => field(query.as_bytes(), name),
            Credential::FormField(name) => form_body.and_then(|b| field(b, name)),
            _ => None,
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

fn field(bytes: &[u8], name: &str) -> Option<String> {
    form_urlencoded::parse(bytes).find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
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
    fn every_declared_form_of_credential_is_read() {
        let slackish = [Credential::Bearer, Credential::Query("token".into()), Credential::FormField("token".into())];
        assert_eq!(twin_credential(&h("Bearer tok_1"), "", None, ANY_FORM).as_deref(), Some("tok_1"));
        assert_eq!(twin_credential(&h("token tok_1"), "", None, ANY_FORM).as_deref(), Some("tok_1"));
        assert_eq!(twin_credential(&h("tok_1"), "", None, ANY_FORM).as_deref(), Some("tok_1"));
        let basic = base64::engine::general_purpose::STANDARD.encode("tok_1:");
        assert_eq!(twin_credential(&h(&format!("Basic {basic}")), "", None, ANY_FORM).as_deref(), Some("tok_1"));
        assert_eq!(twin_credential(&HeaderMap::new(), "a=1&token=tok_1", None, &slackish).as_deref(), Some("tok_1"));
        assert_eq!(twin_credential(&HeaderMap::new(), "", Some(b"token=tok_1&channel=C1"), &slackish).as_deref(), Some("tok_1"));
        assert_eq!(twin_credential(&HeaderMap::new(), "", None, &slackish), None);
        let mut m = HeaderMap::new();
        m.insert("x-ticket-key", "tok_1".parse().unwrap());
        assert_eq!(twin_credential(&m, "", None, &[Credential::Header("x-ticket-key".into())]).as_deref(), Some("tok_1"));
    }

    #[test]
    fn a_declared_prefix_may_precede_the_token_in_any_form() {
        let prefixed = [Credential::BasicUser, Credential::Bearer, Credential::Prefix("sk_test_".into())];
        let basic = base64::engine::general_purpose::STANDARD.encode("sk_test_tok_1:");
        assert_eq!(twin_credential(&h(&format!("Basic {basic}")), "", None, &prefixed).as_deref(), Some("tok_1"));
        assert_eq!(twin_credential(&h("Bearer tok_1"), "", None, &prefixed).as_deref(), Some("tok_1"));
        assert_eq!(twin_credential(&h("Bearer sk_test_tok_1"), "", None, ANY_FORM).as_deref(), Some("sk_test_tok_1"), "no prefix is stripped unless the twin declares it");
    }

    #[test]
    fn a_form_the_twin_does_not_declare_is_a_wrong_credential() {
        let bearer_only = [Credential::Bearer];
        assert_eq!(twin_credential(&h("token tok_1"), "", None, &bearer_only).as_deref(), Some(""));
        assert_eq!(twin_credential(&h("tok_1"), "", None, &bearer_only).as_deref(), Some(""));
        assert_eq!(twin_credential(&HeaderMap::new(), "token=tok_1", None, &bearer_only), None, "a query field it does not read is no credential");
    }

    #[test]
    fn tokens_are_long_and_distinct() {
        let (a, b) = (new_agent_token(), new_agent_token());
        assert_ne!(a, b);
        assert!(a.len() >= 4 + 32, "at least 128 bits of randomness");
        assert!(same(&a, &a.clone()) && !same(&a, &b));
    }
}
