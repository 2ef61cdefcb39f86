//! Where the tasks of a cross-rank network run: a rank and a worker for
//! each task built before the run, the same answer on every rank (every
//! rank builds the same network in the same order).
//!
//! Workers are numbered across the ranks: rank r's worker w is global
//! worker `r·W + w` (every rank has W workers).

use crate::error::ConfigError;
use crate::mapper::ManualTable;

/// How a network's tasks are placed over ranks and workers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Placement {
    /// The tasks in the order they were spawned, cut into one contiguous
    /// block per global worker: a chain built in order is cut once per
    /// worker, and only at block edges does a message cross a worker or a
    /// rank. The default.
    #[default]
    Contiguous,
    /// The n-th task on global worker n mod (R·W).
    RoundRobin,
    /// A table from name prefix to rank and worker (longest prefix wins);
    /// a name no prefix matches goes round-robin.
    Table(RankTable),
    /// An ordered list of name prefixes cut into R·W contiguous blocks;
    /// names matching none go round-robin.
    Parts(Vec<String>),
}

/// Prefix → (rank, worker).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RankTable {
    entries: Vec<(String, usize, usize)>,
}

impl RankTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `prefix → rank:worker` (replacing an entry for the same prefix).
    pub fn with(mut self, prefix: impl Into<String>, rank: usize, worker: usize) -> Self {
        let prefix = prefix.into();
        self.entries.retain(|(p, _, _)| *p != prefix);
        self.entries.push((prefix, rank, worker));
        self.entries
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        self
    }

    /// The rank and worker for `name`, by longest matching prefix.
    pub fn lookup(&self, name: &str) -> Option<(usize, usize)> {
        self.entries
            .iter()
            .find(|(p, _, _)| name.starts_with(p.as_str()))
            .map(|&(_, r, w)| (r, w))
    }

    /// Parses a mapping file: lines `prefix = RANK:WORKER`, or `prefix =
    /// WORKER` (worker W of rank 0, as in a one-process mapping file);
    /// comments, quoting and sections as in [`ManualTable::parse`].
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut t = RankTable::new();
        for (n, raw) in text.lines().enumerate() {
            let at = |e: String| e.replace("line 1", &format!("line {}", n + 1));
            let body = strip_comment(raw).trim_end();
            let quote_end = body.rfind('"').map_or(0, |i| i + 1);
            let value_at = body
                .rfind(|c: char| c == '=' || c.is_whitespace())
                .map_or(0, |i| i + 1)
                .max(quote_end);
            let (key, value) = body.split_at(value_at);
            let rank_worker = value.split_once(':').and_then(|(r, w)| {
                let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
                (digits(r) && digits(w)).then_some((r, w))
            });
            let (line, rank) = match rank_worker {
                Some((r, w)) => {
                    let rank = r
                        .parse::<usize>()
                        .map_err(|_| format!("line {}: '{r}' is not a rank number", n + 1))?;
                    (format!("{key}{w}"), rank)
                }
                None if value.contains(':') => {
                    return Err(format!(
                        "line {}: expected 'prefix = RANK:WORKER', found '{}'",
                        n + 1,
                        raw.trim()
                    ))
                }
                None => (body.to_string(), 0),
            };
            for (p, w) in ManualTable::parse(&line).map_err(at)?.entries() {
                t = t.with(p.clone(), rank, *w);
            }
        }
        Ok(t)
    }

    /// Loads a mapping file (see [`parse`](Self::parse)).
    pub fn load(path: impl AsRef<std::path::Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::MappingFile {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        Self::parse(&text).map_err(|reason| ConfigError::MappingFile {
            path: path.display().to_string(),
            reason,
        })
    }

    /// The entries: prefix, rank, worker; longest prefix first.
    pub fn entries(&self) -> &[(String, usize, usize)] {
        &self.entries
    }
}

/// `line` up to its comment: a `#` outside a quoted name (where `\"`
/// and `\\` are escapes, as [`ManualTable::parse`] reads them).
fn strip_comment(line: &str) -> &str {
    let (mut quoted, mut escaped) = (false, false);
    for (i, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '#' if !quoted => return &line[..i],
            _ => {}
        }
    }
    line
}

