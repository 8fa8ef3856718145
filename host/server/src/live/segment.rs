//! The stored form of tape rows, shared by the row log's frames and the databases' segments.
//!
//! A row is its JSON without the bodies (`TapeRow::write_json_without_bodies`), then the
//! request body, then the response body, each after its length (u32, little-endian). The
//! bodies are most of a row and are kept as they are, not escaped into JSON strings.
//!
//! A response body the same as an earlier row's of the same tape may be written as a
//! reference instead: [`SAME_AS`] in place of its length, then that row's seq (u64). Clients
//! repeat themselves (an agent polls a list; a benchmark asks for it 30,000 times a second),
//! and the store already shares one copy of a repeated answer in memory; written out each
//! time, the copies were most of what the disk was given. In a segment a reference points
//! to an earlier row of the same segment, so a segment reads back alone; in the row log it
//! points to any earlier row of the tape, which a replay finds earlier in the log or, once
//! committed, in the database.

use bytes::Bytes;
use pome_tape::{Body, TapeRow};

/// In place of a response body's length: the body is that of the row whose seq follows.
/// No body is this long (answers are capped far below 4 GiB).
pub(super) const SAME_AS: u32 = u32::MAX;

/// The rows of one tape written by one commit: each row's stored form, one after another;
/// the database keeps them LZ4-compressed.
#[derive(Default)]
pub(super) struct Segment {
    pub first: u64,
    pub last: u64,
    pub payload: Vec<u8>,
}

/// The stored form of `row`, its response body written as a reference to row `same_as`'s
/// when given.
pub(super) fn encode_row(out: &mut Vec<u8>, row: &TapeRow, same_as: Option<u64>) {
    encode_head(out, row);
    out.extend_from_slice(&row.request_body.0);
    match same_as {
        Some(seq) => out.extend_from_slice(&reference(seq)),
        None => {
            out.extend_from_slice(&(row.response_body.0.len() as u32).to_le_bytes());
            out.extend_from_slice(&row.response_body.0);
        }
    }
}

/// The start of `encode_row`'s form, up to the request body: the JSON, after its length,
/// then the request body's length.
pub(super) fn encode_head(out: &mut Vec<u8>, row: &TapeRow) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    row.write_json_without_bodies(out);
    let meta = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&meta.to_le_bytes());
    out.extend_from_slice(&(row.request_body.0.len() as u32).to_le_bytes());
}

/// A response body written as the same as row `seq`'s.
pub(super) fn reference(seq: u64) -> [u8; 12] {
    let mut r = [0; 12];
    r[..4].copy_from_slice(&SAME_AS.to_le_bytes());
    r[4..].copy_from_slice(&seq.to_le_bytes());
    r
}

/// How a stored row gives its response body.
#[derive(Debug, PartialEq)]
pub(super) enum Response<'a> {
    Inline(&'a [u8]),
    SameAs(u64),
}

/// Where in one stored row (`encode_row`'s form, and nothing after it) its response begins
/// (at its length), and what it is; `None` for a row that is not whole.
pub(super) fn response_of(row: &[u8]) -> Option<(usize, Response<'_>)> {
    let len_at = |at: usize| -> Option<usize> { Some(u32::from_le_bytes(row.get(at..at + 4)?.try_into().ok()?) as usize) };
    let request_at = 4 + len_at(0)?;
    let response_at = request_at.checked_add(4 + len_at(request_at)?)?;
    let tail = row.get(response_at + 4..)?;
    match len_at(response_at)? as u32 {
        SAME_AS => Some((response_at, Response::SameAs(u64::from_le_bytes(tail.try_into().ok()?)))),
        n if tail.len() == n as usize => Some((response_at, Response::Inline(tail))),
        _ => None,
    }
}

/// The last few response bodies a tape wrote out whole, to find a later row's body among
/// them and write a reference instead. The store hands a repeated answer over as the same
/// allocation (`share_recorded`), so most are found by address; holding the bytes keeps
/// that exact (an address is never reused while held), and equal lengths are compared too.
#[derive(Default)]
pub(super) struct RecentBodies {
    ring: std::collections::VecDeque<(u64, Bytes)>,
    held: usize,
}

