//! Credentials: team API keys (`pme_…`, stored only as SHA-256 hashes) and sandbox agent
//! tokens (256 random bits, compared in constant time). Also how a credential is read off
//! a twin request in every form real clients send it.

use axum::http::HeaderMap;
use pome_contract::Credential;
use base64::Engine as _;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use pome_runtime::limits::{AUTH_FAILURES_ALLOWED, AUTH_FAILURE_WINDOW, AUTH_TRACKED_ADDRESSES};

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

/// Failed authentications per client address, so guessing keys or tokens is slow: after
/// [`AUTH_FAILURES_ALLOWED`] failures within [`AUTH_FAILURE_WINDOW`], an address's further
/// failing attempts are answered 429 until its window ends. A credential that is valid is
/// never refused here: the check comes after a cheap in-memory verification, so a team
/// sharing an address with a guesser keeps working. At most [`AUTH_TRACKED_ADDRESSES`]
/// addresses are remembered; the oldest is forgotten first.
pub struct AuthLimiter {
    /// Failures allowed per window (`AUTH_FAILURES_ALLOWED` unless `--auth-failures`).
    allowed: u32,
    state: Mutex<LimiterState>,
    /// Failed authentications counted, and attempts refused with 429, since start.
    pub failures: AtomicU64,
    pub refusals: AtomicU64,
}

#[derive(Default)]
struct LimiterState {
    by_address: HashMap<IpAddr, Failures>,
    /// Addresses in the order their windows started, for forgetting the oldest.
    order: VecDeque<(IpAddr, Instant)>,
}

#[derive(Clone, Copy)]
struct Failures {
    since: Instant,
    count: u32,
}

impl Default for AuthLimiter {
    fn default() -> Self {
        AuthLimiter::new(AUTH_FAILURES_ALLOWED)
    }
}

impl AuthLimiter {
    pub fn new(allowed: u32) -> AuthLimiter {
        AuthLimiter { allowed, state: Mutex::new(LimiterState::default()), failures: AtomicU64::new(0), refusals: AtomicU64::new(0) }
    }

    /// How long `addr` must wait before its next failing attempt is checked, if it is
    /// refused now.
    pub fn refused(&self, addr: IpAddr) -> Option<Duration> {
        let now = Instant::now();
        let state = self.state.lock().unwrap();
        let f = state.by_address.get(&bucket(addr))?;
        let ends = f.since + AUTH_FAILURE_WINDOW;
        let refused = (f.count >= self.allowed && ends > now).then(|| ends - now);
        if refused.is_some() {
            self.refusals.fetch_add(1, Ordering::Relaxed);
        }
        refused
    }

    /// Count one failed authentication from `addr`.
    pub fn failed(&self, addr: IpAddr) {
        let (addr, now) = (bucket(addr), Instant::now());
        self.failures.fetch_add(1, Ordering::Relaxed);
        let mut state = self.state.lock().unwrap();
        match state.by_address.get_mut(&addr) {
            Some(f) if f.since + AUTH_FAILURE_WINDOW > now => f.count = f.count.saturating_add(1),
            _ => {
                state.by_address.insert(addr, Failures { since: now, count: 1 });
                state.order.push_back((addr, now));
            }
        }
        // Forget windows that ended, and the oldest when over the cap. An `order` entry whose
        // address started a newer window since is stale and only dropped.
        while let Some(&(oldest, since)) = state.order.front() {
            let current = state.by_address.get(&oldest).is_some_and(|f| f.since == since);
            let over = state.by_address.len() > AUTH_TRACKED_ADDRESSES;
            if current && !over && since + AUTH_FAILURE_WINDOW > now {
                break;
            }
            state.order.pop_front();
            if current {
                state.by_address.remove(&oldest);
            }
        }
    }

    /// Addresses remembered now (for tests and `/metrics`).
    pub fn tracked(&self) -> usize {
        self.state.lock().unwrap().by_address.len()
    }
}

/// IPv6 clients are counted by their /64, which one host usually holds whole; an IPv4-mapped
/// address counts as the IPv4 address it is.
fn bucket(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
        v4 => v4,
    }
}

/// A secret an agent proves it holds: a sandbox's agent token, or a local twin's token.
pub trait AgentSecret: Send + Sync {
    /// Whether `presented` is the secret (compared in constant time).
    fn verify(&self, presented: &str) -> bool;
    /// The secret in clear, when this process knows it (to redact it from what is recorded).
    fn clear(&self) -> Option<&str>;
}

