//! `rill-mon waits`: the waiting relation W(A, B) of the LPEL monitoring
//! paper, per stream, per task pair and per worker pair.
//!
//! Definition: A waits for B when A is blocked reading a stream B writes
//! and finds it empty, or blocked writing a stream B reads and finds it
//! full. For each stream (writer task W, reader task R):
//!
//! * `reader_waits`, `reader_wait_ns`: how often and how long R waited for
//!   W (W(R, W)): periods of R that ended blocked reading the stream, each
//!   lasting to R's next dispatch; poll waits (blocked on several inputs)
//!   count on the first stream R reads when it next runs;
//! * `writer_waits`, `writer_wait_ns`: the same for W waiting for R
//!   (W(W, R)), writing the stream full;
//! * `messages`: the larger of the counts written and read (they differ
//!   only when messages were left unread or a log is missing or damaged);
//! * `cross_worker`: W and R ran on different workers (each task counts on
//!   the worker that ran most of its busy time).
//!
//! The wait times are exact to the clock, with one caveat: a wait ends at
//! the next dispatch, not at the wake-up, so it includes the time the woken
//! task was ready but its worker was busy (see `replay/activity.rs`). Waits that
//! never ended run to the end of the run and are counted in `open_waits`.
//!
//! With grouping (the default), streams whose writer, reader or name
//! differ only in numeric path segments fold into one row
//! ([`group_of`](crate::group_of)); such a row gives the smallest stream id,
//! how many streams it holds (`streams`), their sums, and `cross_worker` if
//! any of them crosses workers.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::load::groups::group_of;
use crate::load::model::RunLog;
use crate::render::number::fmt_ns;
use crate::render::table::table;
use crate::replay::activity::{activity, whole_run};
use crate::replay::activity_model::Activity;

/// What `rill-mon waits` prints. Times are nanoseconds; tables heaviest
/// (most waiting) first.
#[derive(Clone, Debug, Serialize)]
pub struct Waits {
    /// The log directory.
    pub dir: String,
    /// Whether task names were folded into groups.
    pub grouped: bool,
    /// All waiting on streams (reader and writer waits).
    pub total_wait_ns: u64,
    /// The part of it on streams whose ends ran on different workers.
    pub cross_worker_wait_ns: u64,
    /// In a run across ranks, the part of it on cross-rank streams.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cross_rank_wait_ns: Option<u64>,
    /// Per stream (or folded group of streams).
    pub streams: Vec<StreamWaits>,
    /// Per (writer, reader) task pair (or group pair).
    pub task_pairs: Vec<PairWaits>,
    /// Per (writer's worker, reader's worker) pair.
    pub worker_pairs: Vec<WorkerPairWaits>,
    /// Waits that never ended (the task's last period ended blocked).
    pub open_waits: u64,
    /// Poll waits whose next period read nothing (not put on a stream).
    pub unattributed_polls: u64,
    /// Their time.
    pub unattributed_poll_ns: u64,
    /// Analyses left out because the run did not record what they need.
    pub notes: Vec<String>,
    /// Problems with the logs.
    pub warnings: Vec<String>,
}

/// The waits on one stream (or one folded group of streams).
#[derive(Clone, Debug, Default, Serialize)]
pub struct StreamWaits {
    /// The stream id (the smallest, for a folded row).
    pub stream: u64,
    /// The stream's name (its group, for a folded row), when the log names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_name: Option<String>,
    /// How many streams a folded row holds (absent for one stream).
    #[serde(skip_serializing_if = "is_one")]
    pub streams: u64,
    /// The writing task (`-` if unknown).
    pub writer: String,
    /// The reading task (`-` if unknown).
    pub reader: String,
    /// Messages carried.
    pub messages: u64,
    /// Times the reader waited for the writer (read the stream empty).
    pub reader_waits: u64,
    /// How long, in all.
    pub reader_wait_ns: u64,
    /// Times the writer waited for the reader (wrote the stream full).
    pub writer_waits: u64,
    /// How long, in all.
    pub writer_wait_ns: u64,
    /// Whether writer and reader ran on different workers.
    pub cross_worker: bool,
    /// A cross-rank stream (a folded row: the first of its streams that
    /// is one): the ranks it goes between, `⇄ r0→r1`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cross_rank: Option<String>,
}

