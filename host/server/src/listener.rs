//! Client connections: accept, serve with hyper, and keep what a client can hold bounded.
//!
//! - **A cap on connections** (`--max-connections`). Each connection holds a permit until it
//!   closes. At the cap, a new client takes the place of the connection that has been idle
//!   longest (no request in flight and no answer still streaming): ten thousand idle
//!   connections, or clients that connect and send nothing, cannot lock out the next one.
//!   Only when every connection is busy does a new client wait.
//! - **A header timeout** (`--header-timeout`): hyper closes a connection whose request
//!   headers have not all arrived in time, counted from when it is ready for a request, so a
//!   slowloris client or an idle keep-alive connection holds its permit no longer than that.
//! - **Graceful shutdown**: on stop, connections finish the request they are serving and
//!   close; idle ones close at once.
//!
//! axum's own `serve` sets neither a timer (so no header timeout) nor a cap, hence this loop.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http_body::{Frame, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore, watch};
use tower_service::Service as _;

/// How long a stop waits for connections to finish before it drops them.
const DRAIN: Duration = Duration::from_secs(10);

/// One open connection, as the cap sees it.
struct Conn {
    /// Requests in flight, counted until their answer's body is sent.
    busy: AtomicUsize,
    /// Asks the connection to close if it is idle.
    evict: Notify,
}

/// Open connections by age (ids grow), so the longest-idle is found first.
#[derive(Default)]
struct Conns {
    open: Mutex<BTreeMap<u64, Arc<Conn>>>,
}

impl Conns {
    /// Ask the oldest idle connection to close; whether there was one.
    fn evict_one(&self) -> bool {
        let open = self.open.lock().unwrap();
        match open.values().find(|c| c.busy.load(Ordering::Acquire) == 0) {
            Some(c) => {
                c.evict.notify_one();
                true
            }
            None => false,
        }
    }
}

/// Serve `router` on `listener` until `stopped` turns true.
pub async fn serve(listener: TcpListener, router: Router, max_connections: usize, header_timeout: Duration, mut stopped: watch::Receiver<bool>) {
    let permits = Arc::new(Semaphore::new(max_connections.max(1)));
    let conns = Arc::new(Conns::default());
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(header_timeout);
    let builder = Arc::new(builder);
    let mut next_id = 0u64;
    'accept: loop {
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
        let permit = match permits.clone().try_acquire_owned() {
            Ok(p) => p,
            // At the cap: make room by closing an idle connection, or wait for one to close
            // (asking again now and then, in case the one asked had just become busy).
            Err(_) => loop {
                conns.evict_one();
                tokio::select! {
                    p = permits.clone().acquire_owned() => break p.expect("the semaphore is never closed"),
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                    _ = stopped.changed() => break 'accept,
                }
            },
        };
        // Answers are written whole; Nagle's algorithm would only hold small ones back.
        let _ = io.set_nodelay(true);
        next_id += 1;
        let id = next_id;
        let conn = Arc::new(Conn { busy: AtomicUsize::new(0), evict: Notify::new() });
        conns.open.lock().unwrap().insert(id, conn.clone());
        let service = {
            let (router, conn) = (router.clone(), conn.clone());
            hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let busy = Busy::start(&conn);
                let mut router = router.clone();
                async move {
                    let resp: Response = router.call(req.map(Body::new)).await.unwrap_or_else(|e: Infallible| match e {});
                    Ok::<_, Infallible>(resp.map(|body| Body::new(Tracked { body, _busy: busy })))
                }
            })
        };
        let served = graceful.watch(builder.serve_connection_with_upgrades(TokioIo::new(io), service).into_owned());
        let conns = conns.clone();
        tokio::spawn(async move {
            let mut served = pin!(served);
            loop {
                tokio::select! {
                    _ = served.as_mut() => break,
                    // Dropping the connection closes it; a request that started meanwhile
                    // keeps it.
                    _ = conn.evict.notified() => if conn.busy.load(Ordering::Acquire) == 0 { break },
                }
            }
            conns.open.lock().unwrap().remove(&id);
            drop(permit);
        });
    }
    drop(listener);
    if tokio::time::timeout(DRAIN, graceful.shutdown()).await.is_err() {
        tracing::warn!("connections still open {DRAIN:?} after the stop; dropping them");
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
