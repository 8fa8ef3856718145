//! Outbound deliveries: the webhooks twins ask for (contract 0.2.0's `outbound` import).
//!
//! A twin builds and signs each request while serving a call; the store puts it on that call's
//! tape row and hands it here once the row is durable. One task per delivery sends it, with
//! retries and exponential backoff, and appends every attempt to the twin store's delivery
//! log (`/_pome/deliveries`, and the run at finalize). Nothing flows back into the twin, so a
//! world never depends on the network and replays stay exact.
//!
//! A hosted pome must not become a way into anyone's network, its own host's first:
//! - a delivery goes only to destinations the operator names (`pome serve --deliver-to`);
//!   none are named by default, so `pome serve` delivers nowhere until told where;
//! - a host name is resolved once and every address it resolves to is checked (a named host
//!   name allows the name, not loopback or metadata addresses behind it); the request goes
//!   to exactly the addresses checked, so DNS cannot swap them afterwards;
//! - IPv4-mapped and IPv4-compatible IPv6 addresses are checked as the IPv4 address they
//!   reach; loopback, link-local and cloud metadata addresses need an entry naming them
//!   (a wide network such as `0.0.0.0/0` does not); `0.0.0.0/8` and `::` never go;
//! - proxies from the environment are ignored and redirects are not followed;
//! - each twin store delivers to a bounded number of endpoints with a bounded number in
//!   flight, and attempts across the process share a bounded number of permits;
//! - the log says what the receiver answered, or only `timeout`/`unreachable`: never a
//!   connection error's text, which would make the log a port scanner. A destination that
//!   is not allowed and one that does not resolve read the same. The operator's log (tracing)
//!   keeps the detail.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use pome_tape::{Attempt, Body, DeliveryLog, TapeRow};

use crate::engine::Held;
use crate::limits;

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
        let (ip, bits) = match s.split_once('/') {
            Some((ip, bits)) => {
                let ip: IpAddr = ip.trim_matches(['[', ']']).parse().map_err(|_| format!("`{s}`: `{ip}` is not an IP address"))?;
                let max = if ip.is_ipv4() { 32 } else { 128 };
                let bits: u8 = bits.parse().ok().filter(|b| *b <= max).ok_or_else(|| format!("`{s}`: the prefix must be 0 to {max}"))?;
                (ip, bits)
            }
            None => match s.trim_matches(['[', ']']).parse::<IpAddr>() {
                Ok(ip) => (ip, if ip.is_ipv4() { 32 } else { 128 }),
                Err(_) => {
                    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-') {
                        return Err(format!("`{s}` is neither a CIDR (10.0.0.0/8), an IP address nor a host name"));
                    }
                    return Ok(Destination::Host(s.trim_end_matches('.').to_ascii_lowercase()));
                }
            },
        };
        // `::ffff:10.0.0.0/104` names the IPv4 network it maps, and is checked as one.
        if let IpAddr::V6(v6) = ip
            && let Some(v4) = v6.to_ipv4_mapped()
            && bits >= 96
        {
            return Ok(Destination::Net(IpAddr::V4(v4), bits - 96));
        }
        // And an exact IPv4-compatible address (`::10.0.0.1`) names the IPv4 address it reaches,
        // as `canonical` checks it: written this way it would otherwise name nothing.
        if bits == 128
            && let IpAddr::V4(v4) = canonical(ip)
        {
            return Ok(Destination::Net(IpAddr::V4(v4), 32));
        }
        Ok(Destination::Net(ip, bits))
    }
}

impl Destination {
    fn contains(&self, ip: IpAddr) -> bool {
        match *self {
            Destination::Net(net, bits) => in_net(net, bits, ip),
            Destination::Host(_) => false,
        }
    }

    /// Whether this entry names a network inside `net/bits` (the whole of it or less).
    fn within(&self, net: IpAddr, bits: u8) -> bool {
        match *self {
            Destination::Net(ip, b) => b >= bits && in_net(net, bits, ip),
            Destination::Host(_) => false,
        }
    }
}

fn in_net(net: IpAddr, bits: u8, ip: IpAddr) -> bool {
    match (net, ip) {
        (IpAddr::V4(n), IpAddr::V4(a)) => mask(u32::from(n).into(), u32::from(a).into(), bits, 32),
        (IpAddr::V6(n), IpAddr::V6(a)) => mask(u128::from(n), u128::from(a), bits, 128),
        _ => false,
    }
}

fn mask(net: u128, addr: u128, bits: u8, width: u8) -> bool {
    if bits == 0 {
        return true;
    }
    let shift = u32::from(width - bits);
    (net >> shift) == (addr >> shift)
}

/// The address a connection to `ip` actually reaches: IPv4-mapped (`::ffff:127.0.0.1`) and
/// IPv4-compatible (`::127.0.0.1`) IPv6 addresses are their IPv4 address. (`::` and `::1`
/// are IPv6's own unspecified and loopback addresses, not compatible ones.)
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return IpAddr::V4(v4);
            }
            if v6.segments()[..6] == [0; 6] && !v6.is_unspecified() && !v6.is_loopback() {
                return IpAddr::V4(Ipv4Addr::from(u128::from(v6) as u32));
            }
            ip
        }
    }
}

/// Addresses only an entry inside their range allows (a wide network like `0.0.0.0/0` does
/// not): the host's own network, the link-local network, and the cloud metadata services
/// (which hand out credentials). Each with the range an entry must lie within.
fn guarded(ip: IpAddr) -> Option<(IpAddr, u8)> {
    const METADATA: [IpAddr; 3] = [
        IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254)),    // AWS, GCP, Azure, OpenStack
        IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200)),    // Alibaba Cloud
        IpAddr::V6(Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)), // AWS over IPv6
    ];
    if METADATA.contains(&ip) {
        // Only an entry naming the service's own address.
        return Some((ip, if ip.is_ipv4() { 32 } else { 128 }));
    }
    match ip {
        IpAddr::V4(v4) if v4.is_loopback() => Some((Ipv4Addr::new(127, 0, 0, 0).into(), 8)),
        IpAddr::V4(v4) if v4.is_link_local() => Some((Ipv4Addr::new(169, 254, 0, 0).into(), 16)),
        IpAddr::V6(v6) if v6.is_loopback() => Some((ip, 128)),
        IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xfe80 => Some((Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0).into(), 10)),
        _ => None,
    }
}

