//! A run across ranks as the load merged it ([`Ranks`]): its ranks, how
//! their ids and workers were renumbered, its cross-rank streams. Data, with
//! the names reports give them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

/// A run across ranks, as the load merged it (see the module
/// documentation).
#[derive(Clone, Debug, Serialize)]
pub struct Ranks {
    /// The ranks whose logs were found, by rank.
    pub ranks: Vec<RankInfo>,
    /// Rank R's ids are `R · id_stride + its own id`.
    pub id_stride: u64,
    /// The largest residual clock error any rank's `rank.json` states
    /// (`None` when none states one).
    pub clock_residual_ns: Option<u64>,
    /// The cross-rank streams, by merged stream id (a list in JSON).
    #[serde(serialize_with = "values")]
    pub cross_streams: BTreeMap<u64, CrossStream>,
}

/// A map's values as a JSON list.
fn values<S: serde::Serializer, K, V: Serialize>(
    m: &BTreeMap<K, V>,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_seq(m.values())
}

/// One rank of a run across ranks.
#[derive(Clone, Debug, Serialize)]
pub struct RankInfo {
    /// The rank.
    pub rank: u32,
    /// Its directory.
    pub dir: PathBuf,
    /// Its workers (from its logs' headers).
    pub workers: u32,
    /// The merged run's id of its worker 0.
    pub first_worker: u32,
    /// What was added to its clock (0 without a `rank.json`).
    pub clock_offset_ns: i64,
    /// The residual its `rank.json` states.
    pub clock_residual_ns: Option<u64>,
    /// Whether it had a readable `rank.json`.
    pub described: bool,
}

/// A stream whose writer and reader are on different ranks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CrossStream {
    /// Its id in the merged run.
    pub stream: u64,
    /// The id both ranks' `rank.json` give it.
    pub net_stream: u64,
    /// The writer's rank, when known.
    pub writer_rank: Option<u32>,
    /// The reader's rank, when known.
    pub reader_rank: Option<u32>,
    /// The id of the writer's half in its rank's logs, when listed.
    pub writer_stream: Option<u64>,
    /// The id of the reader's half in its rank's logs, when listed.
    pub reader_stream: Option<u64>,
}

impl CrossStream {
    /// The mark tables put on it: `⇄ r0→r1` (`?` for a rank not known).
    pub fn marker(&self) -> String {
        let r = |x: Option<u32>| x.map_or_else(|| "?".to_owned(), |r| r.to_string());
        format!("⇄ r{}→r{}", r(self.writer_rank), r(self.reader_rank))
    }
}

impl Ranks {
    /// The rank and rank-local id of the merged run's worker `w`.
    pub fn worker(&self, w: u32) -> Option<(u32, u32)> {
        self.ranks
            .iter()
            .find(|r| w >= r.first_worker && w - r.first_worker < r.workers)
            .map(|r| (r.rank, w - r.first_worker))
    }

    /// Worker `w`'s name: `rR/wK` (rank R's worker K), or its number when
    /// no rank has it.
    pub fn worker_name(&self, w: u32) -> String {
        match self.worker(w) {
            Some((r, k)) => format!("r{r}/w{k}"),
            None => w.to_string(),
        }
    }

    /// The rank a merged task or stream id came from (a cross-rank stream:
    /// its writer's, where listed).
    pub fn rank_of_id(&self, id: u64) -> u32 {
        u32::try_from(id / self.id_stride.max(1)).unwrap_or(u32::MAX)
    }

    /// The cross-rank stream with merged id `stream`, if it is one.
    pub fn cross(&self, stream: u64) -> Option<&CrossStream> {
        self.cross_streams.get(&stream)
    }

    /// One line for reports: the ranks, their workers and the clocks.
    pub fn describe(&self) -> String {
        let workers: Vec<String> = self
            .ranks
            .iter()
            .map(|r| format!("r{} {} worker(s)", r.rank, r.workers))
            .collect();
        let clock = match self.clock_residual_ns {
            Some(ns) => format!(
                "clocks aligned to rank 0's within ±{} (the largest residual any rank states)",
                crate::render::number::fmt_ns(ns as f64)
            ),
            None => "clocks not aligned (no rank states a residual)".to_owned(),
        };
        format!(
            "{} rank(s) ({}); {clock}; {} cross-rank stream(s)",
            self.ranks.len(),
            workers.join(", "),
            self.cross_streams.len()
        )
    }
}