impl AgentSecret for str {
    fn verify(&self, presented: &str) -> bool {
        same(self, presented)
    }
    fn clear(&self) -> Option<&str> {
        Some(self)
    }
}

impl AgentSecret for String {
    fn verify(&self, presented: &str) -> bool {
        same(self, presented)
    }
    fn clear(&self) -> Option<&str> {
        Some(self)
    }
}

/// A sandbox's agent token. Only its SHA-256 is ever written to disk, so a sandbox brought
/// back after a restart knows the hash alone; it learns the token in clear again the first
/// time its agent presents it (and needs it then: to redact it from tape rows).
#[derive(Debug)]
pub struct AgentToken {
    hash: String,
    clear: std::sync::OnceLock<String>,
}

impl AgentToken {
    /// A token made now: known in clear.
    pub fn new(clear: String) -> AgentToken {
        AgentToken { hash: hash_key(&clear), clear: std::sync::OnceLock::from(clear) }
    }

    /// A token known by its hash (read back from disk).
    pub fn from_hash(hash: String) -> AgentToken {
        AgentToken { hash, clear: std::sync::OnceLock::new() }
    }

    /// SHA-256 of the token, hex.
    pub fn hash(&self) -> &str {
        &self.hash
    }
}

impl AgentSecret for AgentToken {
    fn verify(&self, presented: &str) -> bool {
        if let Some(clear) = self.clear.get() {
            return same(clear, presented);
        }
        let ok = same(&hash_key(presented), &self.hash);
        if ok {
            let _ = self.clear.set(presented.to_string());
        }
        ok
    }
    fn clear(&self) -> Option<&str> {
        self.clear.get().map(String::as_str)
    }
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
    fn failures_up_to_the_allowance_are_checked_obeyed() {
        let limiter = AuthLimiter::default();
        let addr: IpAddr = "192.0.2.1".parse().unwrap();
        for _ in 0..AUTH_FAILURES_ALLOWED - 1 {
            limiter.failed(addr);
        }
        assert_eq!(limiter.refused(addr), None);
    }

    #[test]
    fn failures_past_the_allowance_are_refused_for_the_rest_of_the_window_violated() {
        let limiter = AuthLimiter::default();
        let addr: IpAddr = "192.0.2.1".parse().unwrap();
        for _ in 0..AUTH_FAILURES_ALLOWED {
            limiter.failed(addr);
        }
        let wait = limiter.refused(addr).expect("refused");
        assert!(wait <= AUTH_FAILURE_WINDOW && wait > Duration::ZERO);
        assert_eq!(limiter.refused("192.0.2.2".parse().unwrap()), None, "another address is not refused");
        // One IPv6 host's /64 is one client.
        let (a, b): (IpAddr, IpAddr) = ("2001:db8::1".parse().unwrap(), "2001:db8::ffff".parse().unwrap());
        for _ in 0..AUTH_FAILURES_ALLOWED {
            limiter.failed(a);
        }
        assert!(limiter.refused(b).is_some());
    }

    #[test]
    fn the_limiter_remembers_a_bounded_number_of_addresses() {
        let limiter = AuthLimiter::default();
        for i in 0..(AUTH_TRACKED_ADDRESSES as u32 + 1000) {
            limiter.failed(IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i)));
        }
        assert!(limiter.tracked() <= AUTH_TRACKED_ADDRESSES);
    }

    #[test]
    fn a_token_known_by_its_hash_verifies_and_is_learned_in_clear() {
        let token = new_agent_token();
        let restored = AgentToken::from_hash(hash_key(&token));
        assert_eq!(restored.clear(), None);
        assert!(!restored.verify("tok_wrong"));
        assert_eq!(restored.clear(), None, "a wrong guess teaches nothing");
        assert!(restored.verify(&token));
        assert_eq!(restored.clear(), Some(token.as_str()));
        assert!(AgentToken::new(token.clone()).verify(&token));
    }

    #[test]
    fn tokens_are_long_and_distinct() {
        let (a, b) = (new_agent_token(), new_agent_token());
        assert_ne!(a, b);
        assert!(a.len() >= 4 + 32, "at least 128 bits of randomness");
        assert!(same(&a, &a.clone()) && !same(&a, &b));
    }
}
