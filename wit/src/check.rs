//! What a check reads and what it answers. A twin decides its own checks over JSON (its own
//! state exports and the tape), never over live objects, because a run is regraded offline
//! from what was stored with it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tape::TapeRow;

/// A check's parameters, as its template matched them (`{"repo": "acme/api"}`).
pub type Params = BTreeMap<String, String>;

/// One world to judge: the seeded world, the world now, and the tape that led there. For the
/// "already true in the seed" test the host passes the seed as both and an empty tape.
#[derive(Debug, Clone, Copy)]
pub struct CheckWorld<'a> {
    pub seed: &'a Value,
    pub state: &'a Value,
    pub tape: &'a [TapeRow],
}

/// Where the deciding fact is, so a reader can go and look.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    None,
    /// A path into the state export: `charges[3].refunds`.
    State(String),
    /// A tape row's `seq`.
    Tape(u64),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub holds: bool,
    /// One line saying why.
    pub reason: String,
    pub evidence: Evidence,
}

impl Outcome {
    pub fn new(holds: bool, reason: impl Into<String>, evidence: Evidence) -> Outcome {
        Outcome { holds, reason: reason.into(), evidence }
    }
}

impl Evidence {
    /// `Evidence::State(format!(...))` in fewer words.
    pub fn state(path: impl Into<String>) -> Evidence {
        Evidence::State(path.into())
    }
}