fn is_one(n: &u64) -> bool {
    *n == 1
}

/// The waits between a writer and a reader task (or group), over all
/// streams from the one to the other.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PairWaits {
    /// The writing task (or group).
    pub writer: String,
    /// The reading task (or group).
    pub reader: String,
    /// Streams from writer to reader.
    pub streams: u64,
    /// Messages carried.
    pub messages: u64,
    /// Times the reader waited for the writer.
    pub reader_waits: u64,
    /// How long.
    pub reader_wait_ns: u64,
    /// Times the writer waited for the reader.
    pub writer_waits: u64,
    /// How long.
    pub writer_wait_ns: u64,
    /// Whether any of the streams crosses workers.
    pub cross_worker: bool,
    /// The first of the streams that crosses ranks, as `⇄ r0→r1`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cross_rank: Option<String>,
}

/// The waits between the tasks of two workers.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WorkerPairWaits {
    /// The writers' worker (`null` if unknown).
    pub writer_worker: Option<u32>,
    /// The readers' worker (`null` if unknown).
    pub reader_worker: Option<u32>,
    /// Streams.
    pub streams: u64,
    /// Messages carried.
    pub messages: u64,
    /// Times readers waited for writers.
    pub reader_waits: u64,
    /// How long.
    pub reader_wait_ns: u64,
    /// Times writers waited for readers.
    pub writer_waits: u64,
    /// How long.
    pub writer_wait_ns: u64,
    /// Whether the two workers differ.
    pub cross_worker: bool,
    /// In a run across ranks, the writers' worker's name (`r0/w1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writer_lane: Option<String>,
    /// In a run across ranks, the readers' worker's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reader_lane: Option<String>,
}

/// The counts the three tables add up.
#[derive(Clone, Copy, Default)]
struct Sums {
    streams: u64,
    messages: u64,
    reader_waits: u64,
    reader_wait_ns: u64,
    writer_waits: u64,
    writer_wait_ns: u64,
    cross: bool,
    /// The smallest of the streams that crosses ranks.
    cross_rank: Option<u64>,
}

