//! Client connections: accept, serve with hyper, and keep what a client can hold bounded.
//!
//! - **A cap on connections** (`--max-connections`). Each connection holds a permit until it
//!   closes. At the cap, a new client takes the place of the connection that has been idle
//!   longest (no request in flight and no answer still streaming) or, failing that, of one
//!   whose every request is still waiting for its body: ten thousand idle connections, or
//!   clients that connect and trickle, cannot lock out the next one. When every connection
//!   is doing work, a new client waits for a place in a task of its own (a bounded number of
//!   them; past that it is told 503 at once): the accept loop itself never waits.
//! - **A header timeout** (`--header-timeout`): hyper closes an HTTP/1 connection whose
//!   request headers have not all arrived in time, counted from when it is ready for a
//!   request, so a slowloris client or an idle keep-alive connection holds its permit no
//!   longer than that. HTTP/2 connections get the same limit as an idle timer (no stream in
//!   flight for that long closes them), keep-alive pings, and at most `--h2-streams`
//!   requests in flight each.
//! - **A body timeout** (`--body-timeout`): a request whose body has not all arrived within
//!   it, from its headers, fails, so a trickled body holds its request no longer.
//! - **Graceful shutdown**: on stop, connections finish the request they are serving and
//!   close; idle ones close at once.
//! - **TLS** (`--tls-cert`/`--tls-key`): the handshake runs in the connection's own task,
//!   holding its permit, and must finish within the header timeout; a client that has not
//!   finished it is idle to the cap (the first to go when a newcomer needs its place) and
//!   ends on a stop. Requests that came over TLS carry `x-forwarded-proto: https` (set here,
//!   whatever the client sent), so the URLs handed out name the scheme clients used.
//!
//! axum's own `serve` sets neither a timer (so no header timeout) nor a cap, hence this loop.

use std::collections::BTreeMap;
use std::future::Future as _;
use std::convert::Infallible;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http_body::{Frame, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use anyhow::Context as _;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore, watch};

/// How long a stop waits for connections to finish before it drops them.
const DRAIN: Duration = Duration::from_secs(10);
/// Clients past the connection cap that may wait for a place at once, each in its own task
/// holding only its socket; more are answered 503 and closed straight away.
const MAX_WAITING: usize = 1024;
/// How long a client past the cap waits for a place before it is answered 503.
const WAIT_FOR_PLACE: Duration = Duration::from_secs(5);

/// Client bounds the listener keeps (from [`pome_runtime::limits::Limits`]).
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    pub max_connections: usize,
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub h2_streams: u32,
}

impl From<&pome_runtime::limits::Limits> for ConnLimits {
    fn from(l: &pome_runtime::limits::Limits) -> ConnLimits {
        ConnLimits { max_connections: l.max_connections, header_timeout: l.header_timeout, body_timeout: l.body_timeout, h2_streams: l.h2_streams }
    }
}

/// One open connection, as the cap sees it.
struct Conn {
    /// Requests in flight, counted until their answer's body is sent.
    busy: AtomicUsize,
    /// Of those, the ones whose request body has not all arrived.
    reading: AtomicUsize,
    /// When the last request's answer finished, in milliseconds after `opened`.
    last_done_ms: std::sync::atomic::AtomicU64,
    opened: tokio::time::Instant,
    /// Asks the connection to close if it is idle (or only waiting for bodies).
    evict: Notify,
}

impl Conn {
    /// Since when nothing has been in flight; `None` while something is.
    fn idle_since(&self) -> Option<tokio::time::Instant> {
        (self.busy.load(Ordering::Acquire) == 0).then(|| self.opened + Duration::from_millis(self.last_done_ms.load(Ordering::Acquire)))
    }

    /// Closing it would cost no work: nothing in flight, or only requests still waiting for
    /// their bodies (a trickling client).
    fn evictable(&self) -> bool {
        let busy = self.busy.load(Ordering::Acquire);
        busy == 0 || busy == self.reading.load(Ordering::Acquire)
    }
}

/// Open connections by age (ids grow), so the longest-idle is found first.
#[derive(Default)]
struct Conns {
    open: Mutex<BTreeMap<u64, Arc<Conn>>>,
}

