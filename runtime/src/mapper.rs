//! The mapper: which worker gets a task when it is created.
//!
//! - [`Mapping::Adaptive`] (default): a task spawned by a running task
//!   starts on its spawner's worker, so that tasks that talk start
//!   together; tasks added before the run are cut into W blocks along the
//!   graph of the streams they were handed (`cut.rs`: weighed by their
//!   ends, in flow order, chains whole; with no ends handed over, in spawn
//!   order, task i of n on worker i·W/n); the blocks beyond worker 0's wait unstarted
//!   until the run shows work for more than one worker, and worker 0 takes
//!   them if it runs out of work first after its tasks talked
//!   (`worker/plan.rs`: a ring that passes one token runs on one worker;
//!   consumers added before their producers start as planned); idle workers take tasks that
//!   never ran from others in contiguous runs (`scheduler.rs`).
//! - [`Mapping::RoundRobin`]: the n-th task goes to worker n mod W.
//! - [`Mapping::Manual`]: a table from task-name prefix to worker (the longest
//!   matching prefix wins; unmatched names fall back to round-robin). Load one
//!   from a text file with [`ManualTable::load`].
//! - [`Mapping::Partitioned`]: an ordered list of name prefixes cut into W
//!   contiguous blocks: entry i of n goes to worker i·W/n.
//! - [`Mapping::Steal`]: round-robin at creation, then idle workers steal
//!   tasks that never ran from busy ones (crossbeam-deque, `scheduler.rs`);
//!   every steal is a mapping event. A task that ran stays on its worker;
//!   why that is needed, and why moving a task that never ran is sound, is
//!   argued at `TaskRef`'s `Send` impl.
//! - [`Mapping::Profile`]: a table recorded by an earlier run of the same
//!   program (`profile.rs`), adaptive for the names it does not know.
//!
//! A worker given explicitly at spawn (`spawn_on`) always wins, and such a
//! task is never taken by a thief; only under [`Mapping::Steal`] may an idle
//! worker take it before it first runs (that mode's purpose).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{ConfigError, SpawnError};

/// A mapping policy.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Mapping {
    /// The default: keep tasks that talk together, and use every worker.
    /// A task spawned inside the run starts on its spawner's worker; the
    /// tasks added before the run ([`Runtime::spawn`](crate::Runtime::spawn),
    /// [`Runtime::spawn_with`](crate::Runtime::spawn_with)) are cut into W
    /// blocks. The streams whose ends were handed over with `spawn_with`
    /// make a graph: the tasks are ordered along it (from the sources, each
    /// chain whole, a splitter's lanes one after the other), weighed by
    /// their ends (at least 1), cut into W contiguous parts of about equal
    /// weight, and each part's edge moved a little where fewer streams
    /// cross. Tasks added with plain `spawn` weigh 1 and keep the order they
    /// were added in; with no ends handed over the cut is by count, task i
    /// of n on worker i·W/n. Worker 0 starts its
    /// block at once; each other block starts on its worker once worker 0
    /// has two started tasks ready at once, or has stayed in one dispatch
    /// for four configured spins ([`Builder::spin`](crate::Builder::spin)),
    /// or forty spins have passed. If worker 0 runs out of work before any
    /// of these, what its blocked tasks wait on decides: when one of them
    /// waits writing a full stream, or most of them wait on streams that
    /// nobody has used yet (consumers added before their producers, a
    /// farm's workers before its dealer), every block starts as planned;
    /// else it takes the blocks still waiting (a network
    /// with one task ready at a time, such as a ring passing one token,
    /// then runs on one worker; `RunStats::steals` counts them). A worker with nothing
    /// to run takes tasks that never ran from another worker, a contiguous
    /// run of them at a time (about half of what that worker holds). A task
    /// that ran stays on its worker, as under [`Mapping::Steal`].
    #[default]
    Adaptive,
    /// Tasks go to workers in turn.
    RoundRobin,
    /// A table from name prefix to worker.
    Manual(ManualTable),
    /// Contiguous blocks of an ordered list of name prefixes.
    Partitioned(Vec<String>),
    /// Round-robin, then work stealing: an idle worker takes tasks that
    /// never ran from the queues of busy ones. A task that ran stays on its
    /// worker (its stack may hold values that are not `Send`, such as an
    /// `Rc` also kept in a `thread_local!`), so stealing balances the
    /// placement of new tasks, not the running ones.
    Steal,
    /// Placement learnt from an earlier run of the program: when the file
    /// exists and was written for this many workers, tasks go where it says
    /// (by name prefix, as [`Mapping::Manual`]) and names it does not know
    /// are placed as [`Mapping::Adaptive`] places them. When it is missing
    /// (or stale: made for another worker count, or unreadable, which is
    /// said on stderr) the run is placed adaptively and writes the file at
    /// its end. What the file is planned from: see
    /// [`Builder::profile_planner`](crate::Builder::profile_planner).
    Profile(PathBuf),
}