impl RecentBodies {
    /// Bodies remembered at once: an agent alternating between a few reads still repeats.
    const MAX: usize = 4;
    /// Bytes held at most: a tape's log keeps these alive past its rows, so it stays small.
    const MAX_BYTES: usize = 64 << 10;
    /// Shorter bodies are written out: a reference is 12 bytes.
    const FROM: usize = 64;

    /// The seq of an earlier row whose response body is `body`, to write instead of it; or
    /// `None`, and row `seq`'s body (written out whole) is remembered.
    pub fn refer(&mut self, seq: u64, body: &Bytes) -> Option<u64> {
        if body.len() < Self::FROM {
            return None;
        }
        let same = |b: &Bytes| (b.as_ptr() == body.as_ptr() && b.len() == body.len()) || b == body;
        if let Some((s, _)) = self.ring.iter().find(|(_, b)| same(b)) {
            return Some(*s);
        }
        if body.len() <= Self::MAX_BYTES {
            self.ring.push_back((seq, body.clone()));
            self.held += body.len();
            while self.ring.len() > Self::MAX || self.held > Self::MAX_BYTES {
                let (_, gone) = self.ring.pop_front().expect("a ring over its bounds is not empty");
                self.held -= gone.len();
            }
        }
        None
    }
}

impl Segment {
    /// Add row `seq`, already in its stored form (`encode_row`).
    pub fn push_encoded(&mut self, seq: u64, encoded: &[u8]) {
        (self.first, self.last) = if self.payload.is_empty() { (seq, seq) } else { (self.first.min(seq), self.last.max(seq)) };
        self.payload.extend_from_slice(encoded);
    }

    /// The rows of a stored segment (its length, then the LZ4-compressed payload).
    pub fn decode(stored: &[u8]) -> Result<Vec<TapeRow>, String> {
        // LZ4 expands at most 255 to 1: a size header claiming more is a corrupt segment, and
        // must not make us allocate what it claims.
        let claimed = stored.get(..4).map_or(0, |n| u32::from_le_bytes(n.try_into().expect("four bytes")) as usize);
        if claimed > stored.len().saturating_mul(255) + 16 {
            return Err(format!("a segment claims {claimed} bytes from {} stored", stored.len()));
        }
        let payload = Bytes::from(lz4_flex::decompress_size_prepended(stored).map_err(|e| e.to_string())?);
        // The decompressor stops where its input does: a segment cut just after an LZ4 match
        // decompresses without error to fewer bytes, which may even be whole rows.
        if payload.len() != claimed {
            return Err(format!("a segment is cut short: {} of the {claimed} bytes it claims", payload.len()));
        }
        // The next length, and the part it measures (shared with the payload, not copied);
        // or, for a reference, `SAME_AS` and the referred row's seq.
        fn part(rest: &mut Bytes) -> Result<Result<Bytes, u64>, String> {
            const SHORT: &str = "a segment ends mid-row";
            let len = u32::from_le_bytes(rest.get(..4).ok_or(SHORT)?.try_into().expect("four bytes"));
            if len == SAME_AS {
                let seq = u64::from_le_bytes(rest.get(4..12).ok_or(SHORT)?.try_into().expect("eight bytes"));
                *rest = rest.slice(12..);
                return Ok(Err(seq));
            }
            let len = len as usize;
            if rest.len() < 4 + len {
                return Err(SHORT.into());
            }
            let part = rest.slice(4..4 + len);
            *rest = rest.slice(4 + len..);
            Ok(Ok(part))
        }
        let inline = |p: Result<Bytes, u64>| p.map_err(|seq| format!("a segment refers to row {seq} where no reference may be"));
        let mut rest = payload;
        let mut rows: Vec<TapeRow> = Vec::new();
        while !rest.is_empty() {
            let mut row: TapeRow = serde_json::from_slice(&inline(part(&mut rest)?)?).map_err(|e| e.to_string())?;
            row.request_body = Body(inline(part(&mut rest)?)?);
            row.response_body = Body(match part(&mut rest)? {
                Ok(body) => body,
                Err(seq) => match rows.iter().rev().find(|r| r.seq == seq) {
                    Some(earlier) => earlier.response_body.0.clone(),
                    None => return Err(format!("row {} refers to row {seq}, which is not before it in its segment", row.seq)),
                },
            });
            rows.push(row);
        }
        Ok(rows)
    }
}