impl Sums {
    fn add(&mut self, o: &Sums) {
        self.streams += o.streams;
        self.messages = self.messages.saturating_add(o.messages);
        self.reader_waits = self.reader_waits.saturating_add(o.reader_waits);
        self.reader_wait_ns = self.reader_wait_ns.saturating_add(o.reader_wait_ns);
        self.writer_waits = self.writer_waits.saturating_add(o.writer_waits);
        self.writer_wait_ns = self.writer_wait_ns.saturating_add(o.writer_wait_ns);
        self.cross |= o.cross;
        self.cross_rank = match (self.cross_rank, o.cross_rank) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    fn wait_ns(&self) -> u64 {
        self.reader_wait_ns.saturating_add(self.writer_wait_ns)
    }
}

/// Heaviest first: most waiting, then most messages.
fn heaviest<K: Ord>(a: &(K, Sums), b: &(K, Sums)) -> std::cmp::Ordering {
    b.1.wait_ns()
        .cmp(&a.1.wait_ns())
        .then(b.1.messages.cmp(&a.1.messages))
        .then(a.0.cmp(&b.0))
}

/// Computes the waiting relation of a run; `group` folds task names with
/// numeric path segments into groups.
///
/// The figures come from the totals the load kept where they equal the
/// merged pass's (every task's periods in one log, every used stream end
/// bound: what the runtime writes), else from the pass.
pub fn waits(run: &RunLog, group: bool) -> Waits {
    waits_of(run, group, &whole_run(run))
}

/// [`waits()`] from a pass over all periods merged in time order, always:
/// the reference its shortcut through the load's totals must agree with.
#[doc(hidden)]
pub fn waits_by_pass(run: &RunLog, group: bool) -> Waits {
    waits_of(run, group, &activity(run, 1))
}

fn waits_of(run: &RunLog, group: bool, act: &Activity) -> Waits {
    let mut ids: Vec<u64> = run.streams.keys().copied().collect();
    ids.extend(
        act.streams
            .keys()
            .copied()
            .filter(|s| !run.streams.contains_key(s)),
    );
    ids.sort_unstable();

    let name = |task: Option<u64>| -> String {
        let label = task.map_or_else(|| "-".to_owned(), |t| run.task_label(t));
        if group {
            group_of(&label).into_owned()
        } else {
            label
        }
    };

    // Row key: a stream id, or (for a folded row) the group names.
    #[derive(PartialEq, Eq, PartialOrd, Ord)]
    enum Key {
        One(u64),
        Folded(String, String, Option<String>),
    }
    let mut rows: BTreeMap<Key, (StreamWaits, Sums)> = BTreeMap::new();
    let mut pairs: BTreeMap<(String, String), Sums> = BTreeMap::new();
    let mut workers: BTreeMap<(Option<u32>, Option<u32>), Sums> = BTreeMap::new();
    let (mut total, mut cross_total, mut rank_total) = (0u64, 0u64, 0u64);
    let mark = |s: &Sums| {
        s.cross_rank
            .and_then(|id| run.ranks.as_ref()?.cross(id))
            .map(|c| c.marker())
    };
    let lane = |w: Option<u32>| Some(run.ranks.as_ref()?.worker_name(w?));
    for id in ids {
        let info = run.streams.get(&id);
        let a = act.streams.get(&id);
        let (w, r) = act.ends(run, id);
        let (ww, rw) = (
            w.and_then(|t| act.worker_of(run, t)),
            r.and_then(|t| act.worker_of(run, t)),
        );
        let cross = matches!((ww, rw), (Some(x), Some(y)) if x != y);
        let cross_rank = run
            .ranks
            .as_ref()
            .and_then(|r| r.cross(id))
            .map(|c| c.stream);
        let sums = Sums {
            streams: 1,
            messages: info.map_or(0, |s| s.written.max(s.read)),
            reader_waits: a.map_or(0, |a| a.reader_waits),
            reader_wait_ns: a.map_or(0, |a| run.ns(a.reader_wait)),
            writer_waits: a.map_or(0, |a| a.writer_waits),
            writer_wait_ns: a.map_or(0, |a| run.ns(a.writer_wait)),
            cross,
            cross_rank,
        };
        total = total.saturating_add(sums.wait_ns());
        if cross {
            cross_total = cross_total.saturating_add(sums.wait_ns());
        }
        if cross_rank.is_some() {
            rank_total = rank_total.saturating_add(sums.wait_ns());
        }
        let (wn, rn) = (name(w), name(r));
        let sname = info.and_then(|s| s.name.clone());
        let gname = sname.as_deref().map(|n| group_of(n).into_owned());
        let folds = group
            && (w.is_some_and(|t| wn != run.task_label(t))
                || r.is_some_and(|t| rn != run.task_label(t))
                || gname != sname);
        let key = if folds {
            Key::Folded(wn.clone(), rn.clone(), gname.clone())
        } else {
            Key::One(id)
        };
        let row = rows.entry(key).or_insert_with(|| {
            (
                StreamWaits {
                    stream: id,
                    stream_name: if folds { gname } else { sname },
                    writer: wn.clone(),
                    reader: rn.clone(),
                    ..StreamWaits::default()
                },
                Sums::default(),
            )
        });
        row.1.add(&sums);
        pairs.entry((wn, rn)).or_default().add(&sums);
        workers.entry((ww, rw)).or_default().add(&sums);
    }

    let mut rows: Vec<(u64, (StreamWaits, Sums))> =
        rows.into_values().map(|r| (r.0.stream, r)).collect();
    rows.sort_by(|a, b| heaviest(&(a.0, a.1 .1), &(b.0, b.1 .1)));
    let streams = rows
        .into_iter()
        .map(|(_, (row, s))| StreamWaits {
            streams: s.streams,
            messages: s.messages,
            reader_waits: s.reader_waits,
            reader_wait_ns: s.reader_wait_ns,
            writer_waits: s.writer_waits,
            writer_wait_ns: s.writer_wait_ns,
            cross_worker: s.cross,
            cross_rank: mark(&s),
            ..row
        })
        .collect();
    let mut pairs: Vec<((String, String), Sums)> = pairs.into_iter().collect();
    pairs.sort_by(heaviest);
    let task_pairs = pairs
        .into_iter()
        .map(|((writer, reader), s)| PairWaits {
            writer,
            reader,
            streams: s.streams,
            messages: s.messages,
            reader_waits: s.reader_waits,
            reader_wait_ns: s.reader_wait_ns,
            writer_waits: s.writer_waits,
            writer_wait_ns: s.writer_wait_ns,
            cross_worker: s.cross,
            cross_rank: mark(&s),
        })
        .collect();
    type WorkerKey = (Option<u32>, Option<u32>);
    let mut wp: Vec<(WorkerKey, Sums)> = workers.into_iter().collect();
    wp.sort_by(heaviest);
    let worker_pairs = wp
        .into_iter()
        .map(|((writer_worker, reader_worker), s)| WorkerPairWaits {
            writer_worker,
            reader_worker,
            streams: s.streams,
            messages: s.messages,
            reader_waits: s.reader_waits,
            reader_wait_ns: s.reader_wait_ns,
            writer_waits: s.writer_waits,
            writer_wait_ns: s.writer_wait_ns,
            cross_worker: s.cross,
            writer_lane: lane(writer_worker),
            reader_lane: lane(reader_worker),
        })
        .collect();

    Waits {
        dir: run.dir.display().to_string(),
        grouped: group
            && crate::load::groups::any_folds(run.tasks.values().filter_map(|t| t.name.as_deref())),
        total_wait_ns: total,
        cross_worker_wait_ns: cross_total,
        cross_rank_wait_ns: run.ranks.as_ref().map(|_| rank_total),
        streams,
        task_pairs,
        worker_pairs,
        open_waits: act.open_waits,
        unattributed_polls: act.unattributed_polls,
        unattributed_poll_ns: run.ns(act.unattributed_poll_ticks),
        notes: needs(run),
        warnings: run.warnings.clone(),
    }
}

/// What the waits need and the run may lack.
pub(crate) fn needs(run: &RunLog) -> Vec<String> {
    use rill_log::MonitorFlags as F;
    let mut notes = Vec::new();
    if crate::load::sampled::is_sample_only(run) {
        notes.push(
            "sample mode: busy times are estimates from samples; waits are exact counts, but \
             their durations were not measured (shown as 0)"
                .to_owned(),
        );
    } else if !run.flags.contains(F::SCHEDULER) {
        notes.push(
            "no SCHEDULER flag: no periods, so no waits, busy times or time windows".to_owned(),
        );
    }
    if !run.flags.contains(F::STREAM) {
        notes.push(
            "no STREAM flag: no message counts, and stream ends are known only from blocked periods"
                .to_owned(),
        );
    }
    if !run.flags.contains(F::MAPPING) {
        notes.push("no MAPPING flag: tasks have no names".to_owned());
    }
    notes
}

fn worker_label(w: Option<u32>) -> String {
    w.map_or_else(|| "-".to_owned(), |w| w.to_string())
}

fn share(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_owned()
    } else {
        format!("{:.0}%", part as f64 * 100.0 / whole as f64)
    }
}

