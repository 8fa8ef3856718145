//! File-level diffs between two trees, in GitHub's `diff-entry` shape (with unified `patch`
//! hunks), shared by commits, compare and pull request files.

use pome_twin_sdk::{Value, json};

use crate::git::{Flat, GitStore};
use crate::render::enc_path;

#[derive(Debug, Clone)]
pub struct FileDiff {
    pub filename: String,
    pub status: &'static str,
    pub sha: Option<String>,
    pub additions: u64,
    pub deletions: u64,
    pub patch: Option<String>,
}

fn text_of<'a>(g: &'a GitStore, sha: Option<&String>) -> Option<&'a str> {
    match sha {
        None => Some(""),
        Some(s) => g.blob_bytes(s).and_then(|b| std::str::from_utf8(b).ok()),
    }
}

fn patch_of(old: &str, new: &str) -> (u64, u64, String) {
    let d = similar::TextDiff::from_lines(old, new);
    let mut add = 0;
    let mut del = 0;
    for c in d.iter_all_changes() {
        match c.tag() {
            similar::ChangeTag::Insert => add += 1,
            similar::ChangeTag::Delete => del += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    let mut patch = String::new();
    for h in d.unified_diff().context_radius(3).iter_hunks() {
        patch.push_str(&h.to_string());
    }
    (add, del, patch.trim_end_matches('\n').to_string())
}

/// Files that differ between two flat trees, by path.
pub fn diff_flat(g: &GitStore, a: &Flat, b: &Flat) -> Vec<FileDiff> {
    let mut paths: Vec<&String> = a.keys().chain(b.keys()).collect();
    paths.sort();
    paths.dedup();
    let mut out = Vec::new();
    for p in paths {
        let (old, new) = (a.get(p), b.get(p));
        if old == new {
            continue;
        }
        let status = match (old, new) {
            (None, Some(_)) => "added",
            (Some(_), None) => "removed",
            _ => "modified",
        };
        let (ot, nt) = (text_of(g, old.map(|x| &x.1)), text_of(g, new.map(|x| &x.1)));
        let (additions, deletions, patch) = match (ot, nt) {
            (Some(o), Some(n)) => {
                let (a, d, p) = patch_of(o, n);
                (a, d, Some(p))
            }
            _ => (0, 0, None),
        };
        out.push(FileDiff {
            filename: p.clone(),
            status,
            sha: new.or(old).map(|x| x.1.clone()),
            additions,
            deletions,
            patch,
        });
    }
    out
}

/// Diff between two trees (by tree sha).
pub fn diff_trees(g: &GitStore, a: &str, b: &str) -> Vec<FileDiff> {
    diff_flat(g, &g.flatten(a), &g.flatten(b))
}

/// A whole diff as `git diff` prints it (the `application/vnd.github.diff` media type).
pub fn unified(files: &[FileDiff], old: &crate::git::Flat, new: &crate::git::Flat) -> String {
    let mut out = String::new();
    for f in files {
        let p = &f.filename;
        out.push_str(&format!("diff --git a/{p} b/{p}\n"));
        let short = |x: Option<&(String, String)>| x.map(|v| v.1[..7].to_string()).unwrap_or_else(|| "0000000".into());
        match f.status {
            "added" => out.push_str(&format!("new file mode 100644\nindex 0000000..{}\n--- /dev/null\n+++ b/{p}\n", short(new.get(p)))),
            "removed" => out.push_str(&format!("deleted file mode 100644\nindex {}..0000000\n--- a/{p}\n+++ /dev/null\n", short(old.get(p)))),
            _ => out.push_str(&format!("index {}..{} 100644\n--- a/{p}\n+++ b/{p}\n", short(old.get(p)), short(new.get(p)))),
        }
        match &f.patch {
            Some(patch) if !patch.is_empty() => {
                out.push_str(patch);
                out.push('\n');
            }
            Some(_) => {}
            None => out.push_str("Binary files differ\n"),
        }
    }
    out
}

/// The media type a client asked for with `Accept`: `diff`, `patch` or JSON.
pub fn wants(accept: Option<&str>) -> Option<&'static str> {
    let a = accept.unwrap_or("");
    if a.contains(".diff") {
        Some("diff")
    } else if a.contains(".patch") {
        Some("patch")
    } else {
        None
    }
}

pub fn entry_json(base: &str, full_name: &str, reference: &str, f: &FileDiff) -> Value {
    let p = enc_path(&f.filename);
    let mut v = json!({
        "sha": f.sha, "filename": f.filename, "status": f.status,
        "additions": f.additions, "deletions": f.deletions, "changes": f.additions + f.deletions,
        "blob_url": format!("{base}/{full_name}/blob/{reference}/{p}"),
        "raw_url": format!("{base}/{full_name}/raw/{reference}/{p}"),
        "contents_url": format!("{base}/repos/{full_name}/contents/{p}?ref={reference}"),
    });
    if let Some(patch) = &f.patch {
        v.as_object_mut().unwrap().insert("patch".into(), json!(patch));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_counts_lines() {
        let (a, d, p) = patch_of("a\nb\nc\n", "a\nB\nc\nd\n");
        assert_eq!((a, d), (2, 1));
        assert!(p.starts_with("@@ -1,3 +1,4 @@"), "{p}");
    }
}