/// Prefix → worker table for manual mapping.
///
/// Looked up by hashing the name's prefixes of the lengths the table holds,
/// longest first, so a lookup costs a few hash probes however many lines
/// the table has: a profile lists every task by name (a sieve of 2,000
/// primes: 2,002 lines), and a scan of the lines per spawn, with a sort per
/// line read, cost that run about a quarter of its time.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct ManualTable {
    /// Longest prefix first, then in order.
    entries: Vec<(String, usize)>,
    /// Prefix → worker, the same lines.
    index: HashMap<String, usize>,
    /// The prefixes' distinct lengths in bytes, longest first.
    lengths: Vec<usize>,
}

impl std::fmt::Debug for ManualTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManualTable")
            .field("entries", &self.entries)
            .finish()
    }
}

impl ManualTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `prefix → worker`.
    pub fn with(mut self, prefix: impl Into<String>, worker: usize) -> Self {
        self.insert(prefix, worker);
        self
    }

    /// Adds `prefix → worker`, replacing an earlier entry for the same prefix.
    pub fn insert(&mut self, prefix: impl Into<String>, worker: usize) {
        let prefix = prefix.into();
        // Longest prefix first, so the first match is the best.
        let at = self
            .entries
            .binary_search_by(|e| {
                (std::cmp::Reverse(e.0.len()), e.0.as_str())
                    .cmp(&(std::cmp::Reverse(prefix.len()), prefix.as_str()))
            })
            .unwrap_or_else(|i| i);
        if self.index.insert(prefix.clone(), worker).is_some() {
            self.entries[at].1 = worker;
            return;
        }
        if let Err(i) = self.lengths.binary_search_by(|l| prefix.len().cmp(l)) {
            self.lengths.insert(i, prefix.len());
        }
        self.entries.insert(at, (prefix, worker));
    }

    /// The table of `lines` in order (a later line for a prefix replaces an
    /// earlier one), sorted once: a profile has a line per task.
    fn from_lines(lines: Vec<(String, usize)>) -> Self {
        let mut index: HashMap<String, usize> = HashMap::with_capacity(lines.len());
        for (p, w) in lines {
            index.insert(p, w);
        }
        let mut entries: Vec<(String, usize)> =
            index.iter().map(|(p, &w)| (p.clone(), w)).collect();
        entries.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        let mut lengths: Vec<usize> = entries.iter().map(|e| e.0.len()).collect();
        lengths.dedup();
        ManualTable {
            entries,
            index,
            lengths,
        }
    }

    /// The worker for `name`, by longest matching prefix.
    pub fn lookup(&self, name: &str) -> Option<usize> {
        self.lengths
            .iter()
            .filter(|&&l| l <= name.len() && name.is_char_boundary(l))
            .find_map(|&l| self.index.get(&name[..l]).copied())
    }

    /// The entries, longest prefix first.
    pub fn entries(&self) -> &[(String, usize)] {
        &self.entries
    }

    /// Parses a table: one `prefix = worker` (or `prefix worker`) per line;
    /// `#` starts a comment; the prefix may be quoted. This is also a valid
    /// TOML table of string keys to integers.
    ///
    /// A quoted prefix is read as a TOML basic string: it may hold `#`, `=`
    /// and spaces at its ends, and the escapes `\\`, `\"`, `\n`, `\r`,
    /// `\t`, `\uXXXX` and `\UXXXXXXXX` (another backslash stays as it is).
    /// A line that does not read that way (no closing quote, or something
    /// other than a worker number and a comment after it) is read as
    /// before, with the quotes trimmed.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut lines: Vec<(String, usize)> = Vec::new();
        for (n, raw) in text.lines().enumerate() {
            if let Some((k, w)) = parse_quoted_line(raw) {
                lines.push((k, w));
                continue;
            }
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() || (line.starts_with('[') && line.ends_with(']')) {
                continue;
            }
            let (k, v) = match line.split_once('=') {
                Some((k, v)) => (k.trim(), v.trim()),
                None => match line.rsplit_once(char::is_whitespace) {
                    Some((k, v)) => (k.trim(), v.trim()),
                    None => {
                        return Err(format!(
                            "line {}: expected 'prefix = worker', found '{line}'",
                            n + 1
                        ))
                    }
                },
            };
            let k = k.trim_matches('"');
            if k.is_empty() {
                return Err(format!("line {}: empty task-name prefix", n + 1));
            }
            let w: usize = v
                .parse()
                .map_err(|_| format!("line {}: '{v}' is not a worker number", n + 1))?;
            lines.push((k.to_string(), w));
        }
        Ok(Self::from_lines(lines))
    }

    /// Loads a table from a file (see [`ManualTable::parse`]).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
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

    /// Checks every entry names an existing worker.
    pub fn validate(&self, workers: usize) -> Result<(), ConfigError> {
        for (p, w) in &self.entries {
            if *w >= workers {
                return Err(ConfigError::NoSuchWorker {
                    name: p.clone(),
                    worker: *w,
                    workers,
                });
            }
        }
        Ok(())
    }
}

