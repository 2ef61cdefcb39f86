//! `rank.json`: what a rank's runtime says about its part of a run across
//! ranks (see the contract in the module above).

use std::path::Path;

use serde::Deserialize;

/// Which end of a cross-rank stream is on the rank that lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LocalSide {
    /// A task of this rank reads it; its writer is on the peer rank.
    Reader,
    /// A task of this rank writes it; its reader is on the peer rank.
    Writer,
}

/// One entry of `cross_streams`.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct CrossEntry {
    /// The stream's id in this rank's logs.
    pub stream: u64,
    /// The id both halves share, network-wide.
    pub net_stream: u64,
    /// The end that is local here.
    pub side: LocalSide,
    /// The rank holding the other end.
    pub peer_rank: u32,
}

/// A `rank.json` as read. Unknown fields are ignored, so that a newer
/// runtime may add some.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct RankMeta {
    pub rank: u32,
    pub ranks: u32,
    pub workers: u32,
    #[serde(default)]
    pub clock_offset_ns: i64,
    #[serde(default)]
    pub clock_residual_ns: Option<u64>,
    #[serde(default)]
    pub cross_streams: Vec<CrossEntry>,
}

/// The file's name in a rank's directory.
pub(crate) const RANK_FILE: &str = "rank.json";

/// Reads `dir/rank.json`: `Ok(None)` when there is none, an error (one
/// line) when it cannot be read or is not the contract's JSON.
pub(crate) fn read(dir: &Path) -> anyhow::Result<Option<RankMeta>> {
    let path = dir.join(RANK_FILE);
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => anyhow::bail!("{}: cannot read: {e}", path.display()),
    };
    // The file is small by contract; a huge one is not a rank.json.
    anyhow::ensure!(
        text.len() <= MAX_META_BYTES,
        "{}: {} bytes, more than a rank.json holds ({MAX_META_BYTES} at most)",
        path.display(),
        text.len()
    );
    serde_json::from_slice(&text)
        .map(Some)
        .map_err(|e| anyhow::anyhow!("{}: not a rank.json: {e}", path.display()))
}

/// The largest `rank.json` read (a network of a million cross-rank streams
/// fits).
const MAX_META_BYTES: usize = 256 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contract_parses_and_optional_fields_default() {
        let m: RankMeta = serde_json::from_str(
            r#"{"rank": 1, "ranks": 2, "workers": 1,
                "clock_offset_ns": -1234, "clock_residual_ns": 800,
                "cross_streams": [{"stream": 17, "net_stream": 3, "side": "reader", "peer_rank": 0}],
                "later": "ignored"}"#,
        )
        .unwrap();
        assert_eq!((m.rank, m.ranks, m.workers), (1, 2, 1));
        assert_eq!((m.clock_offset_ns, m.clock_residual_ns), (-1234, Some(800)));
        let c = &m.cross_streams[0];
        assert_eq!(
            (c.stream, c.net_stream, c.side, c.peer_rank),
            (17, 3, LocalSide::Reader, 0)
        );
        let m: RankMeta = serde_json::from_str(r#"{"rank": 0, "ranks": 2, "workers": 3}"#).unwrap();
        assert_eq!((m.clock_offset_ns, m.clock_residual_ns), (0, None));
        assert!(m.cross_streams.is_empty());
        assert!(serde_json::from_str::<RankMeta>(r#"{"rank": 0}"#).is_err());
    }
}
