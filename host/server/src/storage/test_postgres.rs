//! The store's tests on a real PostgreSQL server (`pome-pgtest`).

pub use pome_pgtest::{Server, database};

use super::Storage;

/// A `Storage` on a new, empty database of the shared test server.
pub async fn storage() -> Storage {
    Storage::connect(&database().await).await.expect("connecting to the test PostgreSQL")
}