/// Addresses no entry allows: "this network" (`0.0.0.0/8`, which Linux connects to the host
/// itself) and IPv6's unspecified `::`.
fn never(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.octets()[0] == 0,
        IpAddr::V6(v6) => v6.is_unspecified(),
    }
}

/// Loopback: what the local conveniences (`pome twin start`, `pome run --local`) deliver to,
/// where the receiver is on the developer's own machine.
pub fn loopback() -> Vec<Destination> {
    vec![Destination::Net(Ipv4Addr::new(127, 0, 0, 0).into(), 8), Destination::Net(Ipv6Addr::LOCALHOST.into(), 128)]
}

/// How deliveries are sent. Defaults from `limits.rs`, with why.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Where deliveries may go; none by default (`pome serve --deliver-to`).
    pub allowed: Vec<Destination>,
    /// Attempts per delivery, the first included.
    pub attempts: u32,
    /// Wait before the second attempt; doubled for each one after.
    pub backoff: Duration,
    /// Per attempt (and per host-name lookup): a receiver that cannot answer in this long is down.
    pub timeout: Duration,
    /// Distinct endpoint URLs one twin store may deliver to.
    pub max_endpoints: usize,
    /// Deliveries of one twin store pending or retrying at once.
    pub max_in_flight: usize,
    /// Attempts (and lookups) in progress at once across every store using this policy: the
    /// server builds one policy, so across the process.
    pub concurrency: usize,
    /// The newest entries, and bytes, one store's delivery log keeps.
    pub log_entries: usize,
    pub log_bytes: usize,
    /// Bytes of a delivery's body its log entry keeps (the whole body is on the tape row).
    pub log_body_bytes: usize,
    /// The permits behind `concurrency`, shared by every clone of this policy.
    pub gate: Gate,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            allowed: Vec::new(),
            attempts: limits::DELIVERY_ATTEMPTS,
            backoff: limits::DELIVERY_BACKOFF,
            timeout: limits::DELIVERY_TIMEOUT,
            max_endpoints: limits::DELIVERY_ENDPOINTS,
            max_in_flight: limits::DELIVERIES_IN_FLIGHT,
            concurrency: limits::DELIVERY_ATTEMPTS_AT_ONCE,
            log_entries: limits::DELIVERY_LOG_ENTRIES,
            log_bytes: limits::DELIVERY_LOG_BYTES,
            log_body_bytes: limits::DELIVERY_LOG_BODY_BYTES,
            gate: Gate::default(),
        }
    }
}

/// What every delivery of a policy shares: the attempt permits, made on first use with the
/// policy's `concurrency`, and one client for receivers named by IP address.
#[derive(Clone, Default)]
pub struct Gate(Arc<OnceLock<Shared>>);

struct Shared {
    permits: tokio::sync::Semaphore,
    direct: reqwest::Client,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Gate")
    }
}

impl Policy {
    fn shared(&self) -> &Shared {
        self.gate.0.get_or_init(|| Shared { permits: tokio::sync::Semaphore::new(self.concurrency.max(1)), direct: client(self, None) })
    }
}

/// A client that goes only where it is told: no proxy from the environment, no redirects,
/// and a host name pinned to the addresses checked for it.
fn client(policy: &Policy, pin: Option<&(String, Vec<SocketAddr>)>) -> reqwest::Client {
    let mut b = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(policy.timeout)
        .timeout(policy.timeout)
        // No idle connections kept: deliveries are rare, and a tenant's endpoints must not
        // hold the host's sockets open between them.
        .pool_max_idle_per_host(0);
    if let Some((host, addrs)) = pin {
        b = b.resolve_to_addrs(host, addrs);
    }
    // A name that is not pinned is not looked up at all, so nothing reaches an unchecked address.
    b = b.dns_resolver(Arc::new(NoLookups));
    // Building fails only when the TLS backend cannot load; a client with no options then.
    b.build().unwrap_or_else(|e| {
        tracing::error!(error = %e, "building the webhook client failed");
        reqwest::Client::new()
    })
}

/// The resolver behind the pins: it resolves nothing.
struct NoLookups;

impl reqwest::dns::Resolve for NoLookups {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let name = name.as_str().to_string();
        Box::pin(async move {
            let e: Box<dyn std::error::Error + Send + Sync> = format!("`{name}` was not checked for delivery").into();
            Err::<reqwest::dns::Addrs, _>(e)
        })
    }
}

/// A twin store's delivery log and its caps, shared between the store, its delivery tasks
/// and readers. Its bytes count in the runtime's held memory (the server's memory budget).
pub type Log = Arc<Deliveries>;

pub struct Deliveries {
    entries: Mutex<Vec<DeliveryLog>>,
    counts: Mutex<Counts>,
    held: Arc<Held>,
    /// Where delivery tasks run: the hand-off happens on the journal's thread.
    tasks: tokio::runtime::Handle,
}

#[derive(Default)]
struct Counts {
    /// Every endpoint URL this store was asked to deliver to, allowed or not.
    endpoints: BTreeSet<String>,
    in_flight: usize,
    /// The weight of `entries`, added to `held.tapes`.
    bytes: usize,
}

impl Deliveries {
    /// An empty log counting into `held`. Call within the runtime the deliveries run on.
    pub fn new(held: Arc<Held>) -> Log {
        Arc::new(Deliveries { entries: Mutex::default(), counts: Mutex::default(), held, tasks: tokio::runtime::Handle::current() })
    }

