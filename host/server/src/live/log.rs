//! The row log: the file an answer waits on. A twin store appends each row's frame to it
//! with one `write` on its own thread, and in `window` mode the answer leaves as soon as the
//! write returns: the row is in the operating system's hands, so a crash or `kill -9` cannot
//! lose it, and no thread hand-off or database commit stands between a request and its
//! answer. The writer thread moves logged rows into `live.db`'s segments in the background,
//! many at a time, and a log file goes once every row in it is committed there. At start,
//! rows a crash left only in the log are put into the database before anything is served.
//!
//! A frame is `[u32 length][u32 CRC-32 of the rest][u64 seq][u16 + sandbox id][u16 + twin][row]`, all
//! little-endian; the row part is the stored form of one row ([`super::segment`]), so the
//! writer builds segments from frames without encoding a row twice. A row part may give its
//! response body as the same as an earlier row's of its tape: that row's frame is earlier in
//! the log, or its file is gone and the row is committed to the database. A frame cut short
//! (a power cut, or a write the disk refused halfway) ends its file's replay there.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use pome_tape::TapeRow;

use super::{Done, Durability};

/// A log file is retired (and a new one begun) once it passes this size and its rows are
/// committed to the database: replaying one at start takes well under a second.
const ROTATE_BYTES: u64 = 64 << 20;

/// One row as logged, waiting for the writer to put it into the database. The frame is not
/// built whole: its bodies are the row's own, written with the rest in one `writev`, so
/// logging a row copies its bodies once, into the kernel.
pub(super) struct Logged {
    pub sandbox: Arc<str>,
    pub twin: Arc<str>,
    pub row: Arc<TapeRow>,
    /// The frame up to the request body: length, checksum, seq, names, then the row part's
    /// start (`super::segment::encode_head`), which begins at `row_at`.
    head: Vec<u8>,
    row_at: usize,
    /// The response body's length, written between the bodies in a segment.
    response_len: [u8; 4],
    /// When an earlier row of this tape answered the same body: the reference to it
    /// (`super::segment::reference`), written in the log instead of the body.
    same_as: Option<[u8; 12]>,
    /// Moved to the row's seq once the database holds it: the store may then drop the row
    /// from memory and read it back from there.
    pub committed: Arc<AtomicU64>,
}

impl Logged {
    /// Encode `row` of `sandbox`'s `twin` tape as a frame, its response body as row
    /// `same_as`'s when given.
    pub fn new(sandbox: Arc<str>, twin: Arc<str>, row: Arc<TapeRow>, same_as: Option<u64>, committed: Arc<AtomicU64>) -> Logged {
        let mut head = Vec::with_capacity(64 + sandbox.len() + twin.len() + 1024);
        head.extend_from_slice(&[0; 8]);
        head.extend_from_slice(&row.seq.to_le_bytes());
        for name in [&*sandbox, &*twin] {
            // Ids and twin names are short (the registry makes them); a longer one is cut,
            // which replay then finds is no sandbox it knows.
            let name = &name.as_bytes()[..name.len().min(u16::MAX as usize)];
            head.extend_from_slice(&(name.len() as u16).to_le_bytes());
            head.extend_from_slice(name);
        }
        let row_at = head.len();
        super::segment::encode_head(&mut head, &row);
        let response_len = (row.response_body.0.len() as u32).to_le_bytes();
        let same_as = same_as.map(super::segment::reference);
        let mut logged = Logged { sandbox, twin, row, head, row_at, response_len, same_as, committed };
        let mut crc = crc32fast::Hasher::new();
        let [head, rest @ ..] = logged.pieces();
        crc.update(&head[8..]);
        rest.iter().for_each(|p| crc.update(p));
        let (len, crc) = ((logged.len() - 8) as u32, crc.finalize());
        logged.head[..4].copy_from_slice(&len.to_le_bytes());
        logged.head[4..8].copy_from_slice(&crc.to_le_bytes());
        logged
    }

    /// The frame, in the pieces it is written from.
    pub fn pieces(&self) -> [&[u8]; 4] {
        match &self.same_as {
            Some(reference) => [&self.head, &self.row.request_body.0, reference, &[]],
            None => [&self.head, &self.row.request_body.0, &self.response_len, &self.row.response_body.0],
        }
    }

    /// Add the row's stored form to a segment's payload, its response body as row
    /// `same_as`'s (an earlier row of that segment) when given.
    pub fn push_row(&self, out: &mut Vec<u8>, same_as: Option<u64>) {
        out.extend_from_slice(&self.head[self.row_at..]);
        out.extend_from_slice(&self.row.request_body.0);
        match same_as {
            Some(seq) => out.extend_from_slice(&super::segment::reference(seq)),
            None => {
                out.extend_from_slice(&self.response_len);
                out.extend_from_slice(&self.row.response_body.0);
            }
        }
    }