fn yes(b: bool) -> String {
    if b { "yes" } else { "" }.to_owned()
}

impl Waits {
    /// The human-readable tables, each cut after `limit` rows (0 = all).
    pub fn to_text(&self, limit: usize) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "waits in {}: W(A,B) = A waited for B. A reader waits when it reads its stream \
             empty (for the writer), a writer when it writes it full (for the reader); \
             each wait lasts to the task's next dispatch.",
            self.dir
        );
        let _ = write!(
            o,
            "waiting on streams: {}, of which across workers {} ({})",
            fmt_ns(self.total_wait_ns as f64),
            fmt_ns(self.cross_worker_wait_ns as f64),
            share(self.cross_worker_wait_ns, self.total_wait_ns)
        );
        match self.cross_rank_wait_ns {
            Some(r) => {
                let _ = writeln!(
                    o,
                    ", across ranks {} ({}; ⇄ marks cross-rank streams)",
                    fmt_ns(r as f64),
                    share(r, self.total_wait_ns)
                );
            }
            None => o.push('\n'),
        }
        if self.grouped {
            o.push_str(
                "names differing only in numeric path segments are folded (relay/* for relay/1, \
                 relay/2, ...); --no-group lists tasks one by one\n",
            );
        }
        let cut = |n: usize| if limit == 0 { n } else { n.min(limit) };
        let more = |o: &mut String, n: usize| {
            if n > cut(n) {
                let _ = writeln!(
                    o,
                    "  ... {} more rows (--limit 0 or --json lists all)",
                    n - cut(n)
                );
            }
        };
        let head = [
            "messages",
            "reader waits",
            "reader waited",
            "writer waits",
            "writer waited",
            "cross",
        ];
        let nums = |m: u64, rw: u64, rt: u64, ww: u64, wt: u64, c: bool, rank: &Option<String>| {
            vec![
                m.to_string(),
                rw.to_string(),
                fmt_ns(rt as f64),
                ww.to_string(),
                fmt_ns(wt as f64),
                rank.clone().unwrap_or_else(|| yes(c)),
            ]
        };

        o.push_str("\nstreams (heaviest first)\n");
        let rows: Vec<Vec<String>> = self.streams[..cut(self.streams.len())]
            .iter()
            .map(|s| {
                let mut id = match &s.stream_name {
                    Some(n) => format!("{n} ({})", s.stream),
                    None => s.stream.to_string(),
                };
                if s.streams > 1 {
                    let _ = write!(id, " +{}", s.streams - 1);
                }
                let mut r = vec![id, s.writer.clone(), s.reader.clone()];
                r.extend(nums(
                    s.messages,
                    s.reader_waits,
                    s.reader_wait_ns,
                    s.writer_waits,
                    s.writer_wait_ns,
                    s.cross_worker,
                    &s.cross_rank,
                ));
                r
            })
            .collect();
        let mut h = vec!["stream", "writer", "reader"];
        h.extend(head);
        table(&mut o, &h, &rows, &[1, 2, 8]);
        more(&mut o, self.streams.len());

        o.push_str("\ntask pairs (writer -> reader)\n");
        let rows: Vec<Vec<String>> = self.task_pairs[..cut(self.task_pairs.len())]
            .iter()
            .map(|p| {
                let mut r = vec![p.writer.clone(), p.reader.clone(), p.streams.to_string()];
                r.extend(nums(
                    p.messages,
                    p.reader_waits,
                    p.reader_wait_ns,
                    p.writer_waits,
                    p.writer_wait_ns,
                    p.cross_worker,
                    &p.cross_rank,
                ));
                r
            })
            .collect();
        let mut h = vec!["writer", "reader", "streams"];
        h.extend(head);
        table(&mut o, &h, &rows, &[0, 1, 8]);
        more(&mut o, self.task_pairs.len());

        o.push_str("\nworker pairs (writers' worker -> readers' worker)\n");
        let rows: Vec<Vec<String>> = self.worker_pairs[..cut(self.worker_pairs.len())]
            .iter()
            .map(|p| {
                let mut r = vec![
                    p.writer_lane
                        .clone()
                        .unwrap_or_else(|| worker_label(p.writer_worker)),
                    p.reader_lane
                        .clone()
                        .unwrap_or_else(|| worker_label(p.reader_worker)),
                    p.streams.to_string(),
                ];
                r.extend(nums(
                    p.messages,
                    p.reader_waits,
                    p.reader_wait_ns,
                    p.writer_waits,
                    p.writer_wait_ns,
                    p.cross_worker,
                    &None,
                ));
                r
            })
            .collect();
        let mut h = vec!["writers", "readers", "streams"];
        h.extend(head);
        table(&mut o, &h, &rows, &[8]);
        more(&mut o, self.worker_pairs.len());

        if self.open_waits > 0 {
            let _ = writeln!(
                o,
                "\n{} wait(s) never ended (the task's last period ended blocked): counted to the run's end",
                self.open_waits
            );
        }
        if self.unattributed_polls > 0 {
            let _ = writeln!(
                o,
                "\n{} poll wait(s) ({}) are on no stream: the period after them read nothing",
                self.unattributed_polls,
                fmt_ns(self.unattributed_poll_ns as f64)
            );
        }
        notes_and_warnings(&mut o, &self.notes, &self.warnings);
        o
    }
}

/// The `not analysed` and `warnings` sections of a text report.
pub(crate) fn notes_and_warnings(o: &mut String, notes: &[String], warnings: &[String]) {
    if !notes.is_empty() {
        o.push_str("\nnot analysed:\n");
        for n in notes {
            let _ = writeln!(o, "  {n}");
        }
    }
    if !warnings.is_empty() {
        o.push_str("\nwarnings:\n");
        for w in warnings {
            let _ = writeln!(o, "  {w}");
        }
    }
}
