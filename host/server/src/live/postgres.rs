//! Live sandboxes in PostgreSQL (`pome serve --store postgres://…`): the same records and tape
//! segments as `live.db`, in the database every host of a deployment shares, so a host keeps
//! nothing another needs. Only what is committed there survives the host, so an answer leaves
//! once its row is committed, in every durable mode: `window` and `sync` promise the same here
//! (PostgreSQL's commit is its fsync). Rows of every sandbox go in one commit: a writer task
//! commits whatever arrived while its previous commit ran, so under load a commit carries
//! many rows and each waits about one round trip.
//!
//! A commit that fails is held and tried again, with what arrived meanwhile, until it goes
//! through; while it fails, journals say the sandbox is unavailable (503) rather than serve
//! what could not be recorded.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use deadpool_postgres::Pool;
use pome_runtime::store::Journal;
use pome_tape::TapeRow;

use super::{CloseReason, Done, Durability, Entry, Failing, UNAVAILABLE, LiveStore, MAX_TOMBSTONES, Op, RETRY_FIRST, RETRY_MAX, RangeRows, Restored, SandboxRecord, Segment, StoredTombstone, Tombstone, encode_row, parse_record};
use crate::storage::StorageError;

const SCHEMA_LOCK: i64 = 0x706f_6d65_0101;
/// Held for as long as a host serves live sandboxes from the database. Until sandboxes have
/// owners and fencing, two hosts restoring the same sandboxes would both serve them: a second
/// host is refused instead.
const HOST_LOCK: i64 = 0x706f_6d65_0102;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS live_sandboxes (
    id TEXT COLLATE "C" PRIMARY KEY,
    -- The SandboxRecord as JSON; NULL once closed (the token's hash goes with it).
    record TEXT,
    idle_deadline_ms BIGINT NOT NULL DEFAULT 0,
    -- The tombstone as JSON once closed, and the order closes came in.
    closed TEXT,
    closed_seq BIGINT
);
CREATE SEQUENCE IF NOT EXISTS live_closed_seq;
CREATE INDEX IF NOT EXISTS live_sandboxes_closed ON live_sandboxes (closed_seq) WHERE closed_seq IS NOT NULL;
-- One tape's rows first_seq..=last_seq that one commit wrote, as `Segment` stores them.
CREATE TABLE IF NOT EXISTS live_segments (
    sandbox_id TEXT COLLATE "C" NOT NULL,
    twin TEXT COLLATE "C" NOT NULL,
    first_seq BIGINT NOT NULL,
    last_seq BIGINT NOT NULL,
    rows BYTEA NOT NULL,
    PRIMARY KEY (sandbox_id, twin, last_seq)
);
CREATE TABLE IF NOT EXISTS live_quarantine (
    id TEXT, what TEXT NOT NULL, content TEXT, error TEXT NOT NULL, at_ms BIGINT NOT NULL
);
"#;

/// A row as it is committed.
struct Logged {
    sandbox: Arc<str>,
    twin: Arc<str>,
    row: Arc<TapeRow>,
    committed: Arc<AtomicU64>,
}

/// A row waiting for its commit.
struct Pending {
    sandbox: Arc<str>,
    twin: Arc<str>,
    row: Arc<TapeRow>,
    committed: Arc<AtomicU64>,
    done: Done,
}

#[derive(Default)]
struct Batch {
    ops: Vec<Entry>,
    rows: Vec<Pending>,
    stopped: bool,
}

pub struct PgLive {
    pool: Pool,
    runtime: tokio::runtime::Handle,
    mode: Durability,
    batch: Arc<Mutex<Batch>>,
    wake: Arc<tokio::sync::Notify>,
    /// Why the last commit failed, while the writer retries it.
    failing: Arc<Failing>,
    /// What `load` answers: read at connect, where waiting on the database is allowed.
    restored: Mutex<Option<Restored>>,
    /// The session holding [`HOST_LOCK`]; the lock goes with it (and with the process).
    _host: tokio_postgres::Client,
}

/// Take [`HOST_LOCK`] on a connection of its own, kept open for the life of the store.
async fn hold_host_lock(url: &str) -> Result<tokio_postgres::Client, StorageError> {
    let (client, connection) = crate::storage::postgres::connect_one(url).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::error!(error = %e, "the connection holding this host's claim on the live sandboxes broke");
        }
    });
    let held: bool = client.query_one("SELECT pg_try_advisory_lock($1)", &[&HOST_LOCK]).await?.get(0);
    if !held {
        return Err(StorageError::Postgres(
            "another pome host serves live sandboxes from this database; until sandboxes have owners (issue #33), one host at a time may (stop it, or give this one --durability memory)".into(),
        ));
    }
    Ok(client)
}