    /// The frame's length in bytes.
    pub fn len(&self) -> usize {
        self.pieces().iter().map(|p| p.len()).sum()
    }

    /// The frame as one buffer, as it is in the file.
    #[cfg(test)]
    pub fn frame(&self) -> Vec<u8> {
        self.pieces().concat()
    }
}

/// The log of a live store: the file being appended to, and the rows logged since the
/// writer last took them.
pub(super) struct RowLog {
    /// `live.db`: log files are `live.db-log.<n>` beside it.
    db: PathBuf,
    mode: Durability,
    state: Mutex<LogState>,
    /// Whether rows are held (`LogState::failing` says why): every request reads this, and
    /// must not queue for the lock behind an append's write.
    held: AtomicBool,
    /// `sync` mode: answers waiting for the log's fsync, and the thread that does it.
    unsynced: Mutex<Unsynced>,
    to_sync: Condvar,
}

struct LogState {
    file: Arc<File>,
    number: u64,
    len: u64,
    /// Logged, not yet taken by the writer, in log order.
    pending: Vec<Logged>,
    pending_bytes: usize,
    /// Rows whose write failed, in order, with their answers, while the disk refuses: each
    /// later row queues behind them, so a tape's rows reach the log in order.
    held: Vec<(Logged, Done)>,
    /// Rows waiting for the thread that is writing (`writing`) to write them next.
    queued: Vec<(Logged, Done)>,
    writing: bool,
    /// `window` mode: (file number, length) when [`RowLog::sync_all`] last ran.
    synced: Option<(u64, u64)>,
    /// Why the last write failed, while rows are held.
    failing: Option<String>,
    /// Files with rows not all committed to the database yet, oldest first, besides `file`.
    retired: Vec<PathBuf>,
    stopped: bool,
}

#[derive(Default)]
struct Unsynced {
    waiting: Vec<(Arc<File>, Done)>,
    stopped: bool,
}

/// What the writer takes from the log for one commit.
pub(super) struct Taken {
    pub rows: Vec<Logged>,
    /// Log files that may go once these rows are committed (and the database's log synced).
    pub retired: Vec<PathBuf>,
}

pub(super) fn log_path(db: &Path, number: u64) -> PathBuf {
    let mut name = db.as_os_str().to_os_string();
    name.push(format!("-log.{number}"));
    name.into()
}

