//! Work that may wait for idle CPU: building checkpoints off their stores' paths. It runs on
//! a few threads of its own at the lowest nice level, each driving one job at a time, so a
//! busy host serves requests first and catches up on checkpoints when it has room. (Not
//! SCHED_IDLE, which a saturated host would starve forever: a niced thread still gets a
//! sliver, so checkpoints keep bounding how long a rebuild replays.)

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, mpsc};

use tokio::sync::oneshot;

type Job = Pin<Box<dyn Future<Output = ()> + Send>>;

thread_local! {
    static BACKGROUND_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this is a background thread: blocking work done for its job (reading a tape's
/// older rows from disk to replay them) runs here, at its low priority, rather than on a
/// blocking pool at the server's, where it would take CPU from requests.
pub fn on_background_thread() -> bool {
    BACKGROUND_THREAD.with(|b| b.get())
}

pub struct Background {
    jobs: mpsc::Sender<Job>,
}

impl Background {
    /// `threads` threads, each with a single-threaded tokio runtime for its jobs.
    pub fn new(threads: usize) -> std::io::Result<Background> {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads.max(1) {
            let rx = rx.clone();
            std::thread::Builder::new().name(format!("pome-background-{i}")).spawn(move || {
                // SAFETY: only reads its arguments; `0` names the calling thread.
                unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
                BACKGROUND_THREAD.with(|b| b.set(true));
                let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(rt) => rt,
                    Err(e) => return tracing::error!(error = %e, "a background thread could not start its runtime"),
                };
                loop {
                    // The lock is let go before the job runs, so the other threads take the
                    // next ones meanwhile. Ends when the runtime (and so the sender) is dropped.
                    let next = rx.lock().unwrap().recv();
                    let Ok(job) = next else { break };
                    rt.block_on(job);
                }
            })?;
        }
        Ok(Background { jobs: tx })
    }

    /// Run `job` on a background thread; its result comes back on the receiver. Dropping the
    /// receiver before the job starts skips it.
    pub fn spawn<T: Send + 'static>(&self, job: impl Future<Output = T> + Send + 'static) -> oneshot::Receiver<T> {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::pin(async move {
            if !tx.is_closed() {
                let _ = tx.send(job.await);
            }
        });
        // The threads only stop when this sender is gone, so the send cannot fail.
        let _ = self.jobs.send(job);
        rx
    }
}