impl PgLive {
    /// Connect to `url`, bring the live tables up to this version, read back every
    /// sandbox, and start the writer.
    pub async fn connect(url: &str, mode: Durability) -> Result<Arc<PgLive>, StorageError> {
        let pool = crate::storage::postgres::pool(url)?;
        crate::storage::postgres::migrate(&pool, SCHEMA_LOCK, SCHEMA).await?;
        let host = hold_host_lock(url).await?;
        let restored = load(&pool).await?;
        let live = Arc::new(PgLive {
            pool,
            runtime: tokio::runtime::Handle::current(),
            mode,
            batch: Arc::default(),
            wake: Arc::default(),
            failing: Arc::default(),
            restored: Mutex::new(Some(restored)),
            _host: host,
        });
        let writer = Writer { pool: live.pool.clone(), batch: live.batch.clone(), wake: live.wake.clone(), failing: live.failing.clone() };
        tokio::spawn(writer.run());
        Ok(live)
    }

    fn failing(&self) -> Option<String> {
        self.failing.get()
    }

    fn send(&self, op: Op, done: Option<Done>) {
        if matches!(op, Op::Put(_)) && let Some(why) = self.failing() {
            if let Some(done) = done {
                done(Err(format!("storage is failing: {why}")));
            }
            return;
        }
        let mut b = self.batch.lock().unwrap();
        if b.stopped {
            drop(b);
            if let Some(done) = done {
                done(Err("the live-sandbox writer stopped".into()));
            }
            return;
        }
        b.ops.push(Entry { op, done });
        drop(b);
        self.wake.notify_one();
    }
}

impl Drop for PgLive {
    fn drop(&mut self) {
        // The writer commits what is queued, then ends.
        self.batch.lock().unwrap().stopped = true;
        self.wake.notify_one();
    }
}

/// `LiveStore` is implemented on the Arc: a journal needs the store itself.
pub struct PgLiveStore(pub Arc<PgLive>);

impl LiveStore for PgLiveStore {
    super::queued_ops!();

    fn journal(&self, sandbox: &str, twin: &str) -> Arc<dyn Journal> {
        Arc::new(PgJournal { live: self.0.clone(), sandbox: sandbox.into(), twin: twin.into(), committed: Arc::default() })
    }

    fn load(&self) -> Result<Restored, StorageError> {
        if let Some(restored) = self.0.restored.lock().unwrap().take() {
            return Ok(restored);
        }
        let (pool, runtime) = (self.0.pool.clone(), self.0.runtime.clone());
        tokio::task::block_in_place(|| runtime.block_on(load(&pool)))
    }

    fn mode(&self) -> Durability {
        self.0.mode
    }
}

struct PgJournal {
    live: Arc<PgLive>,
    sandbox: Arc<str>,
    twin: Arc<str>,
    committed: Arc<AtomicU64>,
}

impl Journal for PgJournal {
    fn append(&self, row: Arc<TapeRow>, done: Done) {
        let mut b = self.live.batch.lock().unwrap();
        if b.stopped {
            drop(b);
            return done(Err("the live-sandbox writer stopped".into()));
        }
        b.rows.push(Pending { sandbox: self.sandbox.clone(), twin: self.twin.clone(), row, committed: self.committed.clone(), done });
        drop(b);
        self.live.wake.notify_one();
    }