    /// The log's entries, oldest first, for reading.
    pub fn lock(&self) -> std::sync::LockResult<MutexGuard<'_, Vec<DeliveryLog>>> {
        self.entries.lock()
    }

    /// The bytes the log holds (also in the runtime's held memory).
    pub fn bytes(&self) -> usize {
        self.counts.lock().unwrap().bytes
    }

    /// Add an entry, dropping the oldest past the caps (the newest always stays).
    fn push(&self, policy: &Policy, entry: DeliveryLog) {
        let mut entries = self.entries.lock().unwrap();
        let mut counts = self.counts.lock().unwrap();
        let w = weight(&entry);
        counts.bytes += w;
        self.held.tapes.fetch_add(w, Relaxed);
        entries.push(entry);
        let mut drop = 0;
        let mut freed = 0;
        while entries.len() - drop > 1 && (entries.len() - drop > policy.log_entries || counts.bytes - freed > policy.log_bytes) {
            freed += weight(&entries[drop]);
            drop += 1;
        }
        entries.drain(..drop);
        counts.bytes -= freed;
        self.held.tapes.fetch_sub(freed, Relaxed);
    }

    /// Change the entry `id` (if still kept), keeping the byte count right.
    fn update(&self, id: &str, f: impl FnOnce(&mut DeliveryLog)) {
        let mut entries = self.entries.lock().unwrap();
        let Some(e) = entries.iter_mut().rev().find(|e| e.id == id) else { return };
        let before = weight(e);
        f(e);
        let after = weight(e);
        let mut counts = self.counts.lock().unwrap();
        counts.bytes = counts.bytes + after - before;
        self.held.tapes.fetch_add(after, Relaxed);
        self.held.tapes.fetch_sub(before, Relaxed);
    }

    /// Admit a delivery to `url` under the store's caps (counted in flight until the guard
    /// drops), or say why not.
    fn admit(self: &Arc<Self>, policy: &Policy, url: &str) -> Result<InFlight, String> {
        let mut c = self.counts.lock().unwrap();
        if c.in_flight >= policy.max_in_flight {
            return Err(format!(
                "refused: this twin already has {} deliveries pending or retrying, the host's cap; this one was not sent",
                policy.max_in_flight
            ));
        }
        if !c.endpoints.contains(url) {
            if c.endpoints.len() >= policy.max_endpoints {
                return Err(format!(
                    "refused: this twin has already delivered to {} endpoint URLs, the host's cap; deliveries to a new one are not sent",
                    policy.max_endpoints
                ));
            }
            c.endpoints.insert(url.to_string());
        }
        c.in_flight += 1;
        Ok(InFlight(self.clone()))
    }
}

impl Drop for Deliveries {
    fn drop(&mut self) {
        self.held.tapes.fetch_sub(self.counts.get_mut().map_or(0, |c| c.bytes), Relaxed);
    }
}

/// One admitted delivery, counted in flight until its task ends (or is dropped unstarted).
struct InFlight(Log);

impl std::fmt::Debug for InFlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InFlight")
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.counts.lock().unwrap().in_flight -= 1;
    }
}

/// What an entry costs to hold: its text, and a little per attempt.
fn weight(e: &DeliveryLog) -> usize {
    const ATTEMPT: usize = 64;
    let pairs: usize = e.request_headers.iter().map(|(k, v)| k.len() + v.len()).sum();
    e.id.len() + e.event.len() + e.method.len() + e.url.len() + pairs + e.request_body.len() + e.state.len()
        + e.attempts.iter().map(|a| ATTEMPT + a.at.len() + a.error.as_ref().map_or(0, String::len)).sum::<usize>()
}

/// What the store hands over for each delivery.
pub struct Outgoing {
    pub seq: u64,
    pub index: usize,
    pub delivery: pome_contract::Delivery,
}

/// Start sending every delivery `row` asked for (call once the row is durable).
pub fn send_row(policy: &Arc<Policy>, log: &Log, row: &TapeRow) {
    for (index, d) in row.deliveries.iter().enumerate() {
        send(policy.clone(), log.clone(), Outgoing { seq: row.seq, index, delivery: d.clone() });
    }
}

/// Start sending `out` in the background, logging into `log`.
pub fn send(policy: Arc<Policy>, log: Log, out: Outgoing) {
    let id = format!("{}.{}", out.seq, out.index + 1);
    let d = out.delivery;
    let mut body = Body::from_text(&d.body);
    if body.len() > policy.log_body_bytes {
        body = Body(body.0.slice(..text_boundary(&body.0, policy.log_body_bytes)));
    }
    let admitted = log.admit(&policy, &d.url);
    log.push(
        &policy,
        DeliveryLog {
            id: id.clone(),
            seq: out.seq,
            event: d.event.clone(),
            method: d.method.clone(),
            url: d.url.clone(),
            request_headers: d.headers.clone(),
            request_body: body,
            state: if admitted.is_ok() { "pending" } else { "refused" }.into(),
            attempts: match &admitted {
                Ok(_) => Vec::new(),
                Err(why) => vec![Attempt { attempt: 0, at: now(), status: None, error: Some(why.clone()) }],
            },
        },
    );
    let counted = match admitted {
        Ok(counted) => counted,
        Err(why) => {
            tracing::info!(delivery = %id, url = %d.url, reason = %why, "webhook delivery refused");
            return;
        }
    };
    log.tasks.spawn(async move {
        deliver(&policy, &counted.0, &id, &d).await;
        drop(counted);
    });
}

/// The longest prefix of `b` no longer than `max` that does not cut a UTF-8 character (any
/// prefix, for bytes that are not text).
fn text_boundary(b: &[u8], max: usize) -> usize {
    match std::str::from_utf8(b) {
        Ok(s) => (0..=max).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0),
        Err(_) => max,
    }
}

