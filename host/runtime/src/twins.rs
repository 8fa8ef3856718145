//! Which twins this host serves: the first-party twins embedded in the binary, plus any
//! third-party components in `--twins-dir` (a twin there replaces an embedded one of the
//! same name).

use std::sync::Arc;

use anyhow::Context as _;
use cap_std::fs::Dir;

use crate::engine::{Runtime, TwinSet};

/// Load every twin: `embedded` (crate name, component bytes) first, then the directory's.
/// A component that is not a valid twin is an error naming the file: a host that silently
/// skipped a twin would fail later, on a user's sandbox, with less to go on.
pub async fn load_all(rt: &Runtime, embedded: &[(&str, &[u8])], twins_dir: Option<&Dir>) -> anyhow::Result<TwinSet> {
    let mut set = TwinSet::new();
    for (name, bytes) in embedded {
        let image = rt.load(bytes, &format!("embedded twin {name}")).await?;
        set.insert(image.name.clone(), Arc::new(image));
    }
    if let Some(dir) = twins_dir {
        let mut files: Vec<String> = dir
            .entries()
            .context("reading the twins directory")?
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.ends_with(".wasm"))
            .collect();
        files.sort();
        for file in files {
            let bytes = dir.read(&file).with_context(|| format!("reading {file}"))?;
            let image = rt.load(&bytes, &file).await?;
            if set.contains_key(&image.name) {
                tracing::warn!(twin = %image.name, file = %file, "a twin in the twins directory replaces the embedded one");
            }
            set.insert(image.name.clone(), Arc::new(image));
        }
    }
    Ok(set)
}