    fn durable_through(&self) -> u64 {
        self.committed.load(Ordering::Acquire)
    }

    fn unavailable(&self) -> Option<String> {
        self.live.failing().map(|_| UNAVAILABLE.to_string())
    }

    fn read(&self, from: u64, to: u64, limit: usize, done: Box<dyn FnOnce(Result<Vec<TapeRow>, String>) + Send>) {
        let (pool, sandbox, twin) = (self.live.pool.clone(), self.sandbox.clone(), self.twin.clone());
        self.live.runtime.spawn(async move {
            let read = async {
                let c = pool.get().await?;
                let st = c.prepare_cached("SELECT first_seq, rows FROM live_segments WHERE sandbox_id = $1 AND twin = $2 AND last_seq >= $3 ORDER BY last_seq").await?;
                let segments = c.query(&st, &[&&*sandbox, &&*twin, &(from.min(i64::MAX as u64) as i64)]).await?;
                let mut range = RangeRows::new(from, to, limit);
                for s in &segments {
                    if !range.wants(s.get::<_, i64>(0).max(0) as u64) {
                        break;
                    }
                    range.add(s.get(1), &sandbox)?;
                }
                Ok::<_, StorageError>(range.rows())
            };
            done(read.await.map_err(|e| e.to_string()));
        });
    }
}

struct Writer {
    pool: Pool,
    batch: Arc<Mutex<Batch>>,
    wake: Arc<tokio::sync::Notify>,
    failing: Arc<Failing>,
}

impl Writer {
    async fn run(self) {
        loop {
            let (entries, pending, stopped) = {
                let mut b = self.batch.lock().unwrap();
                (std::mem::take(&mut b.ops), std::mem::take(&mut b.rows), b.stopped)
            };
            if entries.is_empty() && pending.is_empty() {
                if stopped {
                    break;
                }
                self.wake.notified().await;
                continue;
            }
            // Who waits is kept apart from what is written: the commit's future must be
            // `Send`, and a waiter's callback need not be `Sync`.
            let (ops, op_dones): (Vec<Op>, Vec<Option<Done>>) = entries.into_iter().map(|e| (e.op, e.done)).unzip();
            let (rows, row_dones): (Vec<Logged>, Vec<Done>) = pending.into_iter().map(|p| (Logged { sandbox: p.sandbox, twin: p.twin, row: p.row, committed: p.committed }, p.done)).unzip();
            // Encoding and compressing megabytes is a blocking thread's work, not an async
            // worker's that other tenants' requests wait for.
            let (rows, segments) = tokio::task::spawn_blocking(move || {
                let segments = Segments::of(&rows);
                (rows, segments)
            })
            .await
            .expect("encoding segments does not panic");
            let mut retry = RETRY_FIRST;
            loop {
                match commit(&self.pool, &ops, &segments).await {
                    Ok(()) => break,
                    Err(e) => {
                        let first = self.failing.fail(e.to_string());
                        if first {
                            tracing::error!(error = %e, entries = ops.len() + rows.len(), "committing live sandboxes to PostgreSQL failed; holding the batch and retrying");
                        }
                        tokio::time::sleep(retry).await;
                        retry = (retry * 2).min(RETRY_MAX);
                    }
                }
            }
            if self.failing.recover() {
                tracing::info!("committing live sandboxes to PostgreSQL works again; the held rows are committed");
            }
            for (r, done) in rows.into_iter().zip(row_dones) {
                r.committed.fetch_max(r.row.seq, Ordering::Release);
                done(Ok(()));
            }
            for done in op_dones.into_iter().flatten() {
                done(Ok(()));
            }
        }
    }
}

/// A commit's rows, each tape's as one compressed segment, as the statement that inserts
/// them takes them.
struct Segments {
    sandboxes: Vec<Arc<str>>,
    twins: Vec<Arc<str>>,
    firsts: Vec<i64>,
    lasts: Vec<i64>,
    stored: Vec<Vec<u8>>,
}

