//! A small content-addressed git object store: blobs, trees, commits and annotated tags with
//! real SHA-1 ids computed over git's own object encoding, plus refs. Everything the
//! contents, branches, git-data, commits, compare and merge endpoints need.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Directories a file's path may nest. Git itself refuses trees deeper than 4,096
/// (`core.maxTreeDepth`); the tree writer and [`GitStore::flatten`] here recurse once per
/// directory, so the twin stops far sooner, and far past any real repository (the Linux
/// kernel's deepest path has under 20).
pub const MAX_PATH_DEPTH: usize = 256;

/// Bytes that serialise as raw bytes in snapshots and as text (lossy) in JSON state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bytes(pub Vec<u8>);

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.serialize_str(&String::from_utf8_lossy(&self.0))
        } else {
            s.serialize_bytes(&self.0)
        }
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        if d.is_human_readable() {
            Ok(Bytes(String::deserialize(d)?.into_bytes()))
        } else {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = Bytes;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("bytes")
                }
                fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Bytes, E> {
                    Ok(Bytes(v.to_vec()))
                }
                fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Bytes, E> {
                    Ok(Bytes(v))
                }
            }
            d.deserialize_byte_buf(V)
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    pub name: String,
    pub email: String,
    /// ISO 8601, UTC.
    pub date: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeEntry {
    /// `100644`, `100755`, `040000`, `120000`, `160000`.
    pub mode: String,
    pub name: String,
    pub sha: String,
}

impl TreeEntry {
    pub fn is_tree(&self) -> bool {
        self.mode == "040000" || self.mode == "40000"
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    pub tree: String,
    pub parents: Vec<String>,
    pub author: Signature,
    pub committer: Signature,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tag {
    pub tag: String,
    pub object: String,
    pub kind: String,
    pub tagger: Signature,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Object {
    Blob(Bytes),
    Tree(Vec<TreeEntry>),
    Commit(Commit),
    Tag(Tag),
}

impl Object {
    pub fn kind(&self) -> &'static str {
        match self {
            Object::Blob(_) => "blob",
            Object::Tree(_) => "tree",
            Object::Commit(_) => "commit",
            Object::Tag(_) => "tag",
        }
    }
}

/// A flat view of a tree: path → (mode, blob sha).
pub type Flat = BTreeMap<String, (String, String)>;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GitStore {
    pub objects: BTreeMap<String, Object>,
    /// Full ref name (`refs/heads/main`, `refs/tags/v1`) → sha.
    pub refs: BTreeMap<String, String>,
}

fn unix(date: &str) -> i64 {
    pome_twin_sdk::time::parse_iso(date).map(|t| t.timestamp()).unwrap_or(0)
}

fn sig_line(s: &Signature) -> String {
    format!("{} <{}> {} +0000", s.name, s.email, unix(&s.date))
}

/// Git's tree entry order: byte order of names, directories compared as if followed by `/`.
fn tree_sort_key(e: &TreeEntry) -> Vec<u8> {
    let mut k = e.name.as_bytes().to_vec();
    if e.is_tree() {
        k.push(b'/');
    }
    k
}

pub fn encode(obj: &Object) -> Vec<u8> {
    match obj {
        Object::Blob(b) => b.0.clone(),
        Object::Tree(entries) => {
            let mut out = Vec::new();
            for e in entries {
                let mode = if e.is_tree() { "40000" } else { e.mode.as_str() };
                out.extend_from_slice(mode.as_bytes());
                out.push(b' ');
                out.extend_from_slice(e.name.as_bytes());
                out.push(0);
                out.extend_from_slice(&hex_to_bytes(&e.sha));
            }
            out
        }
        Object::Commit(c) => {
            let mut s = format!("tree {}\n", c.tree);
            for p in &c.parents {
                s.push_str(&format!("parent {p}\n"));
            }
            s.push_str(&format!("author {}\n", sig_line(&c.author)));
            s.push_str(&format!("committer {}\n\n", sig_line(&c.committer)));
            s.push_str(&c.message);
            s.into_bytes()
        }
        Object::Tag(t) => format!(
            "object {}\ntype {}\ntag {}\ntagger {}\n\n{}",
            t.object,
            t.kind,
            t.tag,
            sig_line(&t.tagger),
            t.message
        )
        .into_bytes(),
    }
}

fn hex_to_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap_or(0))
        .collect()
}

pub fn object_sha(obj: &Object) -> String {
    let body = encode(obj);
    let mut h = sha1_smol::Sha1::new();
    h.update(format!("{} {}\0", obj.kind(), body.len()).as_bytes());
    h.update(&body);
    h.digest().to_string()
}