async fn deliver(policy: &Policy, log: &Deliveries, id: &str, d: &pome_contract::Delivery) {
    let target = {
        let _permit = policy.shared().permits.acquire().await;
        resolve(policy, &d.url).await
    };
    let target = match target {
        Ok(t) => t,
        Err(why) => {
            tracing::info!(delivery = %id, url = %d.url, reason = %why.detail, "webhook delivery refused");
            let at = now();
            log.update(id, |e| {
                e.state = "refused".into();
                e.attempts.push(Attempt { attempt: 0, at, status: None, error: Some(why.shown) });
            });
            return;
        }
    };
    let Ok(method) = reqwest::Method::from_bytes(d.method.as_bytes()) else {
        let at = now();
        let error = format!("refused: `{}` is not an HTTP method", d.method);
        log.update(id, |e| {
            e.state = "refused".into();
            e.attempts.push(Attempt { attempt: 0, at, status: None, error: Some(error) });
        });
        return;
    };
    // One client per delivery pinned to its checked addresses, reused by its retries; the
    // shared one for receivers named by address.
    let pinned = target.pin.as_ref().map(|p| client(policy, Some(p)));
    let http = pinned.as_ref().unwrap_or(&policy.shared().direct);
    let mut wait = policy.backoff;
    for attempt in 1..=policy.attempts {
        let result = {
            let _permit = policy.shared().permits.acquire().await;
            let mut req = http.request(method.clone(), target.url.clone()).body(Body::from_text(&d.body).0);
            for (k, v) in &d.headers {
                req = req.header(k, v);
            }
            req.send().await.map(|r| r.status().as_u16())
        };
        let (status, error) = match result {
            Ok(s) if (200..300).contains(&s) => (Some(s), None),
            Ok(s) => (Some(s), Some(format!("the receiver answered {s}"))),
            Err(e) => {
                let outcome = coarse(&e);
                tracing::info!(delivery = %id, url = %d.url, attempt, error = %e, outcome, "webhook delivery attempt failed");
                (None, Some(outcome.to_string()))
            }
        };
        let done = error.is_none();
        let at = now();
        let last = attempt == policy.attempts;
        log.update(id, |e| {
            e.attempts.push(Attempt { attempt, at, status, error });
            if done {
                e.state = "delivered".into();
            } else if last {
                e.state = "failed".into();
            }
        });
        if done || last {
            return;
        }
        tokio::time::sleep(wait).await;
        wait *= 2;
    }
}

/// What the log may say of a failed attempt: `timeout` when a connection was made and no
/// answer came in time, else `unreachable` (refused, reset, no route and filtered alike).
fn coarse(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() && !e.is_connect() { "timeout" } else { "unreachable" }
}

/// Where a checked delivery goes: the URL, and for a host name the addresses checked for it.
struct Target {
    url: reqwest::Url,
    pin: Option<(String, Vec<SocketAddr>)>,
}

/// Why a destination was refused: what the log shows (the same whatever the cause), and
/// what the operator's log gets.
#[derive(Debug)]
struct Refusal {
    shown: String,
    detail: String,
}

async fn resolve(policy: &Policy, url: &str) -> Result<Target, Refusal> {
    let parsed = reqwest::Url::parse(url).map_err(|e| Refusal { shown: format!("refused: `{url}` is not a URL: {e}"), detail: e.to_string() })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        let shown = format!("refused: `{url}`: only http and https deliveries are sent");
        return Err(Refusal { detail: shown.clone(), shown });
    }
    let refuse = |host: &str, detail: String| Refusal {
        shown: format!("refused: `{host}` is not an allowed delivery destination; the operator allows one with `pome serve --deliver-to`"),
        detail,
    };
    let port = parsed.port_or_known_default().unwrap_or(80);
    // The URL parser writes every IPv4 spelling (`0x7f.1`, `2130706433`) as dotted decimal
    // and an IPv6 address in brackets; anything else is a name.
    let host = parsed.host_str().ok_or_else(|| refuse(url, "no host".into()))?;
    if let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        check_address(policy, ip, false).map_err(|d| refuse(host, d))?;
        return Ok(Target { url: parsed.clone(), pin: None });
    }
    // Pinned as the URL spells it (a pin is looked up by that spelling), named without a
    // trailing dot.
    let host = host.to_string();
    let name = host.trim_end_matches('.');
    let by_name = policy.allowed.iter().any(|d| matches!(d, Destination::Host(h) if h == name));
    if !by_name && !policy.allowed.iter().any(|d| matches!(d, Destination::Net(..))) {
        // Nothing a name could resolve to is allowed: no lookup at all.
        return Err(refuse(&host, "no network is allowed and the host name is not named".into()));
    }
    let lookup = tokio::time::timeout(policy.timeout, tokio::net::lookup_host((host.clone(), port))).await;
    let addrs: Vec<SocketAddr> = match lookup {
        Ok(Ok(found)) => found.collect(),
        Ok(Err(e)) => return Err(refuse(&host, format!("does not resolve: {e}"))),
        Err(_) => return Err(refuse(&host, "the lookup timed out".into())),
    };
    if addrs.is_empty() {
        return Err(refuse(&host, "resolves to no address".into()));
    }
    for a in &addrs {
        check_address(policy, a.ip(), by_name).map_err(|d| refuse(&host, format!("resolves to {}: {d}", a.ip())))?;
    }
    Ok(Target { url: parsed, pin: Some((host, addrs)) })
}

