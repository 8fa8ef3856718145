//! Outbound deliveries: the webhooks twins ask for (contract 0.2.0's `outbound` import).
//!
//! A twin builds and signs each request while serving a call; the store puts it on that call's
//! tape row and hands it here. One task per delivery sends it, after the call has answered,
//! with retries and exponential backoff, and appends every attempt to the twin store's
//! delivery log (`/_pome/deliveries`, and the run at finalize). Nothing flows back into the
//! twin, so a world never depends on the network and replays stay exact.
//!
//! A hosted pome must not become a way into someone's network: a delivery goes only to
//! destinations the operator allows (`pome serve --deliver-to`; loopback only by default).
//! A host name is resolved once, every address it resolves to must be allowed, and the
//! request is sent to exactly the address that was checked, so DNS cannot swap it afterwards.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;


use pome_tape::{Attempt, Body, DeliveryLog};

/// One destination the operator allows: a network in CIDR notation or an exact host name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    Net(IpAddr, u8),
    Host(String),
}

impl std::str::FromStr for Destination {
    type Err = String;
    fn from_str(s: &str) -> Result<Destination, String> {
        let s = s.trim();
        if let Some((ip, bits)) = s.split_once('/') {
            let ip: IpAddr = ip.parse().map_err(|_| format!("`{s}`: `{ip}` is not an IP address"))?;
            let max = if ip.is_ipv4() { 32 } else { 128 };
            let bits: u8 = bits.parse().ok().filter(|b| *b <= max).ok_or_else(|| format!("`{s}`: the prefix must be 0 to {max}"))?;
            return Ok(Destination::Net(ip, bits));
        }
        if let Ok(ip) = s.parse::<IpAddr>() {
            return Ok(Destination::Net(ip, if ip.is_ipv4() { 32 } else { 128 }));
        }
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-') {
            return Err(format!("`{s}` is neither a CIDR (10.0.0.0/8), an IP address nor a host name"));
        }
        Ok(Destination::Host(s.to_ascii_lowercase()))
    }
}

impl Destination {
    fn contains(&self, ip: IpAddr) -> bool {
        match (self, ip) {
            (Destination::Net(IpAddr::V4(net), bits), IpAddr::V4(a)) => mask(u32::from(*net).into(), u32::from(a).into(), *bits, 32),
            (Destination::Net(IpAddr::V6(net), bits), IpAddr::V6(a)) => mask(u128::from(*net), u128::from(a), *bits, 128),
            _ => false,
        }
    }
}

fn mask(net: u128, addr: u128, bits: u8, width: u8) -> bool {
    if bits == 0 {
        return true;
    }
    let shift = u32::from(width - bits);
    (net >> shift) == (addr >> shift)
}

/// Loopback only: what a self-hosted pome may reach without the operator saying more.
pub fn default_destinations() -> Vec<Destination> {
    vec![Destination::Net(IpAddr::from([127, 0, 0, 0]), 8), Destination::Net(IpAddr::from(std::net::Ipv6Addr::LOCALHOST), 128)]
}

/// How deliveries are sent. Every number is here, with why.
#[derive(Debug, Clone)]
pub struct Policy {
    pub allowed: Vec<Destination>,
    /// Attempts per delivery, the first included. Webhook senders retry a few times; four
    /// spans a receiver's restart without keeping work for a closed sandbox long.
    pub attempts: u32,
    /// Wait before the second attempt; doubled for each one after.
    pub backoff: Duration,
    /// Per attempt: a receiver that cannot answer in this long is down.
    pub timeout: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        Policy { allowed: default_destinations(), attempts: 4, backoff: Duration::from_secs(1), timeout: Duration::from_secs(10) }
    }
}

/// A twin store's delivery log, shared between the store, its delivery tasks and readers.
pub type Log = Arc<Mutex<Vec<DeliveryLog>>>;

/// What the store hands over for each delivery.
pub struct Outgoing {
    pub seq: u64,
    pub index: usize,
    pub delivery: pome_contract::Delivery,
}

