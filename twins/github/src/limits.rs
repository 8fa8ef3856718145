//! Limits of the GitHub twin's own making: where GitHub's limit is larger than a sandbox
//! can hold, the twin's smaller one, each answered in GitHub's shape. (GitHub's own limits
//! the twin keeps live beside the code they bound: `webhooks::MAX_HOOKS`,
//! `handlers::gists::MAX_FILE_CONTENT`.)

/// Largest release asset, bytes. GitHub takes up to 2 GiB; a sandbox's whole world lives in
/// a store capped at 128 MiB (the host's `--store-memory-mib`) and is copied into every
/// snapshot, and the host passes at most 16 MiB of request body (`--request-body-mib`), so
/// 8 MiB: room for a build artefact, a release's binaries or a checksum file, answered 422.
pub const MAX_ASSET_BYTES: usize = 8 << 20;

/// Bytes of release assets one sandbox may hold together: four assets at the cap, a quarter
/// of the store's memory, leaving the rest for the world and its snapshot.
pub const MAX_ASSET_BYTES_PER_SANDBOX: usize = 32 << 20;

/// Assets one release may have: GitHub's limit.
pub const MAX_ASSETS_PER_RELEASE: usize = 1000;

/// Contexts, users, teams or apps one branch protection list may hold: far above any real
/// rule (GitHub sets no documented cap), small enough that a tenant cannot grow a rule
/// without bound.
pub const MAX_PROTECTION_LIST: usize = 100;
