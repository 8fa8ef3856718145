//! What every tenant of one server shares, bounded: heavy work that holds memory or a thread
//! for long (a tape streamed out, a run loaded whole, a run being graded) and live streams
//! per team. Each limit is a named default saying why that number, with one `pome serve`
//! flag; [`Gates`] applies them and is built once into `App`. (Limits of one twin store —
//! memory, CPU, tape caps — are `pome_runtime::limits`.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

/// Tape streams and run downloads served at once: each holds a thread and a page of rows.
/// More only queue behind one another on 2 cores; fewer would let one slow reader block
/// the next team's download.
pub const BULK_STREAMS: usize = 4;
/// Whole runs loaded at once (reports, MCP `get_run`): a run at the tape caps is hundreds of
/// megabytes in memory.
pub const WHOLE_RUNS: usize = 2;
/// Finalizes collecting and grading at once: each holds its sandbox's tapes, worlds and
/// grading copies until its run is stored.
pub const FINALIZE_JOBS: usize = 2;
/// Live dashboard streams one team may hold open: each polls every open twin store.
pub const TEAM_STREAMS: usize = 8;
/// Worlds one team may have rebuilt at once (forks, states at a tape position): each
/// replays up to a whole tape on a background thread, which checkpoints share.
pub const TEAM_REBUILDS: usize = 2;

/// The server-wide limits, as `pome serve` was given them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostLimits {
    pub bulk_streams: usize,
    pub whole_runs: usize,
    pub finalize_jobs: usize,
    pub team_streams: usize,
    pub team_rebuilds: usize,
}

impl Default for HostLimits {
    fn default() -> HostLimits {
        HostLimits { bulk_streams: BULK_STREAMS, whole_runs: WHOLE_RUNS, finalize_jobs: FINALIZE_JOBS, team_streams: TEAM_STREAMS, team_rebuilds: TEAM_REBUILDS }
    }
}

/// The permits that apply [`HostLimits`].
pub struct Gates {
    pub bulk_streams: Arc<Semaphore>,
    pub whole_runs: Arc<Semaphore>,
    pub finalize_jobs: Semaphore,
    pub team_streams: Arc<PerTeam>,
    pub team_rebuilds: Arc<PerTeam>,
}

impl Gates {
    pub fn new(l: HostLimits) -> Gates {
        Gates {
            bulk_streams: Arc::new(Semaphore::new(l.bulk_streams.max(1))),
            whole_runs: Arc::new(Semaphore::new(l.whole_runs.max(1))),
            finalize_jobs: Semaphore::new(l.finalize_jobs.max(1)),
            team_streams: Arc::new(PerTeam { limit: l.team_streams.max(1), open: Mutex::default() }),
            team_rebuilds: Arc::new(PerTeam { limit: l.team_rebuilds.max(1), open: Mutex::default() }),
        }
    }
}

/// Something each team holds a few of at once (live streams, world rebuilds).
pub struct PerTeam {
    pub limit: usize,
    open: Mutex<HashMap<String, usize>>,
}

/// A team's hold on one of its slots; given back when dropped.
pub struct TeamSlot {
    streams: Arc<PerTeam>,
    team: String,
}

impl PerTeam {
    /// One more for `team`, unless it holds its limit already.
    pub fn take(self: &Arc<Self>, team: &str) -> Option<TeamSlot> {
        let mut open = self.open.lock().unwrap();
        let n = open.entry(team.to_string()).or_default();
        if *n >= self.limit {
            return None;
        }
        *n += 1;
        Some(TeamSlot { streams: self.clone(), team: team.to_string() })
    }
}

impl Drop for TeamSlot {
    fn drop(&mut self) {
        let mut open = self.streams.open.lock().unwrap();
        if let Some(n) = open.get_mut(&self.team) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.team);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_team_gets_its_streams_up_to_the_limit_and_one_back_when_one_ends() {
        let streams = Gates::new(HostLimits { team_streams: 2, ..HostLimits::default() }).team_streams;
        let (a, _b) = (streams.take("t").unwrap(), streams.take("t").unwrap());
        assert!(streams.take("t").is_none(), "the third is refused");
        assert!(streams.take("other").is_some(), "another team is not counted against it");
        drop(a);
        assert!(streams.take("t").is_some(), "an ended stream gives its slot back");
    }
}