impl Segments {
    fn of(rows: &[Logged]) -> Segments {
        let mut at: HashMap<(&str, &str), usize> = HashMap::new();
        let mut tapes: Vec<(&Logged, Segment)> = Vec::new();
        let mut encoded = Vec::new();
        for r in rows {
            let i = *at.entry((&*r.sandbox, &*r.twin)).or_insert_with(|| {
                tapes.push((r, Segment::default()));
                tapes.len() - 1
            });
            encoded.clear();
            encode_row(&mut encoded, &r.row);
            tapes[i].1.push_encoded(r.row.seq, &encoded);
        }
        let mut out = Segments { sandboxes: Vec::new(), twins: Vec::new(), firsts: Vec::new(), lasts: Vec::new(), stored: Vec::new() };
        for (r, segment) in tapes {
            out.sandboxes.push(r.sandbox.clone());
            out.twins.push(r.twin.clone());
            out.firsts.push(segment.first as i64);
            out.lasts.push(segment.last as i64);
            out.stored.push(lz4_flex::compress_prepend_size(&segment.payload));
        }
        out
    }
}

/// One transaction: each tape's rows as one segment, then the ops, in the order they came.
async fn commit(pool: &Pool, ops: &[Op], segments: &Segments) -> Result<(), StorageError> {
    let mut c = pool.get().await?;
    let tx = c.transaction().await?;
    // Every segment in one statement, and every run of touches in one more: a statement is
    // a round trip, and a commit carries rows of a hundred sandboxes.
    if !segments.stored.is_empty() {
        let sandboxes: Vec<&str> = segments.sandboxes.iter().map(|s| &**s).collect();
        let twins: Vec<&str> = segments.twins.iter().map(|s| &**s).collect();
        let insert = tx
            .prepare_cached(
                "INSERT INTO live_segments (sandbox_id, twin, first_seq, last_seq, rows)
                 SELECT u.s, u.t, u.f, u.l, u.r FROM UNNEST($1::TEXT[], $2::TEXT[], $3::BIGINT[], $4::BIGINT[], $5::BYTEA[]) AS u(s, t, f, l, r)
                 WHERE NOT EXISTS (SELECT 1 FROM live_sandboxes WHERE id = u.s AND closed IS NOT NULL)
                 ON CONFLICT DO NOTHING",
            )
            .await?;
        tx.execute(&insert, &[&sandboxes, &twins, &segments.firsts, &segments.lasts, &segments.stored]).await?;
    }
    let mut touches: Vec<(&str, i64)> = Vec::new();
    for op in ops {
        if let Op::Touch { sandbox, idle_deadline_ms } = op {
            touches.push((sandbox, *idle_deadline_ms as i64));
            continue;
        }
        touch(&tx, &mut touches).await?;
        match op {
            Op::Put(record) => {
                let text = serde_json::to_string(record).map_err(|e| StorageError::Corrupt(e.to_string()))?;
                tx.execute(
                    "INSERT INTO live_sandboxes (id, record, idle_deadline_ms, closed, closed_seq) VALUES ($1, $2, $3, NULL, NULL)
                     ON CONFLICT (id) DO UPDATE SET record = EXCLUDED.record, idle_deadline_ms = EXCLUDED.idle_deadline_ms, closed = NULL, closed_seq = NULL",
                    &[&record.id, &text, &(record.idle_deadline_ms as i64)],
                )
                .await?;
            }
            Op::Touch { .. } => unreachable!("touches are gathered above"),
            Op::Close { sandbox, tombstone } => {
                let t = StoredTombstone { team_id: tombstone.team_id.clone(), token_hash: tombstone.token_hash.clone(), reason: tombstone.reason.as_str().to_string(), run_id: tombstone.run_id.clone() };
                let text = serde_json::to_string(&t).map_err(|e| StorageError::Corrupt(e.to_string()))?;
                tx.execute("DELETE FROM live_segments WHERE sandbox_id = $1", &[sandbox]).await?;
                let seq: i64 = tx
                    .query_one(
                        "INSERT INTO live_sandboxes (id, record, closed, closed_seq) VALUES ($1, NULL, $2, nextval('live_closed_seq'))
                         ON CONFLICT (id) DO UPDATE SET record = NULL, closed = EXCLUDED.closed, closed_seq = EXCLUDED.closed_seq RETURNING closed_seq",
                        &[sandbox, &text],
                    )
                    .await?
                    .get(0);
                if seq % 1024 == 0 {
                    tx.execute("DELETE FROM live_sandboxes WHERE closed_seq IS NOT NULL AND closed_seq <= $1", &[&(seq - MAX_TOMBSTONES)]).await?;
                }
            }
            Op::Flush => {}
        }
    }
    touch(&tx, &mut touches).await?;
    tx.commit().await?;
    Ok(())
}