impl Conns {
    /// Ask the oldest idle connection to close, else the oldest that only waits for request
    /// bodies; whether there was one.
    fn evict_one(&self) -> bool {
        let open = self.open.lock().unwrap();
        let idle = open.values().find(|c| c.busy.load(Ordering::Acquire) == 0);
        match idle.or_else(|| open.values().find(|c| c.evictable())) {
            Some(c) => {
                c.evict.notify_one();
                true
            }
            None => false,
        }
    }
}

/// A TLS server configuration (rustls's).
pub type TlsConfig = rustls::ServerConfig;

/// The server's certificate chain and key, read from PEM files, as a TLS configuration
/// offering HTTP/2 and HTTP/1.1 (ALPN) on rustls with the ring provider.
pub fn tls_config(cert: &std::path::Path, key: &std::path::Path) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    use rustls_pki_types::pem::PemObject as _;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .with_context(|| format!("reading the certificate chain (PEM) from {}", cert.display()))?;
    if chain.is_empty() {
        anyhow::bail!("{} holds no PEM certificate (`-----BEGIN CERTIFICATE-----`)", cert.display());
    }
    let key = PrivateKeyDer::from_pem_file(key).with_context(|| format!("reading the private key (PEM: PKCS#8, PKCS#1 or SEC1) from {}", key.display()))?;
    // ring has no post-quantum key exchange, hence rustls's deprecation; aws-lc-rs, which
    // has, needs cmake and a C toolchain to build.
    #[allow(deprecated)]
    let provider = rustls::crypto::ring::default_provider();
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(provider))
        .with_safe_default_protocol_versions()
        .context("choosing TLS versions")?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .with_context(|| format!("the key in the --tls-key file does not serve the certificate in {}", cert.display()))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// What answers a connection's requests: an axum `Router`, or the server's [`crate::server::Entry`].
pub trait Serve: tower_service::Service<Request, Response = Response, Error = Infallible, Future: Send + 'static> + Clone + Send + Sync + 'static {}
impl<S> Serve for S where S: tower_service::Service<Request, Response = Response, Error = Infallible, Future: Send + 'static> + Clone + Send + Sync + 'static {}

/// Serve `service` on `listener` until `stopped` turns true.
pub async fn serve(listener: TcpListener, service: impl Serve, limits: ConnLimits, stopped: watch::Receiver<bool>) {
    serve_with(listener, service, limits, None, stopped).await
}

