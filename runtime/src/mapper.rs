//! The mapper: which worker gets a task when it is created.
//!
//! - [`Mapping::RoundRobin`] (default): the n-th task goes to worker n mod W.
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
//!
//! A worker given explicitly at spawn (`spawn_on`) always wins.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{ConfigError, SpawnError};

/// A mapping policy.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Mapping {
    /// Tasks go to workers in turn.
    #[default]
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
}

/// Prefix → worker table for manual mapping.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ManualTable {
    entries: Vec<(String, usize)>,
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
        self.entries.retain(|(p, _)| *p != prefix);
        self.entries.push((prefix, worker));
        // Longest prefix first, so the first match is the best.
        self.entries
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
    }

    /// The worker for `name`, by longest matching prefix.
    pub fn lookup(&self, name: &str) -> Option<usize> {
        self.entries
            .iter()
            .find(|(p, _)| name.starts_with(p.as_str()))
            .map(|&(_, w)| w)
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
        let mut t = ManualTable::new();
        for (n, raw) in text.lines().enumerate() {
            if let Some((k, w)) = parse_quoted_line(raw) {
                t.insert(k, w);
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
            t.insert(k, w);
        }
        Ok(t)
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
    workers: usize,
    next: AtomicUsize,
}

impl Mapper {
    pub(crate) fn new(mapping: Mapping, workers: usize) -> Self {
        Mapper {
            mapping,
            workers,
            next: AtomicUsize::new(0),
        }
    }

    fn round_robin(&self) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed) % self.workers
    }

    /// Picks the worker for a new task.
    pub(crate) fn place(
        &self,
        name: &str,
        hint: Option<usize>,
        _spawner: usize,
    ) -> Result<usize, SpawnError> {
        if let Some(w) = hint {
            if w >= self.workers {
                return Err(SpawnError::NoSuchWorker {
                    name: name.to_string(),
                    worker: w,
                    workers: self.workers,
                });
            }
            return Ok(w);
        }
        Ok(match &self.mapping {
            Mapping::RoundRobin | Mapping::Steal => self.round_robin(),
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
        })
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
}