/// A line `"quoted prefix" = worker` (or without `=`), with an optional
/// comment: the prefix unescaped and the worker; `None` if the line is not
/// of that form (an empty prefix included).
fn parse_quoted_line(raw: &str) -> Option<(String, usize)> {
    let mut chars = raw.trim_start().strip_prefix('"')?.chars();
    let mut key = String::new();
    loop {
        match chars.next()? {
            '"' => break,
            '\\' => {
                let mut c = chars.clone();
                let hex = |c: &mut std::str::Chars<'_>, n: usize| -> Option<char> {
                    let s: String = c.by_ref().take(n).collect();
                    (s.len() == n)
                        .then(|| u32::from_str_radix(&s, 16).ok())
                        .flatten()
                        .and_then(char::from_u32)
                };
                let e = match c.next() {
                    Some('\\') => Some('\\'),
                    Some('"') => Some('"'),
                    Some('n') => Some('\n'),
                    Some('r') => Some('\r'),
                    Some('t') => Some('\t'),
                    Some('u') => hex(&mut c, 4),
                    Some('U') => hex(&mut c, 8),
                    _ => None,
                };
                match e {
                    Some(ch) => {
                        key.push(ch);
                        chars = c;
                    }
                    None => key.push('\\'),
                }
            }
            ch => key.push(ch),
        }
    }
    let rest = chars.as_str().trim_start();
    let rest = rest.strip_prefix('=').unwrap_or(rest).trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (num, tail) = rest.split_at(end);
    let tail = tail.trim_start();
    if key.is_empty() || !(tail.is_empty() || tail.starts_with('#')) {
        return None;
    }
    Some((key, num.parse().ok()?))
}

/// The mapper of one run.
pub(crate) struct Mapper {
    mapping: Mapping,
    /// [`Mapping::Profile`] with a profile loaded: the table (else every
    /// task is placed adaptively).
    profile: Option<ManualTable>,
    workers: usize,
    next: AtomicUsize,
}

impl Mapper {
    pub(crate) fn new(mapping: Mapping, workers: usize) -> Self {
        Mapper {
            mapping,
            profile: None,
            workers,
            next: AtomicUsize::new(0),
        }
    }

    /// [`Mapping::Profile`]'s loaded table (see `profile.rs`).
    pub(crate) fn with_profile(mut self, table: Option<ManualTable>) -> Self {
        self.profile = table;
        self
    }