/// Move the idle clocks of `touches` (a run of consecutive touches, so they keep their place
/// among the ops), in one statement.
async fn touch(tx: &deadpool_postgres::Transaction<'_>, touches: &mut Vec<(&str, i64)>) -> Result<(), StorageError> {
    if touches.is_empty() {
        return Ok(());
    }
    let (ids, deadlines): (Vec<&str>, Vec<i64>) = touches.drain(..).unzip();
    tx.execute(
        "UPDATE live_sandboxes AS l SET idle_deadline_ms = GREATEST(l.idle_deadline_ms, u.ms)
         FROM UNNEST($1::TEXT[], $2::BIGINT[]) AS u(id, ms) WHERE l.id = u.id AND l.closed IS NULL",
        &[&ids, &deadlines],
    )
    .await?;
    Ok(())
}

/// Every sandbox, read back: open records (a malformed one moved to `live_quarantine`) and
/// the newest tombstones.
async fn load(pool: &Pool) -> Result<Restored, StorageError> {
    let mut c = pool.get().await?;
    let mut out = Restored::default();
    let mut bad: Vec<(String, &str, Option<String>, String)> = Vec::new();
    for r in c.query("SELECT id, record, idle_deadline_ms FROM live_sandboxes WHERE closed IS NULL AND record IS NOT NULL ORDER BY id", &[]).await? {
        let (id, text, idle): (String, Option<String>, i64) = (r.get(0), r.get(1), r.get(2));
        match parse_record(Some(&id), text.as_deref()) {
            Ok(mut record) => {
                record.idle_deadline_ms = record.idle_deadline_ms.max(idle.max(0) as u64);
                out.open.push(record);
            }
            Err(why) => bad.push((id, "sandbox", text, why)),
        }
    }
    for r in c.query("SELECT id, closed FROM live_sandboxes WHERE closed IS NOT NULL ORDER BY closed_seq DESC LIMIT $1", &[&MAX_TOMBSTONES]).await? {
        let (id, text): (String, String) = (r.get(0), r.get(1));
        let parsed = serde_json::from_str::<StoredTombstone>(&text).map_err(|e| format!("its tombstone is not a tombstone: {e}")).and_then(|t| match CloseReason::parse(&t.reason) {
            Some(reason) => Ok((t, reason)),
            None => Err(format!("`{}` is not a reason a sandbox closes for", t.reason)),
        });
        match parsed {
            Ok((t, reason)) => out.closed.push((id, Tombstone { team_id: t.team_id, token_hash: t.token_hash, reason, run_id: t.run_id })),
            Err(why) => bad.push((id, "tombstone", Some(text), why)),
        }
    }
    out.closed.reverse();
    if !bad.is_empty() {
        let now = crate::sandbox::unix_ms(std::time::SystemTime::now()) as i64;
        let tx = c.transaction().await?;
        for (id, what, text, why) in &bad {
            tracing::error!(sandbox = %id, what, error = %why, "a malformed live-sandbox record was moved to live_quarantine; start goes on without it");
            tx.execute("INSERT INTO live_quarantine (id, what, content, error, at_ms) VALUES ($1, $2, $3, $4, $5)", &[id, what, text, why, &now]).await?;
            tx.execute("DELETE FROM live_sandboxes WHERE id = $1", &[id]).await?;
            out.quarantined.push(id.clone());
        }
        tx.commit().await?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{append, read, record, row};
    use super::super::wait;
    use super::*;
    use tokio_postgres::NoTls;

    async fn open(url: &str) -> PgLiveStore {
        PgLiveStore(PgLive::connect(url, Durability::Window).await.unwrap())
    }

    /// The store again, as the next host (or this one restarted) opens it once the one
    /// before has gone.
    async fn reopen(url: &str) -> PgLiveStore {
        let started = std::time::Instant::now();
        loop {
            match PgLive::connect(url, Durability::Window).await {
                Ok(live) => return PgLiveStore(live),
                Err(e) => assert!(started.elapsed() < std::time::Duration::from_secs(10), "{e}"),
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    async fn segments(url: &str) -> i64 {
        let (c, conn) = tokio_postgres::connect(url, NoTls).await.unwrap();
        tokio::spawn(conn);
        c.query_one("SELECT COUNT(*) FROM live_segments", &[]).await.unwrap().get(0)
    }

    fn seqs(rows: Vec<TapeRow>) -> Vec<u64> {
        rows.iter().map(|r| r.seq).collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_answer_waits_for_its_commit_and_another_host_reads_the_sandbox_back() {
        let url = crate::storage::test_postgres::database().await;
        let live = open(&url).await;
        wait(|d| live.put(record("sbx_a"), d)).await.unwrap();
        wait(|d| live.put(record("sbx_b"), d)).await.unwrap();
        let ja = live.journal("sbx_a", "acme");
        for seq in 1..=3 {
            append(&ja, row(seq)).await;
            assert_eq!(ja.durable_through(), seq, "answered only once committed");
        }
        live.touch("sbx_a", 99);
        live.close("sbx_b", &Tombstone { team_id: "team_1".into(), token_hash: "h".into(), reason: CloseReason::Finalized, run_id: Some("run_1".into()) });
        wait(|d| live.flush(d)).await.unwrap();

        // The next host, once this one is gone.
        drop((ja, live));
        let other = reopen(&url).await;
        let back = other.load().unwrap();
        assert_eq!(back.open.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["sbx_a"]);
        assert_eq!(back.open[0].idle_deadline_ms, 99, "the idle clock is kept");
        assert_eq!(back.closed.len(), 1);
        assert_eq!((back.closed[0].0.as_str(), back.closed[0].1.run_id.as_deref()), ("sbx_b", Some("run_1")));
        let journal = other.journal("sbx_a", "acme");
        assert_eq!(seqs(read(&journal, 1, u64::MAX, usize::MAX).await), [1, 2, 3]);
        assert_eq!(seqs(read(&journal, 2, 3, 10).await), [2], "a range");
        assert_eq!(seqs(read(&journal, 1, u64::MAX, 2).await), [1, 2], "a page");
        assert_eq!(other.load().unwrap().open.len(), 1, "loading again reads the database again");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rows_appended_together_share_segments_and_a_closed_sandbox_keeps_none() {
        let url = crate::storage::test_postgres::database().await;
        let live = open(&url).await;
        wait(|d| live.put(record("sbx_a"), d)).await.unwrap();
        let (ja, jb) = (live.journal("sbx_a", "acme"), live.journal("sbx_a", "other"));
        for seq in 1..=10 {
            let mut a = (*row(seq)).clone();
            a.response_body = pome_tape::Body(bytes::Bytes::from(vec![0xff, seq as u8, 0x00]));
            // Appended without waiting, as a busy store does: they commit together.
            ja.append(Arc::new(a), Box::new(|r| r.unwrap()));
            jb.append(row(seq), Box::new(|r| r.unwrap()));
        }
        wait(|d| live.flush(d)).await.unwrap();
        let n = segments(&url).await;
        assert!(n < 20, "rows committed together share segments ({n} for 20 rows)");
        let all = read(&ja, 1, u64::MAX, usize::MAX).await;
        assert_eq!(seqs(all.clone()), (1..=10).collect::<Vec<_>>());
        assert_eq!(all[4].response_body.0[..], [0xff, 5, 0x00], "bodies are bytes");
        assert_eq!(read(&jb, 1, u64::MAX, usize::MAX).await, (1..=10).map(|s| (*row(s)).clone()).collect::<Vec<_>>());
        assert_eq!(seqs(read(&ja, 3, 8, 100).await), [3, 4, 5, 6, 7], "a range inside a segment");

        live.close("sbx_a", &Tombstone { team_id: "team_1".into(), token_hash: "h".into(), reason: CloseReason::Discarded, run_id: None });
        // A request queued before the discard, served after it.
        append(&ja, row(11)).await;
        wait(|d| live.flush(d)).await.unwrap();
        assert_eq!(segments(&url).await, 0, "nothing of a closed sandbox stays in the database");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_second_host_on_the_database_is_refused_until_the_first_is_gone() {
        let url = crate::storage::test_postgres::database().await;
        let first = PgLive::connect(&url, Durability::Window).await.unwrap();
        let refused = PgLive::connect(&url, Durability::Window).await.err().expect("refused while the first serves");
        assert!(refused.to_string().contains("another pome host"), "{refused}");
        drop(first);
        // The lock goes with the first host's session, which ends as its client is dropped.
        let started = std::time::Instant::now();
        while PgLive::connect(&url, Durability::Window).await.is_err() {
            assert!(started.elapsed() < std::time::Duration::from_secs(10), "the first host's claim outlived it");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_row_appended_while_the_database_is_down_waits_and_is_committed_once_it_is_back() {
        let server = crate::storage::test_postgres::Server::start();
        let url = server.database().await;
        let live = open(&url).await;
        wait(|d| live.put(record("sbx_a"), d)).await.unwrap();
        let journal = live.journal("sbx_a", "acme");
        append(&journal, row(1)).await;
        assert_eq!(journal.unavailable(), None);

        server.down();
        let (tx, mut answered) = tokio::sync::oneshot::channel();
        journal.append(row(2), Box::new(move |r| tx.send(r).unwrap()));
        let started = std::time::Instant::now();
        while journal.unavailable().is_none() {
            assert!(started.elapsed() < std::time::Duration::from_secs(20), "the journal says the sandbox is unavailable while its row cannot be committed");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(answered.try_recv().is_err(), "no answer while the row is not committed");
        assert_eq!(journal.durable_through(), 1);

        server.up();
        let done = tokio::time::timeout(std::time::Duration::from_secs(30), answered).await.expect("answered once the database is back");
        done.unwrap().unwrap();
        assert_eq!(journal.unavailable(), None, "available again");
        assert_eq!(journal.durable_through(), 2);
        assert_eq!(seqs(read(&journal, 1, u64::MAX, usize::MAX).await), [1, 2], "nothing lost, nothing twice");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_malformed_record_is_quarantined_and_the_start_goes_on() {
        let url = crate::storage::test_postgres::database().await;
        let live = open(&url).await;
        wait(|d| live.put(record("sbx_good"), d)).await.unwrap();
        let (c, conn) = tokio_postgres::connect(&url, NoTls).await.unwrap();
        tokio::spawn(conn);
        c.execute("INSERT INTO live_sandboxes (id, record) VALUES ('sbx_bad', '{\"id\": 7')", &[]).await.unwrap();
        drop(live);
        let back = reopen(&url).await.load().unwrap();
        assert_eq!(back.open.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["sbx_good"]);
        assert_eq!(back.quarantined, ["sbx_bad"]);
        let kept: i64 = c.query_one("SELECT COUNT(*) FROM live_quarantine WHERE id = 'sbx_bad'", &[]).await.unwrap().get(0);
        assert_eq!(kept, 1, "kept for the operator to look at");
    }
}