/// Serve `service` on `listener` until `stopped` turns true, over TLS when `tls` is given.
pub async fn serve_with(listener: TcpListener, service: impl Serve, limits: ConnLimits, tls: Option<Arc<rustls::ServerConfig>>, mut stopped: watch::Receiver<bool>) {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let waiting = Arc::new(Semaphore::new(MAX_WAITING));
    let conns = Arc::new(Conns::default());
    let graceful = Arc::new(GracefulShutdown::new());
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(limits.h2_streams)
        // A peer that stops answering pings is gone; its connection goes with it.
        .keep_alive_interval(Some(limits.header_timeout))
        .keep_alive_timeout(Duration::from_secs(20))
        // Bounded as HTTP/1's headers are (hyper's HTTP/1 default is about 400 KiB).
        .max_header_list_size(256 << 10)
        // Streams a client may open and reset at once before it is told to go away (the
        // "rapid reset" attack).
        .max_pending_accept_reset_streams(Some(32));
    let builder = Arc::new(builder);
    let next_id = Arc::new(AtomicUsize::new(0));
    let tls = tls.map(tokio_rustls::TlsAcceptor::from);
    let accept = Accept { service, limits, conns: conns.clone(), graceful: graceful.clone(), builder, next_id, tls, stopped: stopped.clone() };
    loop {
        let io = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((io, _)) => io,
                Err(e) => {
                    // Out of file descriptors, most likely: wait for some to close rather
                    // than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stopped.changed() => break,
        };
        if let Ok(permit) = permits.clone().try_acquire_owned() {
            accept.start(io, permit);
            continue;
        }
        // At the cap: make room by closing an idle connection, and wait for its place in a
        // task of the newcomer's own, so the next client is accepted meanwhile.
        conns.evict_one();
        let Ok(wait) = waiting.clone().try_acquire_owned() else {
            tokio::spawn(accept.refuse(io));
            continue;
        };
        let (accept, permits, conns, mut stopped) = (accept.clone(), permits.clone(), conns.clone(), stopped.clone());
        tokio::spawn(async move {
            let _wait = wait;
            let deadline = tokio::time::Instant::now() + WAIT_FOR_PLACE;
            loop {
                tokio::select! {
                    p = permits.clone().acquire_owned() => return accept.start(io, p.expect("the semaphore is never closed")),
                    // Ask again now and then, in case the one asked had just become busy.
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {
                        if tokio::time::Instant::now() >= deadline {
                            return accept.refuse(io).await;
                        }
                        conns.evict_one();
                    }
                    _ = stopped.changed() => return,
                }
            }
        });
    }
    drop(listener);
    drop(accept);
    // Newcomers still waiting for a place end on the stop and let go of `graceful`.
    let mut graceful = graceful;
    let graceful = loop {
        match Arc::try_unwrap(graceful) {
            Ok(g) => break g,
            Err(g) => {
                graceful = g;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };
    if tokio::time::timeout(DRAIN, graceful.shutdown()).await.is_err() {
        tracing::warn!("connections still open {DRAIN:?} after the stop; dropping them");
    }
}

/// Tell a client past the cap that the server is full, and close: a complete HTTP/1.1
/// answer, so its client library reports an overloaded server and not a broken connection.
/// (Over TLS the connection is only closed: an answer would cost a handshake.)
async fn refuse(mut io: TcpStream) {
    use tokio::io::AsyncWriteExt as _;
    let body = r#"{"error":{"type":"rate_limited","message":"the server is at its connection cap; try again shortly"}}"#;
    let answer = format!("HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}", body.len());
    let _ = tokio::time::timeout(Duration::from_secs(1), io.write_all(answer.as_bytes())).await;
    let _ = io.shutdown().await;
}

/// What starting a connection needs, shared by the accept loop and newcomers' tasks.
#[derive(Clone)]
struct Accept<S> {
    service: S,
    limits: ConnLimits,
    conns: Arc<Conns>,
    graceful: Arc<GracefulShutdown>,
    builder: Arc<auto::Builder<TokioExecutor>>,
    next_id: Arc<AtomicUsize>,
    /// Set when connections are TLS.
    tls: Option<tokio_rustls::TlsAcceptor>,
    /// Ends handshakes in progress on a stop.
    stopped: watch::Receiver<bool>,
}

impl<S: Serve> Accept<S> {
    /// Turn away a client past the cap (see [`refuse`]).
    fn refuse(&self, io: TcpStream) -> impl std::future::Future<Output = ()> + Send + 'static {
        let plain = self.tls.is_none();
        async move {
            if plain {
                refuse(io).await
            }
        }
    }

    /// Serve one connection, holding `permit` until it closes.
    fn start(&self, io: TcpStream, permit: tokio::sync::OwnedSemaphorePermit) {
        // Answers are written whole; Nagle's algorithm would only hold small ones back.
        let _ = io.set_nodelay(true);
        // The client's address, for what is counted per address (failed authentication).
        let peer = io.peer_addr().unwrap_or_else(|_| std::net::SocketAddr::from(([0, 0, 0, 0], 0)));
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) as u64;
        let conn = Arc::new(Conn {
            busy: AtomicUsize::new(0),
            reading: AtomicUsize::new(0),
            last_done_ms: Default::default(),
            opened: tokio::time::Instant::now(),
            evict: Notify::new(),
        });
        self.conns.open.lock().unwrap().insert(id, conn.clone());
        let body_timeout = self.limits.body_timeout;
        let tls = self.tls.is_some();
        let service = {
            let (service, conn) = (self.service.clone(), conn.clone());
            hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let busy = Busy::start(&conn);
                let mut service = service.clone();
                let mut req = req.map(|body| Body::new(Timed::new(body, body_timeout, &conn)));
                req.extensions_mut().insert(axum::extract::ConnectInfo(peer));
                if tls {
                    req.headers_mut().insert("x-forwarded-proto", axum::http::HeaderValue::from_static("https"));
                }
                async move {
                    let resp: Response = service.call(req).await.unwrap_or_else(|e: Infallible| match e {});
                    Ok::<_, Infallible>(resp.map(|body| Body::new(Tracked { body, _busy: busy })))
                }
            })
        };
        let (graceful, builder, acceptor, mut stopped) = (self.graceful.clone(), self.builder.clone(), self.tls.clone(), self.stopped.clone());
        let conns = self.conns.clone();
        let idle_limit = self.limits.header_timeout;
        tokio::spawn(async move {
            let io = match acceptor {
                None => Stream::Plain(io),
                // The handshake holds the permit but counts as idle: a newcomer at the cap
                // may take its place, and it has the header timeout to finish.
                Some(acceptor) => {
                    let handshake = tokio::select! {
                        done = tokio::time::timeout(idle_limit, acceptor.accept(io)) => done.ok().and_then(Result::ok),
                        _ = conn.evict.notified() => None,
                        _ = stopped.changed() => None,
                    };
                    match handshake {
                        Some(tls) => Stream::Tls(Box::new(tls)),
                        None => {
                            conns.open.lock().unwrap().remove(&id);
                            drop(permit);
                            return;
                        }
                    }
                }
            };
            let served = graceful.watch(builder.serve_connection_with_upgrades(TokioIo::new(io), service).into_owned());
            drop(graceful);
            let mut served = pin!(served);
            // HTTP/2 has no header timer in hyper: a connection with nothing in flight for
            // the header timeout is closed here, as an idle HTTP/1 one is by hyper. One
            // timer a connection, woken once per idle limit, not per request.
            let mut check = tokio::time::Instant::now() + idle_limit;
            loop {
                tokio::select! {
                    _ = served.as_mut() => break,
                    // Dropping the connection closes it; a request that started meanwhile
                    // keeps it.
                    _ = conn.evict.notified() => if conn.evictable() { break },
                    _ = tokio::time::sleep_until(check) => {
                        let now = tokio::time::Instant::now();
                        match conn.idle_since() {
                            Some(since) if now.duration_since(since) >= idle_limit => break,
                            Some(since) => check = since + idle_limit,
                            None => check = now + idle_limit,
                        }
                    }
                }
            }
            conns.open.lock().unwrap().remove(&id);
            drop(permit);
        });
    }
}