/// Whether a delivery may connect to `ip`; `by_name` when it came from a host name the
/// operator named, which allows any address but the guarded ones.
fn check_address(policy: &Policy, ip: IpAddr, by_name: bool) -> Result<(), String> {
    let ip = canonical(ip);
    if never(ip) {
        return Err(format!("{ip} is never a delivery destination"));
    }
    if let Some((net, bits)) = guarded(ip) {
        return if policy.allowed.iter().any(|d| d.contains(ip) && d.within(net, bits)) {
            Ok(())
        } else {
            Err(format!("{ip} is allowed only by a --deliver-to entry within {net}/{bits}"))
        };
    }
    if by_name || policy.allowed.iter().any(|d| d.contains(ip)) { Ok(()) } else { Err(format!("{ip} is in no allowed network")) }
}

fn now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allowed: &[&str]) -> Policy {
        Policy { allowed: allowed.iter().map(|s| s.parse().unwrap()).collect(), ..Policy::default() }
    }

    fn allows(p: &Policy, ip: &str) -> bool {
        check_address(p, ip.parse().unwrap(), false).is_ok()
    }

    #[test]
    fn destinations_parse_as_networks_addresses_or_host_names() {
        let lo: Destination = "127.0.0.0/8".parse().unwrap();
        assert!(lo.contains("127.1.2.3".parse().unwrap()) && !lo.contains("10.0.0.1".parse().unwrap()));
        let one: Destination = "192.168.1.7".parse().unwrap();
        assert!(one.contains("192.168.1.7".parse().unwrap()) && !one.contains("192.168.1.8".parse().unwrap()));
        assert_eq!("Hooks.Example.com".parse::<Destination>().unwrap(), Destination::Host("hooks.example.com".into()));
        assert_eq!("[::1]".parse::<Destination>().unwrap(), Destination::Net(Ipv6Addr::LOCALHOST.into(), 128));
        assert_eq!("::ffff:10.0.0.0/104".parse::<Destination>().unwrap(), "10.0.0.0/8".parse().unwrap(), "a mapped network is the IPv4 one");
        assert!("10.0.0.0/33".parse::<Destination>().is_err());
        assert!("a b".parse::<Destination>().is_err());
    }

    /// Found by the property tests (#32, item 8): `--deliver-to ::169.254.169.254` allowed
    /// nothing, since the address it names is checked as 169.254.169.254.
    #[test]
    fn regression_32_an_exact_ipv4_compatible_entry_names_its_ipv4_address() {
        assert_eq!("::169.254.169.254".parse::<Destination>().unwrap(), "169.254.169.254".parse().unwrap());
        assert_eq!("::10.0.0.1/128".parse::<Destination>().unwrap(), "10.0.0.1/32".parse().unwrap());
        assert!(allows(&policy(&["::169.254.169.254"]), "169.254.169.254"));
        assert_eq!("::1".parse::<Destination>().unwrap(), Destination::Net(Ipv6Addr::LOCALHOST.into(), 128), "IPv6 loopback is not a compatible address");
        assert_eq!("::/96".parse::<Destination>().unwrap(), Destination::Net(Ipv6Addr::UNSPECIFIED.into(), 96), "a network stays as written");
    }

    #[test]
    fn nothing_is_allowed_by_default() {
        let p = Policy::default();
        for ip in ["127.0.0.1", "10.1.2.3", "8.8.8.8", "::1", "2001:db8::1"] {
            assert!(!allows(&p, ip), "{ip}");
        }
    }

    #[test]
    fn an_address_inside_a_named_network_is_allowed_and_one_outside_is_not() {
        let p = policy(&["10.0.0.0/8", "2001:db8::/32"]);
        assert!(allows(&p, "10.200.0.1") && allows(&p, "2001:db8::7"));
        assert!(!allows(&p, "11.0.0.1") && !allows(&p, "2001:db9::7"));
    }

    #[test]
    fn ipv4_mapped_and_compatible_ipv6_addresses_are_checked_as_their_ipv4_address() {
        assert_eq!(canonical("::ffff:127.0.0.1".parse().unwrap()), "127.0.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(canonical("::ffff:7f00:1".parse().unwrap()), "127.0.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(canonical("::127.0.0.1".parse().unwrap()), "127.0.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(canonical("::1".parse().unwrap()), "::1".parse::<IpAddr>().unwrap(), "IPv6 loopback stays itself");
        let p = policy(&["10.0.0.0/8", "::/0"]);
        assert!(!allows(&p, "::ffff:127.0.0.1") && !allows(&p, "::127.0.0.1"), "loopback behind IPv6 is still loopback");
        assert!(!allows(&p, "::ffff:169.254.169.254"));
        assert!(allows(&p, "::ffff:10.1.1.1"), "and an allowed IPv4 address behind IPv6 is allowed");
    }

    #[test]
    fn loopback_link_local_and_metadata_addresses_are_refused_under_a_wide_network() {
        let p = policy(&["0.0.0.0/0", "::/0"]);
        assert!(allows(&p, "8.8.8.8") && allows(&p, "10.0.0.1") && allows(&p, "2001:db8::1"));
        for ip in ["127.0.0.1", "127.9.9.9", "::1", "169.254.1.1", "fe80::1", "169.254.169.254", "100.100.100.200", "fd00:ec2::254"] {
            assert!(!allows(&p, ip), "{ip} must need an exact entry");
        }
        let p = policy(&["169.254.0.0/15", "100.64.0.0/10", "fd00::/8"]);
        assert!(!allows(&p, "169.254.1.1"), "a network wider than link-local does not allow it");
        assert!(!allows(&p, "100.100.100.200") && !allows(&p, "fd00:ec2::254"), "nor does one around a metadata address");
        assert!(allows(&p, "100.100.100.201"), "its neighbours are ordinary addresses");
    }

    #[test]
    fn loopback_link_local_and_metadata_addresses_are_allowed_when_named_exactly() {
        let p = policy(&["127.0.0.1/32", "169.254.10.0/24", "169.254.169.254", "fd00:ec2::254", "::1"]);
        assert!(allows(&p, "127.0.0.1") && allows(&p, "::ffff:127.0.0.1") && allows(&p, "::1"));
        assert!(!allows(&p, "127.0.0.2"), "only the address named");
        assert!(allows(&p, "169.254.10.9") && !allows(&p, "169.254.11.9"));
        assert!(allows(&p, "169.254.169.254") && allows(&p, "fd00:ec2::254"));
        let p = policy(&["169.254.0.0/16"]);
        assert!(allows(&p, "169.254.1.1") && !allows(&p, "169.254.169.254"), "metadata needs its own address named");
    }

    #[test]
    fn the_unspecified_addresses_are_never_allowed() {
        let p = policy(&["0.0.0.0/0", "::/0", "0.0.0.0", "::"]);
        for ip in ["0.0.0.0", "0.1.2.3", "::", "::ffff:0.0.0.0"] {
            assert!(!allows(&p, ip), "{ip}");
        }
    }

    #[test]
    fn a_named_host_name_allows_its_ordinary_addresses_but_not_guarded_ones() {
        let p = policy(&["hooks.example.com"]);
        assert!(check_address(&p, "203.0.113.9".parse().unwrap(), true).is_ok());
        assert!(check_address(&p, "203.0.113.9".parse().unwrap(), false).is_err(), "the address alone is not allowed");
        for ip in ["127.0.0.1", "::ffff:127.0.0.1", "169.254.169.254", "0.0.0.0", "fe80::1"] {
            assert!(check_address(&p, ip.parse().unwrap(), true).is_err(), "{ip}");
        }
    }

    fn entry(id: &str, body: usize) -> DeliveryLog {
        DeliveryLog {
            id: id.into(),
            seq: 1,
            event: "e".into(),
            method: "POST".into(),
            url: "http://10.0.0.1/h".into(),
            request_headers: vec![],
            request_body: Body(vec![b'x'; body].into()),
            state: "pending".into(),
            attempts: vec![],
        }
    }

    #[tokio::test]
    async fn the_log_keeps_its_newest_entries_within_its_caps_and_counts_its_bytes_as_held() {
        let held = Arc::new(Held::default());
        let p = Policy { log_entries: 3, log_bytes: 10_000, ..Policy::default() };
        let log = Deliveries::new(held.clone());
        for i in 1..=5 {
            log.push(&p, entry(&i.to_string(), 100));
        }
        let ids: Vec<String> = log.lock().unwrap().iter().map(|e| e.id.clone()).collect();
        assert_eq!(ids, ["3", "4", "5"], "the newest entries, up to the count");
        assert_eq!(log.bytes(), log.lock().unwrap().iter().map(weight).sum::<usize>());
        assert_eq!(held.tapes.load(Relaxed), log.bytes(), "what the log holds is in the memory budget");

        log.update("5", |e| e.attempts.push(Attempt { attempt: 1, at: now(), status: Some(200), error: None }));
        assert_eq!(held.tapes.load(Relaxed), log.lock().unwrap().iter().map(weight).sum::<usize>(), "and stays right as attempts are added");

        log.push(&p, entry("big", 9_900));
        let ids: Vec<String> = log.lock().unwrap().iter().map(|e| e.id.clone()).collect();
        assert_eq!(ids, ["big"], "older entries leave to keep the bytes under the cap");
        drop(log);
        assert_eq!(held.tapes.load(Relaxed), 0, "a dropped log gives its bytes back");
    }

    #[tokio::test]
    async fn a_store_admits_deliveries_up_to_its_caps_and_counts_them_until_they_end() {
        let p = Policy { max_endpoints: 2, max_in_flight: 2, ..Policy::default() };
        let log = Deliveries::new(Arc::default());
        let a = log.admit(&p, "http://h/a").unwrap();
        let b = log.admit(&p, "http://h/b").unwrap();
        assert!(log.admit(&p, "http://h/a").unwrap_err().contains("2 deliveries pending or retrying"));
        drop(a);
        assert!(log.admit(&p, "http://h/c").unwrap_err().contains("2 endpoint URLs"), "a third endpoint");
        let again = log.admit(&p, "http://h/a").unwrap();
        drop((b, again));
        assert_eq!(log.counts.lock().unwrap().in_flight, 0);
    }

    #[test]
    fn a_long_body_is_cut_at_a_character_boundary_for_the_log() {
        assert_eq!(text_boundary("aé".as_bytes(), 2), 1, "not inside é");
        assert_eq!(text_boundary(b"abc", 2), 2);
        assert_eq!(text_boundary(&[0xff, 0xfe, 0xfd], 2), 2, "bytes that are not text are cut anywhere");
    }

    #[tokio::test]
    async fn a_host_name_resolving_to_loopback_is_refused_even_when_named() {
        for allowed in [&["localhost"][..], &["10.0.0.0/8"], &["0.0.0.0/0", "::/0"]] {
            let err = resolve(&policy(allowed), "http://localhost:9/hook").await.err().unwrap();
            assert!(err.shown.contains("--deliver-to") && err.shown.contains("`localhost`"), "{err:?}");
            assert!(!err.shown.contains("127.0.0.1"), "what it resolves to is the operator's to read: {err:?}");
        }
        let named = policy(&["localhost", "127.0.0.1/32", "::1"]);
        assert!(resolve(&named, "http://localhost:9/hook").await.is_ok(), "loopback named as addresses allows it");
    }

    #[tokio::test]
    async fn a_refused_destination_reads_the_same_whether_or_not_it_resolves() {
        let p = policy(&["10.0.0.0/8"]);
        let resolves = resolve(&p, "http://localhost/hook").await.err().unwrap();
        let does_not = resolve(&p, "http://nowhere.invalid/hook").await.err().unwrap();
        assert_eq!(resolves.shown.replace("localhost", "X"), does_not.shown.replace("nowhere.invalid", "X"));
    }

    #[tokio::test]
    async fn a_destination_outside_the_allowed_ones_is_refused_before_any_connection() {
        let p = policy(&["127.0.0.1/32"]);
        let err = resolve(&p, "http://10.1.2.3:9/hook").await.err().unwrap();
        assert!(err.shown.contains("not an allowed delivery destination") && err.shown.contains("--deliver-to"), "{err:?}");
        assert!(resolve(&p, "http://127.0.0.1:9/hook").await.is_ok());
        assert!(resolve(&p, "http://[::ffff:7f00:1]:9/hook").await.is_ok(), "the mapped form of an allowed address");
        assert!(resolve(&p, "http://0x7f.1:9/hook").await.is_ok(), "URL parsing reads other IPv4 spellings as the address");
        assert!(resolve(&p, "ftp://127.0.0.1/x").await.is_err());
    }

    /// Properties over arbitrary addresses, URL spellings and `--deliver-to` lists (issue #32,
    /// item 8): the decision depends on the address a connection reaches, never on how the
    /// URL or the entry spells it, and the guarded ranges need an entry naming them.
    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// One `--deliver-to` entry as an operator might write it: networks of any width in
        /// either family (`0.0.0.0/0` included), exact guarded addresses, mapped forms, names.
        fn entry() -> impl Strategy<Value = String> {
            prop_oneof![
                (any::<u32>(), 0u8..=32).prop_map(|(a, b)| format!("{}/{b}", Ipv4Addr::from(a))),
                (any::<u128>(), 0u8..=128).prop_map(|(a, b)| format!("{}/{b}", Ipv6Addr::from(a))),
                any::<u32>().prop_map(|a| Ipv4Addr::from(a).to_string()),
                (any::<u32>(), 96u8..=128).prop_map(|(a, b)| format!("::ffff:{}/{b}", Ipv4Addr::from(a))),
                prop::sample::select(vec![
                    "0.0.0.0/0", "::/0", "127.0.0.0/8", "127.0.0.0/7", "169.254.0.0/16", "169.254.0.0/15", "fe80::/10", "fe80::/9",
                    "fc00::/7", "100.64.0.0/10", "169.254.169.254", "::1", "::/96", "::ffff:0:0/96", "hooks.example.com",
                ])
                .prop_map(String::from),
            ]
        }

        fn policy_of(entries: &[String]) -> Policy {
            Policy { allowed: entries.iter().map(|s| s.parse().unwrap()).collect(), ..Policy::default() }
        }

        /// An address in one of the guarded or never-allowed ranges, with the prefix an entry
        /// must have at least to name it (`None`: nothing names it).
        fn guarded_address() -> impl Strategy<Value = (IpAddr, Option<u8>)> {
            prop_oneof![
                any::<u32>().prop_map(|r| (IpAddr::V4(Ipv4Addr::from(0x7f00_0000 | (r & 0x00ff_ffff))), Some(8))),
                any::<u16>().prop_map(|r| (IpAddr::V4(Ipv4Addr::from(0xa9fe_0000 | u32::from(r))), Some(16))),
                any::<u128>().prop_map(|r| (IpAddr::V6(Ipv6Addr::from((0xfe80u128 << 112) | (r >> 10))), Some(10))),
                Just((IpAddr::V6(Ipv6Addr::LOCALHOST), Some(128))),
                prop::sample::select(vec!["169.254.169.254", "100.100.100.200", "fd00:ec2::254"]).prop_map(|s| {
                    let ip: IpAddr = s.parse().unwrap();
                    (ip, Some(if ip.is_ipv4() { 32 } else { 128 }))
                }),
                any::<u32>().prop_map(|r| (IpAddr::V4(Ipv4Addr::from(r & 0x00ff_ffff)), None)),
                Just((IpAddr::V6(Ipv6Addr::UNSPECIFIED), None)),
            ]
        }

        /// Every way an IPv6 address can carry `v4`: itself, mapped, and compatible (which
        /// `::` and `::1` are not: they are IPv6's own).
        fn forms(v4: Ipv4Addr) -> Vec<IpAddr> {
            let mut f = vec![IpAddr::V4(v4), IpAddr::V6(v4.to_ipv6_mapped())];
            if u32::from(v4) > 1 {
                f.push(IpAddr::V6(v4.to_ipv6_compatible()));
            }
            f
        }

        /// Whether `entry`, as written, names `ip` within a guarded range of prefix `min`: the
        /// entry's network contains the address and is no wider than the range. Written from
        /// the entry's text, independently of `Destination`.
        fn names(entry: &str, ip: IpAddr, min: u8) -> bool {
            let (addr, bits) = entry.split_once('/').unwrap_or((entry, ""));
            let Ok(net) = addr.parse::<IpAddr>() else { return false };
            let (net, bits) = match net {
                IpAddr::V4(_) => (net, bits.parse().unwrap_or(32u8)),
                IpAddr::V6(v6) => {
                    let bits = bits.parse().unwrap_or(128u8);
                    match v6.to_ipv4_mapped() {
                        Some(v4) if bits >= 96 => (IpAddr::V4(v4), bits - 96),
                        _ if bits == 128 => (canonical(net), if canonical(net).is_ipv4() { 32 } else { 128 }),
                        _ => (net, bits),
                    }
                }
            };
            bits >= min && in_net(net, bits, ip)
        }

        /// URL spellings of an IPv4 address a browser-grade parser reads as that address.
        fn spellings(a: Ipv4Addr) -> Vec<String> {
            let [o0, o1, o2, o3] = a.octets();
            let n = u32::from(a);
            let dotted = a.to_string();
            let mut s = vec![
                dotted.clone(),
                n.to_string(),
                format!("0x{n:x}"),
                format!("0X{n:X}"),
                format!("0{n:o}"),
                format!("0x{o0:x}.0x{o1:x}.0x{o2:x}.0x{o3:x}"),
                format!("0{o0:o}.0{o1:o}.0{o2:o}.0{o3:o}"),
                format!("{o0}.{o1}.{}", (u32::from(o2) << 8) | u32::from(o3)),
                format!("{o0}.{}", n & 0x00ff_ffff),
                format!("0x{o0:x}.{}", n & 0x00ff_ffff),
                format!("{dotted}."),
                dotted.bytes().map(|b| format!("%{b:02X}")).collect(),
                format!("user:pass@{dotted}"),
                format!("hooks.example.com@{dotted}"),
                format!("{dotted}:8080"),
                format!("{dotted}.:1"),
                format!("[::ffff:{dotted}]"),
                format!("[::FFFF:{:x}:{:x}]:9", n >> 16, n & 0xffff),
            ];
            if n > 1 {
                s.push(format!("[::{dotted}]"));
            }
            s
        }

        fn block_on<F: std::future::Future>(f: F) -> F::Output {
            tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
        }

        proptest! {
            #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(256) })]

            #[test]
            fn an_ipv4_address_and_its_mapped_and_compatible_forms_get_one_decision(
                a in any::<u32>(), entries in prop::collection::vec(entry(), 0..6),
            ) {
                let p = policy_of(&entries);
                let v4 = Ipv4Addr::from(a);
                let want = check_address(&p, IpAddr::V4(v4), false).is_ok();
                for ip in forms(v4) {
                    prop_assert_eq!(canonical(ip), IpAddr::V4(v4));
                    prop_assert_eq!(check_address(&p, ip, false).is_ok(), want, "{} under {:?}", ip, entries);
                    prop_assert_eq!(check_address(&p, ip, true).is_ok(), check_address(&p, IpAddr::V4(v4), true).is_ok());
                }
            }

            #[test]
            fn a_guarded_address_is_allowed_only_when_an_entry_names_it_and_never_for_the_unspecified(
                (ip, min) in guarded_address(), entries in prop::collection::vec(entry(), 0..6), by_name in any::<bool>(),
            ) {
                let p = policy_of(&entries);
                let all: Vec<IpAddr> = match ip { IpAddr::V4(v4) => forms(v4), IpAddr::V6(_) => vec![ip] };
                for form in all {
                    let allowed = check_address(&p, form, by_name).is_ok();
                    let named = min.is_some_and(|min| entries.iter().any(|e| names(e, ip, min)));
                    prop_assert_eq!(allowed, named, "{} under {:?} (by name: {})", form, entries, by_name);
                }
            }

            #[test]
            fn a_guarded_address_named_exactly_in_any_spelling_is_allowed(
                (ip, min) in guarded_address(), wide in prop::collection::vec(entry(), 0..4), spelling in 0usize..5,
            ) {
                let exact = match (ip, spelling) {
                    (IpAddr::V4(v4), 1) => format!("{v4}/32"),
                    (IpAddr::V4(v4), 2) => format!("::ffff:{v4}"),
                    (IpAddr::V4(v4), 3) => format!("[::ffff:{v4}]"),
                    (IpAddr::V4(v4), 4) if u32::from(v4) > 1 => format!("::{v4}"),
                    (IpAddr::V6(v6), 1) => format!("{v6}/128"),
                    (IpAddr::V6(v6), 3) => format!("[{v6}]"),
                    _ => ip.to_string(),
                };
                let mut entries = wide.clone();
                entries.push(exact.clone());
                let p = policy_of(&entries);
                prop_assert_eq!(check_address(&p, ip, false).is_ok(), min.is_some(), "{} named as `{}`", ip, exact);
            }

            #[test]
            fn every_url_spelling_of_an_ipv4_address_is_read_as_that_address_and_decided_alike(
                a in any::<u32>(), entries in prop::collection::vec(entry(), 0..6), scheme in prop::sample::select(vec!["http", "HTTPS", "hTTp"]),
            ) {
                let p = policy_of(&entries);
                let v4 = Ipv4Addr::from(a);
                let want = check_address(&p, IpAddr::V4(v4), false).is_ok();
                for host in spellings(v4) {
                    let url = format!("{scheme}://{host}/hook?x=1");
                    // Read as an address, so no name is ever looked up for it.
                    let parsed = reqwest::Url::parse(&url).map_err(|e| TestCaseError::fail(format!("{url}: {e}")))?;
                    let reached = match parsed.host() {
                        Some(url::Host::Ipv4(v)) => IpAddr::V4(v),
                        Some(url::Host::Ipv6(v)) => IpAddr::V6(v),
                        other => return Err(TestCaseError::fail(format!("{url} read as {other:?}"))),
                    };
                    prop_assert_eq!(canonical(reached), IpAddr::V4(v4), "{}", url);
                    let got = block_on(resolve(&p, &url));
                    prop_assert_eq!(got.is_ok(), want, "{} under {:?}: {:?}", url, entries, got.as_ref().err());
                    if let Ok(t) = got {
                        prop_assert!(t.pin.is_none(), "an address is connected to as itself");
                        prop_assert_eq!(t.url, parsed, "the request goes to the URL checked");
                    }
                }
            }

            #[test]
            fn any_text_as_an_entry_or_a_url_is_refused_or_read_without_a_panic(
                entry_text in ".{0,40}|[0-9a-fA-FxX:./\\[\\]%]{0,40}",
                url_text in "(https?|ftp|file|HTTP)?(://)?[0-9a-zA-Z:./@%\\[\\]\\\\?#-]{0,50}|.{0,60}",
            ) {
                let _ = entry_text.parse::<Destination>();
                // Only exact names: any other host name is refused before a lookup.
                let p = policy_of(&["hooks.example.com".to_string()]);
                if let Ok(t) = block_on(resolve(&p, &url_text)) {
                    prop_assert!(t.pin.is_some(), "only the named host could be allowed, got {}", t.url);
                }
            }
        }
    }
}
