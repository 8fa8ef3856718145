//! The yardstick every throughput line stands beside: a bare axum handler on this machine, in
//! the same run, measured with the same wrk settings. It does no work a twin call could skip
//! (no auth, no store, no tape): what HTTP alone costs here, so a line's ratio to it says how
//! much of the machine pome's own path takes, whatever the machine.

use std::net::SocketAddr;

use axum::Router;
use axum::routing::get;

use crate::{WrkResult, wrk_for};

/// The bare handler's GET and POST figures at 64 connections.
pub struct Bare {
    pub get: f64,
    pub post: f64,
}

impl Bare {
    /// `rps` as a multiple of the bare handler's figure for the same method.
    pub fn ratio(&self, rps: f64, post: bool) -> String {
        format!("{:.2}x bare", rps / if post { self.post } else { self.get })
    }
}

/// Serve the bare handler on a runtime of its own (two threads, as pome's) on a thread of its
/// own, measure it, stop it.
pub fn measure(secs: u32) -> Bare {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel::<SocketAddr>();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            // A small JSON answer, as a cheap twin call gives; the POST reads its body first.
            let app = Router::new().route(
                "/",
                get(|| async { ([("content-type", "application/json")], r#"{"ok":true,"id":1}"#) })
                    .post(|body: axum::body::Bytes| async move { ([("content-type", "application/json")], format!(r#"{{"ok":true,"read":{}}}"#, body.len())) }),
            );
            axum::serve(listener, app).with_graceful_shutdown(async { let _ = stop_rx.await; }).await.unwrap();
        });
    });
    let addr = addr_rx.recv().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let post = dir.path().join("post.lua");
    std::fs::write(&post, "wrk.method = \"POST\"\nwrk.body = '{\"title\": \"Load test issue\", \"body\": \"created by wrk\"}'\nwrk.headers[\"Content-Type\"] = \"application/json\"\n").unwrap();
    let url = format!("http://{addr}/");
    let line = |label: &str, r: &WrkResult| crate::report(&format!("bare axum handler, {label}"), 64, r);
    let g = wrk_for(&url, "unused", 64, None, secs);
    line("GET", &g);
    let p = wrk_for(&url, "unused", 64, Some(&post), secs);
    line("POST", &p);
    let _ = stop_tx.send(());
    let _ = server.join();
    Bare { get: g.rps, post: p.rps }
}