/// A request body with a deadline: past `--body-timeout` from the headers, reading it fails
/// (the handler answers as for any broken body). While it is unread it marks its connection
/// as only waiting, so the connection cap may evict it.
struct Timed {
    body: hyper::body::Incoming,
    deadline: Pin<Box<tokio::time::Sleep>>,
    conn: Option<Arc<Conn>>,
}

impl Timed {
    fn new(body: hyper::body::Incoming, timeout: Duration, conn: &Arc<Conn>) -> Timed {
        let conn = (!http_body::Body::is_end_stream(&body)).then(|| {
            conn.reading.fetch_add(1, Ordering::AcqRel);
            conn.clone()
        });
        Timed { body, deadline: Box::pin(tokio::time::sleep(timeout)), conn }
    }

    fn finished(&mut self) {
        if let Some(conn) = self.conn.take() {
            conn.reading.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Drop for Timed {
    fn drop(&mut self) {
        self.finished();
    }
}

impl http_body::Body for Timed {
    type Data = axum::body::Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.body).poll_frame(cx) {
            Poll::Ready(None) => {
                this.finished();
                Poll::Ready(None)
            }
            Poll::Ready(Some(frame)) => {
                if this.body.is_end_stream() {
                    this.finished();
                }
                Poll::Ready(Some(frame.map_err(Into::into)))
            }
            Poll::Pending => match this.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    this.finished();
                    Poll::Ready(Some(Err("the request body did not arrive within the body timeout".into())))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A request in flight on a connection, until its answer's body is done.
struct Busy(Arc<Conn>);

impl Busy {
    fn start(conn: &Arc<Conn>) -> Busy {
        conn.busy.fetch_add(1, Ordering::AcqRel);
        Busy(conn.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let since_open = self.0.opened.elapsed().as_millis() as u64;
        self.0.last_done_ms.store(since_open, Ordering::Release);
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// An answer's body that keeps its connection busy while it streams (the dashboard's live
/// tape is one long answer).
struct Tracked {
    body: Body,
    _busy: Busy,
}

impl http_body::Body for Tracked {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A client's connection, plain or TLS.
enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[std::io::IoSlice<'_>]) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
