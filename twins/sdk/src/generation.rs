//! What a twin's cache of rendered answers keys on: which world it is and how many writes it
//! has seen. An answer is a pure function of the world and the request, so an answer kept for
//! one generation is right until the next write.

use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_IDENTITY: AtomicU64 = AtomicU64::new(1);

/// A world's identity and its count of writes. Bookkeeping, not state: a world built by
/// `init` or `restore`, or cloned, is a new identity, and any two compare equal (two worlds
/// with equal entities are equal).
#[derive(Debug)]
pub struct Generation {
    identity: u64,
    generation: u64,
}

impl Default for Generation {
    fn default() -> Self {
        Generation { identity: NEXT_IDENTITY.fetch_add(1, Ordering::Relaxed), generation: 0 }
    }
}

impl Clone for Generation {
    /// A cloned world diverges from its original, so it is a new identity.
    fn clone(&self) -> Self {
        Generation::default()
    }
}

impl PartialEq for Generation {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Generation {
    /// A write happened: answers kept so far are stale.
    pub fn bump(&mut self) {
        self.generation += 1;
    }

    /// The key a kept answer is filed under.
    pub fn key(&self) -> (u64, u64) {
        (self.identity, self.generation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_or_a_clone_changes_the_key() {
        let mut g = Generation::default();
        let first = g.key();
        assert_ne!(g.clone().key(), first, "a clone is another world");
        g.bump();
        assert_ne!(g.key(), first);
        assert_eq!(g.key(), g.key());
    }
}