/// The log files beside `db`, oldest first.
pub(super) fn log_files(db: &Path) -> std::io::Result<Vec<(u64, PathBuf)>> {
    let dir = match db.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let prefix = format!("{}-log.", db.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned()));
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(n) = name.strip_prefix(&prefix).and_then(|n| n.parse::<u64>().ok()) {
            out.push((n, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

fn create(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new().append(true).create(true).mode(0o600).open(path)
}

/// The frames of one log file that read back whole: (seq, sandbox, twin, row part). Replay stops
/// at the first frame that is cut short or does not match its checksum, and says how many
/// bytes it passed over.
pub(super) fn read_frames(bytes: &[u8]) -> (Vec<(u64, String, String, &[u8])>, usize) {
    let mut out = Vec::new();
    let mut at = 0;
    while bytes.len() - at >= 8 {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes")) as usize;
        let crc = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().expect("four bytes"));
        let Some(body) = bytes.get(at + 8..at + 8 + len) else { break };
        if crc32fast::hash(body) != crc {
            break;
        }
        let Some((seq, mut rest)) = body.split_first_chunk::<8>() else { break };
        let seq = u64::from_le_bytes(*seq);
        let mut name = || -> Option<String> {
            let n = u16::from_le_bytes(rest.get(..2)?.try_into().ok()?) as usize;
            let s = std::str::from_utf8(rest.get(2..2 + n)?).ok()?.to_string();
            rest = &rest[2 + n..];
            Some(s)
        };
        let (Some(sandbox), Some(twin)) = (name(), name()) else { break };
        out.push((seq, sandbox, twin, rest));
        at += 8 + len;
    }
    (out, bytes.len() - at)
}

impl RowLog {
    /// Begin log file `number` beside `db` (the files before it have been replayed).
    pub fn open(db: &Path, mode: Durability, number: u64) -> std::io::Result<Arc<RowLog>> {
        let file = create(&log_path(db, number))?;
        let log = Arc::new(RowLog {
            db: db.to_path_buf(),
            mode,
            held: AtomicBool::new(false),
            state: Mutex::new(LogState {
                file: Arc::new(file),
                number,
                len: 0,
                pending: Vec::new(),
                pending_bytes: 0,
                held: Vec::new(),
                queued: Vec::new(),
                writing: false,
                synced: None,
                failing: None,
                retired: Vec::new(),
                stopped: false,
            }),
            unsynced: Mutex::new(Unsynced::default()),
            to_sync: Condvar::new(),
        });
        if mode == Durability::Sync {
            let l = log.clone();
            std::thread::Builder::new().name("pome-live-fsync".into()).spawn(move || l.sync_loop())?;
        }
        Ok(log)
    }

    /// Log rows, in order; each one's `done` runs once it is as durable as the mode
    /// promises: in `window`, at once, after the write; in `sync`, after the fsync that
    /// covers it. Returns how many bytes wait for the writer, so the caller can wake it early.
    ///
    /// The write happens outside the lock. A row that arrives while another thread is
    /// writing is queued, and that thread writes it next, with everything else queued
    /// meanwhile, in one `writev` (group commit): no thread sleeps on this lock while a write
    /// is in the kernel, where ext4 may hold it for a journal commit.
    pub fn append(&self, rows: Vec<(Logged, Done)>) -> usize {
        let mut st = self.state.lock().unwrap();
        if st.stopped {
            drop(st);
            rows.into_iter().for_each(|(_, done)| done(Err("the live-sandbox writer stopped".into())));
            return 0;
        }
        if !st.held.is_empty() {
            st.held.extend(rows);
            return 0;
        }
        st.queued.extend(rows);
        if st.writing {
            return 0;
        }
        st.writing = true;
        let mut waiting = 0;
        loop {
            let batch = std::mem::take(&mut st.queued);
            if batch.is_empty() {
                st.writing = false;
                return waiting;
            }
            // Only the thread that set `writing` writes, and `take` does not begin a new file
            // meanwhile, so the file and its length stay as read here.
            let (file, len) = (st.file.clone(), st.len);
            drop(st);
            let written = write_frames(&file, len, batch.iter().map(|(l, _)| l));
            st = self.state.lock().unwrap();
            match written {
                Ok(n) => {
                    st.len += n;
                    let mut dones = Vec::with_capacity(batch.len());
                    for (logged, done) in batch {
                        st.pending_bytes += logged.len();
                        st.pending.push(logged);
                        dones.push(done);
                    }
                    waiting = st.pending_bytes;
                    drop(st);
                    for done in dones {
                        self.logged(file.clone(), done);
                    }
                    st = self.state.lock().unwrap();
                }
                Err(e) => {
                    tracing::error!(error = %e, "writing the live-sandbox log failed; holding its rows and retrying");
                    st.failing = Some(e.to_string());
                    let queued = std::mem::take(&mut st.queued);
                    st.held.extend(batch.into_iter().chain(queued));
                    self.held.store(true, Ordering::Release);
                    st.writing = false;
                    return 0;
                }
            }
        }
    }

    /// A row is in the log: release its answer per the mode.
    fn logged(&self, file: Arc<File>, done: Done) {
        match self.mode {
            Durability::Sync => {
                let mut u = self.unsynced.lock().unwrap();
                let first = u.waiting.is_empty();
                u.waiting.push((file, done));
                drop(u);
                if first {
                    self.to_sync.notify_one();
                }
            }
            _ => done(Ok(())),
        }
    }

    /// Why rows cannot be logged now, if they cannot.
    pub fn failing(&self) -> Option<String> {
        if !self.held.load(Ordering::Acquire) {
            return None;
        }
        self.state.lock().unwrap().failing.clone()
    }

    /// Try the held rows again, in order; true once none are held.
    pub fn retry_held(&self) -> bool {
        let mut st = self.state.lock().unwrap();
        if st.writing {
            // A failed write is still moving its rows here; next time.
            return false;
        }
        let mut released = Vec::new();
        let held = std::mem::take(&mut st.held);
        let mut rest = held.into_iter();
        for (logged, done) in rest.by_ref() {
            match write_frames(&st.file, st.len, std::iter::once(&logged)) {
                Ok(n) => st.len += n,
                Err(e) => {
                    st.failing = Some(e.to_string());
                    st.held.push((logged, done));
                    break;
                }
            }
            st.pending_bytes += logged.len();
            st.pending.push(logged);
            released.push(done);
        }
        st.held.extend(rest);
        let clear = st.held.is_empty();
        self.held.store(!clear, Ordering::Release);
        if clear && st.failing.take().is_some() {
            tracing::info!("writing the live-sandbox log works again; the held rows are logged");
        }
        let file = st.file.clone();
        drop(st);
        for done in released {
            self.logged(file.clone(), done);
        }
        clear
    }

    /// Take the rows logged so far for the writer to commit, beginning a new file first if
    /// this one has grown past [`ROTATE_BYTES`].
    pub fn take(&self) -> Taken {
        let mut st = self.state.lock().unwrap();
        if st.len >= ROTATE_BYTES && st.held.is_empty() && !st.writing {
            let number = st.number + 1;
            match create(&log_path(&self.db, number)) {
                Ok(file) => {
                    // Not fsynced: its rows are in the batch being taken, and the file goes
                    // once they are committed and the database's log is fsynced. (`sync`
                    // mode fsynced each row before its answer; should commits stall, the
                    // syncer fsyncs every log file, this one included.)
                    let old = log_path(&self.db, st.number);
                    st.retired.push(old);
                    (st.file, st.number, st.len) = (Arc::new(file), number, 0);
                }
                Err(e) => tracing::warn!(error = %e, "beginning a new live-sandbox log file failed; the current one goes on"),
            }
        }
        st.pending_bytes = 0;
        Taken { rows: std::mem::take(&mut st.pending), retired: std::mem::take(&mut st.retired) }
    }

    /// Fsync every log file, if anything was logged since the last time: `window` mode's
    /// syncer does this when commits stall (a slow or failing database), since the rows
    /// then wait in the log alone. Otherwise a log's pages need never reach the disk: its
    /// rows are committed to the database (whose log is fsynced) and the file goes, usually
    /// before the kernel would write it back.
    pub fn sync_all(&self) {
        {
            let mut st = self.state.lock().unwrap();
            let logged = (st.number, st.len);
            if st.synced.replace(logged) == Some(logged) {
                return;
            }
        }
        for (_, path) in log_files(&self.db).unwrap_or_default() {
            if let Err(e) = File::open(&path).and_then(|f| f.sync_data())
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::warn!(error = %e, file = %path.display(), "fsync of the live-sandbox log failed");
            }
        }
    }

    /// Refuse rows from now on (the writer commits what was logged, then ends).
    pub fn stop(&self) {
        self.state.lock().unwrap().stopped = true;
        self.unsynced.lock().unwrap().stopped = true;
        self.to_sync.notify_one();
    }

    /// Rows that failed to be logged are answered with why, at shutdown.
    pub fn give_up_held(&self, why: &str) {
        let held = std::mem::take(&mut self.state.lock().unwrap().held);
        self.held.store(false, Ordering::Release);
        for (_, done) in held {
            done(Err(why.to_string()));
        }
    }

    pub fn has_held(&self) -> bool {
        self.held.load(Ordering::Acquire)
    }

    /// `sync` mode: fsync for every answer waiting, many at a time (group commit).
    fn sync_loop(&self) {
        loop {
            let waiting = {
                let mut u = self.unsynced.lock().unwrap();
                while u.waiting.is_empty() && !u.stopped {
                    u = self.to_sync.wait(u).unwrap();
                }
                if u.waiting.is_empty() {
                    return;
                }
                std::mem::take(&mut u.waiting)
            };
            // Every file the answers were written to (two across a rotation).
            let mut files: Vec<&Arc<File>> = Vec::new();
            for (f, _) in &waiting {
                if !files.iter().any(|g| Arc::ptr_eq(g, f)) {
                    files.push(f);
                }
            }
            let result = files.iter().try_for_each(|f| f.sync_data()).map_err(|e| format!("fsync of the live-sandbox log failed: {e}"));
            if let Err(e) = &result {
                tracing::error!(error = %e, "an fsync failed; the answers that waited on it are refused");
            }
            for (_, done) in waiting {
                done(result.clone());
            }
        }
    }
}

/// Append frames to `file`, `len` bytes long, with `writev` (as many pieces a call as the
/// kernel takes); returns the bytes written. A write the disk refuses halfway is cut off
/// again, so the file never holds a partial frame followed by whole ones.
fn write_frames<'a>(file: &File, len: u64, frames: impl Iterator<Item = &'a Logged>) -> std::io::Result<u64> {
    /// Linux's `IOV_MAX`: a `writev` of more pieces is refused.
    const MAX_PIECES: usize = 1024;
    let mut slices: Vec<std::io::IoSlice> = frames.flat_map(|f| f.pieces()).filter(|p| !p.is_empty()).map(std::io::IoSlice::new).collect();
    let total: usize = slices.iter().map(|s| s.len()).sum();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        let upto = rest.len().min(MAX_PIECES);
        match (&*file).write_vectored(&rest[..upto]) {
            Ok(0) => {
                let _ = file.set_len(len);
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            Ok(n) => std::io::IoSlice::advance_slices(&mut rest, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                let _ = file.set_len(len);
                return Err(e);
            }
        }
    }
    Ok(total as u64)
}