    fn round_robin(&self) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed) % self.workers
    }

    /// Whether idle workers take tasks that never ran from others, and
    /// whether in contiguous runs (true) or one at a time (false).
    pub(crate) fn stealing(&self) -> Option<bool> {
        if self.workers < 2 {
            return None;
        }
        match &self.mapping {
            Mapping::Steal => Some(false),
            Mapping::Adaptive => Some(true),
            // A loaded profile is a plan: kept as it is.
            Mapping::Profile(_) if self.profile.is_none() => Some(true),
            _ => None,
        }
    }

    fn check(&self, name: &str, hint: Option<usize>) -> Result<Option<usize>, SpawnError> {
        match hint {
            Some(w) if w >= self.workers => Err(SpawnError::NoSuchWorker {
                name: name.to_string(),
                worker: w,
                workers: self.workers,
            }),
            h => Ok(h),
        }
    }

    /// Picks the worker for a task spawned by a task running on `spawner`.
    pub(crate) fn place(
        &self,
        name: &str,
        hint: Option<usize>,
        spawner: usize,
    ) -> Result<usize, SpawnError> {
        if let Some(w) = self.check(name, hint)? {
            return Ok(w);
        }
        Ok(match &self.mapping {
            Mapping::Adaptive => spawner,
            Mapping::Profile(_) => self.profiled(name).unwrap_or(spawner),
            _ => self.by_policy(name),
        })
    }

    /// Picks the worker for a task added before the run, `block` being its
    /// block in the cut of the tasks the mapping places (those without a
    /// worker of their own; `cut.rs`).
    pub(crate) fn place_initial(
        &self,
        name: &str,
        hint: Option<usize>,
        block: usize,
    ) -> Result<usize, SpawnError> {
        if let Some(w) = self.check(name, hint)? {
            return Ok(w);
        }
        Ok(match &self.mapping {
            Mapping::Adaptive => block,
            Mapping::Profile(_) => self.profiled(name).unwrap_or(block),
            _ => self.by_policy(name),
        })
    }

    /// Whether a task spawned in the run starts near its spawner
    /// ([`Mapping::Adaptive`]).
    pub(crate) fn spawns_near_spawner(&self) -> bool {
        matches!(self.mapping, Mapping::Adaptive)
    }

    /// Whether [`place_initial`](Self::place_initial) reads the block.
    pub(crate) fn cuts_initial(&self) -> bool {
        matches!(self.mapping, Mapping::Adaptive | Mapping::Profile(_))
    }

    fn profiled(&self, name: &str) -> Option<usize> {
        self.profile.as_ref().and_then(|t| t.lookup(name))
    }

    /// The explicit policies, which place a task by its name alone.
    fn by_policy(&self, name: &str) -> usize {
        match &self.mapping {
            Mapping::Manual(t) => match t.lookup(name) {
                Some(w) => w,
                None => self.round_robin(),
            },
            Mapping::Partitioned(list) => {
                let best = list
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| name.starts_with(p.as_str()))
                    .max_by_key(|(_, p)| p.len());
                match best {
                    Some((i, _)) => i * self.workers / list.len(),
                    None => self.round_robin(),
                }
            }
            Mapping::RoundRobin | Mapping::Steal | Mapping::Adaptive | Mapping::Profile(_) => {
                self.round_robin()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins() {
        let t = ManualTable::new().with("mc/", 0).with("mc/star/1", 1);
        assert_eq!(t.lookup("mc/star/12/step"), Some(1));
        assert_eq!(t.lookup("mc/star/2"), Some(0));
        assert_eq!(t.lookup("des/round"), None);
    }

    #[test]
    fn the_index_agrees_with_a_scan_of_the_lines() {
        let mut t = ManualTable::new();
        let lines = [
            ("a", 0),
            ("ab", 1),
            ("abc/", 2),
            ("é", 3),
            ("éx", 1),
            ("ab", 3),
            ("b/1", 0),
            ("b/10", 1),
        ];
        for (p, w) in lines {
            t.insert(p, w);
        }
        // The replaced line keeps one entry, and the order is longest first.
        assert_eq!(t.entries().len(), 7);
        assert!(t.entries().windows(2).all(|e| e[0].0.len() >= e[1].0.len()));
        let scan = |name: &str| {
            t.entries()
                .iter()
                .find(|(p, _)| name.starts_with(p.as_str()))
                .map(|&(_, w)| w)
        };
        for name in [
            "", "a", "ab", "abd", "abc/1", "é", "éx/2", "èx", "b/1", "b/10", "b/100", "b/2", "c",
        ] {
            assert_eq!(t.lookup(name), scan(name), "{name}");
        }
        assert_eq!(t.lookup("ab/x"), Some(3));
        assert_eq!(t.lookup("b/105"), Some(1));
        // Parsed, a later line for a prefix replaces an earlier one too.
        let p = ManualTable::parse("\"b/1\" = 0\nb/10 = 1\nb/1 = 2\na 0\n").unwrap();
        assert_eq!(p.entries().len(), 3);
        assert_eq!(
            (p.lookup("b/12"), p.lookup("b/101"), p.lookup("ax")),
            (Some(2), Some(1), Some(0))
        );
    }

    #[test]
    fn parses_both_forms_and_rejects_junk() {
        let t = ManualTable::parse("# comment\n[mapping]\n\"des/ip\" = 0\ndes/round 1\n").unwrap();
        assert_eq!(t.lookup("des/ip/0"), Some(0));
        assert_eq!(t.lookup("des/round/3"), Some(1));
        let e = ManualTable::parse("des/ip = x").unwrap_err();
        assert!(e.contains("line 1") && e.contains("not a worker"), "{e}");
        assert!(ManualTable::parse("justoneword").is_err());
    }

    #[test]
    fn quoted_prefixes_are_toml_strings() {
        let text = concat!(
            "\"a#b=c\" = 1 # a comment\n",
            "\" padded \" 2\n",
            "\"q\\\"uote\\\\back\" = 3\n",
            "\"nl\\nx\\u0007\\U0001F600\\z\" = 4\n",
            "\"des/ip\" = 5\n",
        );
        let t = ManualTable::parse(text).unwrap();
        assert_eq!(t.lookup("a#b=c"), Some(1));
        assert_eq!(t.lookup("a#b"), None);
        assert_eq!(t.lookup(" padded "), Some(2));
        assert_eq!(t.lookup("q\"uote\\back"), Some(3));
        assert_eq!(t.lookup("nl\nx\u{7}\u{1F600}\\z"), Some(4));
        assert_eq!(t.lookup("des/ip/0"), Some(5));
        // Lines that are not quoted strings read as before.
        let t = ManualTable::parse("\"abc\"def\" = 6\n\"x = 7").unwrap();
        assert_eq!(t.lookup("abc\"def"), Some(6));
        assert_eq!(t.lookup("x"), Some(7));
        assert!(ManualTable::parse("\"\" = 1").is_err(), "empty prefix");
        assert!(ManualTable::parse("\"a\" = x").is_err());
    }

    #[test]
    fn validate_names_the_bad_worker() {
        let t = ManualTable::new().with("a", 3);
        let e = t.validate(2).unwrap_err();
        assert!(e.to_string().contains("worker 3"), "{e}");
    }

    #[test]
    fn placement() {
        let m = Mapper::new(
            Mapping::Partitioned(vec!["a".into(), "b".into(), "c".into(), "d".into()]),
            2,
        );
        assert_eq!(m.place("a/1", None, 0).unwrap(), 0);
        assert_eq!(m.place("b", None, 0).unwrap(), 0);
        assert_eq!(m.place("c", None, 0).unwrap(), 1);
        assert_eq!(m.place("d", None, 0).unwrap(), 1);
        assert!(m.place("x", Some(2), 0).is_err());
        let rr = Mapper::new(Mapping::RoundRobin, 3);
        let ws: Vec<usize> = (0..6).map(|_| rr.place("t", None, 0).unwrap()).collect();
        assert_eq!(ws, vec![0, 1, 2, 0, 1, 2]);
    }

    /// Adaptive: a spawned task goes to its spawner's worker; a task added
    /// before the run to its block of the cut (`cut.rs`), unless given a
    /// worker.
    #[test]
    fn adaptive_placement() {
        let m = Mapper::new(Mapping::Adaptive, 3);
        assert_eq!(m.place("x", None, 2).unwrap(), 2);
        assert_eq!(m.place("x", Some(1), 2).unwrap(), 1);
        assert_eq!(m.place_initial("c", None, 2).unwrap(), 2);
        assert_eq!(m.place_initial("c", Some(1), 2).unwrap(), 1);
        assert!(m.cuts_initial());
        assert!(!Mapper::new(Mapping::RoundRobin, 3).cuts_initial());
        assert!(m.place_initial("c", Some(5), 0).is_err());
        assert_eq!(Mapper::new(Mapping::Adaptive, 1).stealing(), None);
        assert_eq!(m.stealing(), Some(true));
        let p = Mapper::new(Mapping::Profile("p".into()), 2)
            .with_profile(Some(ManualTable::new().with("a/", 1)));
        assert_eq!(p.place("a/3", None, 0).unwrap(), 1);
        assert_eq!(p.place("b", None, 0).unwrap(), 0, "unknown names: adaptive");
        assert_eq!(p.place_initial("b", None, 1).unwrap(), 1);
        assert_eq!(p.place_initial("a/1", None, 0).unwrap(), 1);
        assert_eq!(p.stealing(), None, "a loaded profile is kept");
    }
}