/// Places `names` (in spawn order) over `ranks` × `workers`: each task's
/// (rank, worker). Errors name an entry that points past the ranks or
/// workers.
pub(crate) fn place(
    p: &Placement,
    names: &[&str],
    ranks: usize,
    workers: usize,
) -> Result<Vec<(usize, usize)>, String> {
    let g = ranks * workers;
    let split = |gw: usize| (gw / workers, gw % workers);
    let mut rr = 0usize;
    let mut next_rr = || {
        let gw = rr % g;
        rr += 1;
        split(gw)
    };
    let n = names.len();
    match p {
        Placement::Contiguous => Ok((0..n).map(|i| split(i * g / n.max(1))).collect()),
        Placement::RoundRobin => Ok((0..n).map(|_| next_rr()).collect()),
        Placement::Table(t) => {
            for (prefix, r, w) in &t.entries {
                if *r >= ranks || *w >= workers {
                    return Err(format!(
                        "the mapping puts '{prefix}' on rank {r} worker {w}, but the run has {ranks} rank(s) of {workers} worker(s)"
                    ));
                }
            }
            Ok(names
                .iter()
                .map(|name| t.lookup(name).unwrap_or_else(&mut next_rr))
                .collect())
        }
        Placement::Parts(list) => Ok(names
            .iter()
            .map(|name| {
                let best = list
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| name.starts_with(p.as_str()))
                    .max_by_key(|(_, p)| p.len());
                match best {
                    Some((i, _)) => split(i * g / list.len()),
                    None => next_rr(),
                }
            })
            .collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_read_rank_worker_and_plain_lines() {
        let t = RankTable::parse("# map\nsrc = 1:0\n\"a:b\" = 0:1\nsink 1\n").unwrap();
        assert_eq!(t.lookup("src/0"), Some((1, 0)));
        assert_eq!(t.lookup("a:b/x"), Some((0, 1)));
        assert_eq!(t.lookup("sink"), Some((0, 1)), "a plain worker is rank 0's");
        let e = RankTable::parse("x = 1:y").unwrap_err();
        assert!(e.contains("line 1") && e.contains("RANK:WORKER"), "{e}");
        let e = RankTable::parse("ok = 0:0\nx = a:1").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
        // Comments may quote, and quoted names may hold a `#`.
        let t = RankTable::parse(
            "# Lines are \"task name\" = RANK:WORKER;\n\"a#b\" = 1:0 # \"x\" = 0:0\n\"q\\\"#\" = 0:1\n",
        )
        .unwrap();
        assert_eq!(t.entries().len(), 2, "{t:?}");
        assert_eq!(t.lookup("a#b"), Some((1, 0)));
        assert_eq!(t.lookup("q\"#"), Some((0, 1)));
    }

    #[test]
    fn contiguous_cuts_a_chain_once_per_worker() {
        let names: Vec<String> = (0..10).map(|i| format!("s{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let p = place(&Placement::Contiguous, &refs, 2, 2).unwrap();
        let cuts = p.windows(2).filter(|w| w[0] != w[1]).count();
        assert_eq!(cuts, 3, "{p:?}");
        assert_eq!(p[0], (0, 0));
        assert_eq!(p[9], (1, 1));
        let rr = place(&Placement::RoundRobin, &refs[..5], 2, 1).unwrap();
        assert_eq!(rr, vec![(0, 0), (1, 0), (0, 0), (1, 0), (0, 0)]);
    }

    #[test]
    fn tables_are_checked_against_the_run() {
        let t = RankTable::new().with("a", 2, 0);
        let e = place(&Placement::Table(t.clone()), &["a"], 2, 1).unwrap_err();
        assert!(e.contains("rank 2"), "{e}");
        assert_eq!(
            place(&Placement::Table(t), &["a"], 3, 1).unwrap(),
            vec![(2, 0)]
        );
    }
}