/// Start sending `out` in the background, logging into `log`.
pub fn send(policy: Arc<Policy>, log: Log, out: Outgoing) {
    let id = format!("{}.{}", out.seq, out.index + 1);
    let d = out.delivery;
    log.lock().unwrap().push(DeliveryLog {
        id: id.clone(),
        seq: out.seq,
        event: d.event.clone(),
        method: d.method.clone(),
        url: d.url.clone(),
        request_headers: d.headers.clone(),
        request_body: Body::from_text(&d.body),
        state: "pending".into(),
        attempts: Vec::new(),
    });
    tokio::spawn(async move {
        let body = Body::from_text(&d.body).0;
        let update = |f: &dyn Fn(&mut DeliveryLog)| {
            if let Some(entry) = log.lock().unwrap().iter_mut().find(|e| e.id == id) {
                f(entry);
            }
        };
        let target = match resolve(&policy, &d.url).await {
            Ok(t) => t,
            Err(why) => {
                let at = now();
                update(&|e| {
                    e.state = "refused".into();
                    e.attempts.push(Attempt { attempt: 0, at: at.clone(), status: None, error: Some(why.clone()) });
                });
                return;
            }
        };
        let mut wait = policy.backoff;
        for attempt in 1..=policy.attempts {
            let (status, error) = match attempt_once(&policy, &target, &d, body.clone()).await {
                Ok(s) if (200..300).contains(&s) => (Some(s), None),
                Ok(s) => (Some(s), Some(format!("the receiver answered {s}"))),
                Err(e) => (None, Some(e)),
            };
            let done = error.is_none();
            let at = now();
            update(&|e| {
                e.attempts.push(Attempt { attempt, at: at.clone(), status, error: error.clone() });
                if done {
                    e.state = "delivered".into();
                } else if attempt == policy.attempts {
                    e.state = "failed".into();
                }
            });
            if done {
                return;
            }
            if attempt < policy.attempts {
                tokio::time::sleep(wait).await;
                wait *= 2;
            }
        }
    });
}

/// Where a checked delivery goes: the URL's host name pinned to an allowed address.
struct Target {
    url: reqwest::Url,
    pin: Option<(String, SocketAddr)>,
}

async fn resolve(policy: &Policy, url: &str) -> Result<Target, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("`{url}`: only http and https deliveries are sent"));
    }
    let host = parsed.host_str().ok_or_else(|| format!("`{url}` names no host"))?.trim_matches(['[', ']']).to_ascii_lowercase();
    let port = parsed.port_or_known_default().unwrap_or(80);
    let refuse = |what: String| format!("{what} is not an allowed delivery destination; the operator allows it with `pome serve --deliver-to`");
    if let Ok(ip) = host.parse::<IpAddr>() {
        return if policy.allowed.iter().any(|d| d.contains(ip)) { Ok(Target { url: parsed, pin: None }) } else { Err(refuse(ip.to_string())) };
    }
    let by_name = policy.allowed.iter().any(|d| *d == Destination::Host(host.clone()));
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), port)).await.map_err(|e| format!("`{host}` does not resolve: {e}"))?.collect();
    let first = *addrs.first().ok_or_else(|| format!("`{host}` resolves to no address"))?;
    if !by_name && !addrs.iter().all(|a| policy.allowed.iter().any(|d| d.contains(a.ip()))) {
        return Err(refuse(format!("`{host}` ({})", addrs.iter().map(|a| a.ip().to_string()).collect::<Vec<_>>().join(", "))));
    }
    Ok(Target { url: parsed, pin: Some((host, first)) })
}

async fn attempt_once(policy: &Policy, target: &Target, d: &pome_contract::Delivery, body: bytes::Bytes) -> Result<u16, String> {
    let mut client = reqwest::Client::builder().timeout(policy.timeout).redirect(reqwest::redirect::Policy::none());
    if let Some((host, addr)) = &target.pin {
        client = client.resolve(host, *addr);
    }
    let client = client.build().map_err(|e| e.to_string())?;
    let method = reqwest::Method::from_bytes(d.method.as_bytes()).map_err(|_| format!("`{}` is not an HTTP method", d.method))?;
    let mut req = client.request(method, target.url.clone()).body(body);
    for (k, v) in &d.headers {
        req = req.header(k, v);
    }
    let resp = req.send().await.map_err(|e| format!("{e}"))?;
    Ok(resp.status().as_u16())
}

fn now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_parse_and_match() {
        let lo: Destination = "127.0.0.0/8".parse().unwrap();
        assert!(lo.contains("127.1.2.3".parse().unwrap()) && !lo.contains("10.0.0.1".parse().unwrap()));
        let one: Destination = "192.168.1.7".parse().unwrap();
        assert!(one.contains("192.168.1.7".parse().unwrap()) && !one.contains("192.168.1.8".parse().unwrap()));
        assert_eq!("Hooks.Example.com".parse::<Destination>().unwrap(), Destination::Host("hooks.example.com".into()));
        assert!("10.0.0.0/33".parse::<Destination>().is_err());
        assert!("a b".parse::<Destination>().is_err());
        let all: Destination = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("8.8.8.8".parse().unwrap()));
    }

    #[tokio::test]
    async fn a_destination_outside_the_allowed_ones_is_refused_before_any_connection() {
        let policy = Policy::default();
        let err = resolve(&policy, "http://10.1.2.3:9/hook").await.err().unwrap();
        assert!(err.contains("not an allowed delivery destination") && err.contains("--deliver-to"), "{err}");
        assert!(resolve(&policy, "http://127.0.0.1:9/hook").await.is_ok());
        assert!(resolve(&policy, "ftp://127.0.0.1/x").await.is_err());
    }
}