pub fn is_sha(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

impl GitStore {
    pub fn put(&mut self, mut obj: Object) -> String {
        if let Object::Tree(entries) = &mut obj {
            entries.sort_by_key(tree_sort_key);
        }
        let sha = object_sha(&obj);
        self.objects.entry(sha.clone()).or_insert(obj);
        sha
    }

    pub fn blob(&mut self, content: &[u8]) -> String {
        self.put(Object::Blob(Bytes(content.to_vec())))
    }

    pub fn get(&self, sha: &str) -> Option<&Object> {
        self.objects.get(sha)
    }

    pub fn commit(&self, sha: &str) -> Option<&Commit> {
        match self.objects.get(sha) {
            Some(Object::Commit(c)) => Some(c),
            _ => None,
        }
    }

    pub fn tree(&self, sha: &str) -> Option<&Vec<TreeEntry>> {
        match self.objects.get(sha) {
            Some(Object::Tree(t)) => Some(t),
            _ => None,
        }
    }

    pub fn blob_bytes(&self, sha: &str) -> Option<&[u8]> {
        match self.objects.get(sha) {
            Some(Object::Blob(b)) => Some(&b.0),
            _ => None,
        }
    }

    pub fn branch(&self, name: &str) -> Option<&String> {
        self.refs.get(&format!("refs/heads/{name}"))
    }

    pub fn branches(&self) -> impl Iterator<Item = (&str, &String)> {
        self.refs.iter().filter_map(|(k, v)| k.strip_prefix("refs/heads/").map(|n| (n, v)))
    }

    pub fn tags(&self) -> impl Iterator<Item = (&str, &String)> {
        self.refs.iter().filter_map(|(k, v)| k.strip_prefix("refs/tags/").map(|n| (n, v)))
    }

    /// Resolve a branch, tag, full ref or (possibly abbreviated) commit sha to a commit sha.
    pub fn resolve(&self, rev: &str) -> Option<String> {
        self.resolve_any(rev).filter(|s| self.commit(s).is_some())
    }

    fn resolve_any(&self, rev: &str) -> Option<String> {
        let rev = rev.strip_prefix("heads/").map(|r| r.to_string()).unwrap_or_else(|| rev.to_string());
        if let Some(s) = self.refs.get(&rev) {
            return Some(self.peel(s));
        }
        if let Some(s) = self.refs.get(&format!("refs/heads/{rev}")) {
            return Some(s.clone());
        }
        if let Some(s) = self.refs.get(&format!("refs/tags/{rev}")) {
            return Some(self.peel(s));
        }
        if let Some(t) = rev.strip_prefix("tags/") {
            if let Some(s) = self.refs.get(&format!("refs/tags/{t}")) {
                return Some(self.peel(s));
            }
        }
        if rev.len() >= 7 && rev.bytes().all(|b| b.is_ascii_hexdigit()) {
            let lower = rev.to_ascii_lowercase();
            if self.commit(&lower).is_some() {
                return Some(lower);
            }
            let mut hits = self
                .objects
                .range(lower.clone()..)
                .take_while(|(k, _)| k.starts_with(&lower))
                .filter(|(_, o)| matches!(o, Object::Commit(_)));
            if let (Some((k, _)), None) = (hits.next(), hits.next()) {
                return Some(k.clone());
            }
        }
        None
    }

    /// Follow annotated tags to the object they point at.
    pub fn peel(&self, sha: &str) -> String {
        let mut cur = sha.to_string();
        for _ in 0..8 {
            match self.objects.get(&cur) {
                Some(Object::Tag(t)) => cur = t.object.clone(),
                _ => break,
            }
        }
        cur
    }

    /// Every file under `tree`, by path. Recurses once per directory: paths are bounded by
    /// [`MAX_PATH_DEPTH`] where agents write them.
    pub fn flatten(&self, tree: &str) -> Flat {
        let mut out = Flat::new();
        self.flatten_into(tree, "", &mut out);
        out
    }

    fn flatten_into(&self, tree: &str, prefix: &str, out: &mut Flat) {
        let Some(entries) = self.tree(tree) else { return };
        for e in entries {
            let path = if prefix.is_empty() { e.name.clone() } else { format!("{prefix}/{}", e.name) };
            if e.is_tree() {
                self.flatten_into(&e.sha, &path, out);
            } else {
                out.insert(path, (e.mode.clone(), e.sha.clone()));
            }
        }
    }

    /// Write the nested trees for a flat file map; returns the root tree sha.
    pub fn write_flat(&mut self, flat: &Flat) -> String {
        let items: Vec<(&str, &(String, String))> = flat.iter().map(|(k, v)| (k.as_str(), v)).collect();
        self.write_level(&items)
    }

    fn write_level(&mut self, items: &[(&str, &(String, String))]) -> String {
        let mut entries = Vec::new();
        let mut dirs: BTreeMap<&str, Vec<(&str, &(String, String))>> = BTreeMap::new();
        for (path, v) in items {
            match path.split_once('/') {
                Some((dir, rest)) => dirs.entry(dir).or_default().push((rest, v)),
                None => entries.push(TreeEntry { mode: v.0.clone(), name: path.to_string(), sha: v.1.clone() }),
            }
        }
        for (dir, sub) in dirs {
            let sha = self.write_level(&sub);
            entries.push(TreeEntry { mode: "040000".into(), name: dir.to_string(), sha });
        }
        self.put(Object::Tree(entries))
    }

    /// The tree entry at `path` under `tree` (a file or a directory); `""` is the root.
    pub fn entry_at(&self, tree: &str, path: &str) -> Option<TreeEntry> {
        let path = path.trim_matches('/');
        if path.is_empty() {
            return Some(TreeEntry { mode: "040000".into(), name: String::new(), sha: tree.to_string() });
        }
        let mut cur = tree.to_string();
        let parts: Vec<&str> = path.split('/').collect();
        for (i, part) in parts.iter().enumerate() {
            let e = self.tree(&cur)?.iter().find(|e| e.name == *part)?.clone();
            if i + 1 == parts.len() {
                return Some(e);
            }
            if !e.is_tree() {
                return None;
            }
            cur = e.sha;
        }
        None
    }

    /// Ancestors of `sha` including itself, newest first along first parents, then the rest
    /// in visit order. Stops after `limit` commits.
    pub fn history(&self, sha: &str, limit: usize) -> Vec<String> {
        let mut out = Vec::new();
        let mut seen = BTreeSet::new();
        let mut queue = std::collections::VecDeque::from([sha.to_string()]);
        while let Some(s) = queue.pop_front() {
            if out.len() >= limit {
                break;
            }
            if !seen.insert(s.clone()) {
                continue;
            }
            if let Some(c) = self.commit(&s) {
                for p in &c.parents {
                    queue.push_back(p.clone());
                }
                out.push(s);
            }
        }
        out
    }

    pub fn is_ancestor(&self, ancestor: &str, of: &str) -> bool {
        self.history(of, usize::MAX).iter().any(|s| s == ancestor)
    }

    /// The nearest common ancestor of two commits (breadth-first from `b`).
    pub fn merge_base(&self, a: &str, b: &str) -> Option<String> {
        let ancestors: BTreeSet<String> = self.history(a, usize::MAX).into_iter().collect();
        self.history(b, usize::MAX).into_iter().find(|s| ancestors.contains(s))
    }

    /// Commits reachable from `head` but not from `base`, oldest first.
    pub fn commits_between(&self, base: &str, head: &str) -> Vec<String> {
        let excluded: BTreeSet<String> = self.history(base, usize::MAX).into_iter().collect();
        let mut v: Vec<String> =
            self.history(head, usize::MAX).into_iter().filter(|s| !excluded.contains(s)).collect();
        v.reverse();
        v
    }

    /// Three-way merge of trees at file granularity. `Err(paths)` lists conflicting files.
    pub fn merge_trees(&mut self, base: &str, ours: &str, theirs: &str) -> Result<String, Vec<String>> {
        let b = self.flatten(base);
        let o = self.flatten(ours);
        let t = self.flatten(theirs);
        let mut paths: BTreeSet<&String> = b.keys().collect();
        paths.extend(o.keys());
        paths.extend(t.keys());
        let mut out = Flat::new();
        let mut conflicts = Vec::new();
        for p in paths {
            let (bv, ov, tv) = (b.get(p), o.get(p), t.get(p));
            let pick = if ov == tv {
                ov
            } else if ov == bv {
                tv
            } else if tv == bv {
                ov
            } else {
                conflicts.push(p.clone());
                continue;
            };
            if let Some(v) = pick {
                out.insert(p.clone(), v.clone());
            }
        }
        if conflicts.is_empty() { Ok(self.write_flat(&out)) } else { Err(conflicts) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_and_tree_shas_match_git() {
        let mut g = GitStore::default();
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(g.blob(b"hello\n"), "ce013625030ba8dba906f756967f9e9ca394464a");
        // The empty tree every git knows.
        assert_eq!(g.put(Object::Tree(vec![])), "4b825dc642cb6eb9a060e54bf8d69288fbee4904");
    }

    #[test]
    fn nested_paths_round_trip_through_trees() {
        let mut g = GitStore::default();
        let a = g.blob(b"a");
        let b = g.blob(b"b");
        let mut flat = Flat::new();
        flat.insert("src/lib.rs".into(), ("100644".into(), a.clone()));
        flat.insert("README.md".into(), ("100644".into(), b.clone()));
        let root = g.write_flat(&flat);
        assert_eq!(g.flatten(&root), flat);
        assert_eq!(g.entry_at(&root, "src/lib.rs").unwrap().sha, a);
        assert!(g.entry_at(&root, "src").unwrap().is_tree());
    }
}
