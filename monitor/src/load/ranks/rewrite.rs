//! One rank's log re-encoded as a log of the merged run: its times moved
//! onto rank 0's clock and into nanoseconds, its task and stream ids and
//! its worker ids made unique across the ranks.
//!
//! The merged run's logs are ordinary logs (the current format version,
//! one calibration of one tick per nanosecond for all), so every analysis
//! reads them as it reads one process's logs. Each record keeps its place
//! in its log; a rank's clock map is monotone, so each log's order of times
//! is kept too.

use std::collections::HashMap;

use rill_log::{Calibration, Encoder, EndReason, EndState, Header, Record, Scanner, Side, VecSink};

use super::meta::LocalSide;

/// A rank's clock as the merged run reads it: its ticks to Unix
/// nanoseconds (its calibration), shifted by its offset to rank 0's clock,
/// less the merged run's origin `base_ns`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    pub cal: Calibration,
    pub offset_ns: i64,
    pub base_ns: u64,
}

impl Clock {
    /// `t` (this rank's ticks) on rank 0's clock, Unix nanoseconds (may lie
    /// outside `u64` for a forged header: hence `i128`).
    pub fn unix(&self, t: u64) -> i128 {
        i128::from(self.cal.to_unix_ns(t)) + i128::from(self.offset_ns)
    }

    /// `t` as a time of the merged run: nanoseconds since `base_ns`,
    /// clamped to `u64`.
    pub fn at(&self, t: u64) -> u64 {
        (self.unix(t) - i128::from(self.base_ns)).clamp(0, i128::from(u64::MAX)) as u64
    }

    /// The span `[t, t + dur)` in the merged run: its start and length.
    fn span(&self, t: u64, dur: u64) -> (u64, u64) {
        let a = self.at(t);
        (a, self.at(t.saturating_add(dur)).saturating_sub(a))
    }
}

/// How a rank's ids become the merged run's: tasks and streams move up by
/// `base` (0 stays 0: "none"), the two halves of a cross-rank stream take
/// one id, and workers move up by `first_worker`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ids {
    pub base: u64,
    pub first_worker: u32,
    /// This rank's cross-rank streams: local id -> (merged id, local end).
    pub cross: HashMap<u64, (u64, LocalSide)>,
}

impl Ids {
    fn task(&self, t: u64) -> u64 {
        if t == 0 {
            0
        } else {
            self.base.saturating_add(t)
        }
    }

    fn stream(&self, s: u64) -> u64 {
        match self.cross.get(&s) {
            Some(&(g, _)) => g,
            None if s == 0 => 0,
            None => self.base.saturating_add(s),
        }
    }

    fn worker(&self, w: u32) -> u32 {
        self.first_worker.saturating_add(w)
    }

    /// Whether a bind or close of `side` of `stream` belongs to the other
    /// rank's half: the end that is not local here is the transport's
    /// (rank.json says which end is local), and the other rank's log binds
    /// the task that owns it.
    fn foreign(&self, stream: u64, side: Side) -> bool {
        self.cross.get(&stream).is_some_and(|&(_, local)| {
            !matches!(
                (local, side),
                (LocalSide::Reader, Side::Reader) | (LocalSide::Writer, Side::Writer)
            )
        })
    }
}

/// What the first pass over a log finds: its largest task or stream id and
/// its earliest time (raw ticks; `None` without timed records).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Extent {
    pub max_id: u64,
    pub min_t: Option<u64>,
}

/// The ids a record names (tasks and streams alike), handed to `f`.
fn ids_of(r: &Record, mut f: impl FnMut(u64)) {
    match r {
        Record::TaskAssign { task, parent, .. } => {
            f(*task);
            f(*parent);
        }
        Record::TaskMigrate { task, .. } | Record::TaskTotals { task, .. } => f(*task),
        Record::Period {
            task,
            end_state,
            io,
            ..
        } => {
            f(*task);
            if let Some(s) = end_state.stream() {
                f(s);
            }
            io.iter().for_each(|e| f(e.stream));
        }
        Record::StreamOpen {
            stream, creator, ..
        } => {
            f(*stream);
            f(*creator);
        }
        Record::StreamName { stream, .. }
        | Record::StreamClose { stream, .. }
        | Record::StreamTotals { stream, .. } => f(*stream),
        Record::StreamBind { stream, task, .. } => {
            f(*stream);
            f(*task);
        }
        Record::StreamReplace { old, new, .. } => {
            f(*old);
            f(*new);
        }
        Record::Samples(w) => w.tasks.iter().for_each(|&(t, _)| f(t)),
        Record::WorkerStart { .. }
        | Record::WorkerWait { .. }
        | Record::WorkerEnd { .. }
        | Record::WorkerTotals { .. } => {}
    }
}

/// The first pass: [`Extent`] of the records from `start` on.
pub(crate) fn extent(data: &[u8], start: usize) -> Extent {
    let mut sc = Scanner::new(data, start);
    let mut e = Extent::default();
    while let Some(item) = sc.next() {
        let r = sc.to_record(item);
        ids_of(&r, |id| e.max_id = e.max_id.max(id));
        let t = r.time();
        e.min_t = Some(e.min_t.map_or(t, |m| m.min(t)));
    }
    e
}

/// `r` as the merged run records it, or `None` for a bind or close of the
/// end of a cross-rank stream that is not local to this rank.
fn convert(r: Record, c: &Clock, ids: &Ids) -> Option<Record> {
    Some(match r {
        Record::WorkerStart { t } => Record::WorkerStart { t: c.at(t) },
        Record::WorkerEnd { t } => Record::WorkerEnd { t: c.at(t) },
        Record::WorkerWait { t, dur } => {
            let (t, dur) = c.span(t, dur);
            Record::WorkerWait { t, dur }
        }
        Record::TaskAssign {
            t,
            task,
            parent,
            worker,
            name,
        } => Record::TaskAssign {
            t: c.at(t),
            task: ids.task(task),
            parent: ids.task(parent),
            worker: ids.worker(worker),
            name,
        },
        Record::TaskMigrate { t, task, from, to } => Record::TaskMigrate {
            t: c.at(t),
            task: ids.task(task),
            from: ids.worker(from),
            to: ids.worker(to),
        },
        Record::Period {
            start,
            end,
            task,
            end_state,
            mut io,
            ops,
            mut op_times,
        } => {
            for e in &mut io {
                e.stream = ids.stream(e.stream);
            }
            for t in &mut op_times {
                *t = c.at(*t);
            }
            let end_state = match end_state {
                EndState::BlockedInput { stream } => EndState::BlockedInput {
                    stream: ids.stream(stream),
                },
                EndState::BlockedOutput { stream } => EndState::BlockedOutput {
                    stream: ids.stream(stream),
                },
                other => other,
            };
            let start_ns = c.at(start);
            Record::Period {
                start: start_ns,
                end: c.at(end).max(start_ns),
                task: ids.task(task),
                end_state,
                io,
                ops,
                op_times,
            }
        }
        Record::StreamOpen {
            t,
            stream,
            capacity,
            creator,
        } => Record::StreamOpen {
            t: c.at(t),
            stream: ids.stream(stream),
            capacity,
            creator: ids.task(creator),
        },
        Record::StreamName { t, stream, name } => Record::StreamName {
            t: c.at(t),
            stream: ids.stream(stream),
            name,
        },
        Record::StreamBind {
            t,
            stream,
            side,
            task,
        } => {
            if ids.foreign(stream, side) {
                return None;
            }
            Record::StreamBind {
                t: c.at(t),
                stream: ids.stream(stream),
                side,
                task: ids.task(task),
            }
        }
        Record::StreamClose { t, stream, side } => {
            if ids.foreign(stream, side) {
                return None;
            }
            Record::StreamClose {
                t: c.at(t),
                stream: ids.stream(stream),
                side,
            }
        }
        Record::StreamReplace { t, side, old, new } => Record::StreamReplace {
            t: c.at(t),
            side,
            old: ids.stream(old),
            new: ids.stream(new),
        },
        Record::TaskTotals {
            t,
            task,
            dispatches,
        } => Record::TaskTotals {
            t: c.at(t),
            task: ids.task(task),
            dispatches,
        },
        Record::StreamTotals {
            t,
            stream,
            side,
            messages,
            waits,
        } => Record::StreamTotals {
            t: c.at(t),
            stream: ids.stream(stream),
            side,
            messages,
            waits,
        },
        Record::WorkerTotals {
            t,
            dispatches,
            spins,
            idles,
            parks,
        } => Record::WorkerTotals {
            t: c.at(t),
            dispatches,
            spins,
            idles,
            parks,
        },
        Record::Samples(mut w) => {
            (w.t, w.dur) = c.span(w.t, w.dur);
            w.worker = ids.worker(w.worker);
            for (t, _) in &mut w.tasks {
                *t = ids.task(*t);
            }
            Record::Samples(w)
        }
    })
}

/// Why a log's records end where they do, as the load says it of a log
/// of one process (`label` names the file).
fn end_warning(label: &str, sc: &Scanner<'_>, len: usize) -> Option<String> {
    let stop = sc.offset();
    match sc.end_reason() {
        Some(EndReason::Damaged { offset, reason }) => Some(format!(
            "{label}: damaged record at byte {offset}: {reason}; the {} bytes from there on were skipped",
            (len as u64).saturating_sub(*offset)
        )),
        _ if stop < len => Some(format!(
            "{label}: records end at byte {stop} of {len}: the rest is an unwritten (zero) tail, \
             so the run probably did not finish cleanly"
        )),
        _ => None,
    }
}

/// The records of `data` from `start` on, converted and encoded after
/// `header` (the merged run's header for this log), and what is wrong with
/// the original, if anything.
pub(crate) fn rewrite(
    data: &[u8],
    start: usize,
    header: &Header,
    clock: &Clock,
    ids: &Ids,
    label: &str,
) -> (Vec<u8>, Option<String>) {
    let mut sink = VecSink::new();
    let mut enc = Encoder::new();
    let mut sc = Scanner::new(data, start);
    while let Some(item) = sc.next() {
        let r = sc.to_record(item);
        if let Some(r) = convert(r, clock, ids) {
            enc.record(&mut sink, &r);
        }
    }
    let warning = end_warning(label, &sc, data.len());
    let body = sink.into_bytes();
    let mut out = Vec::with_capacity(rill_log::HEADER_LEN + body.len());
    out.extend_from_slice(&header.to_bytes());
    out.extend_from_slice(&body);
    (out, warning)
}

/// The windows of a rank's sampler log, converted, and what is wrong with
/// it, if anything.
pub(crate) fn sampler_windows(
    data: &[u8],
    start: usize,
    clock: &Clock,
    ids: &Ids,
    label: &str,
) -> (Vec<rill_log::SampleWindow>, Option<String>) {
    let mut sc = Scanner::new(data, start);
    let mut windows = Vec::new();
    while let Some(item) = sc.next() {
        if let Some(Record::Samples(w)) = convert(sc.to_record(item), clock, ids) {
            windows.push(w);
        }
    }
    (windows, end_warning(label, &sc, data.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rill_log::{MonitorFlags, StreamIo};

    #[test]
    fn times_move_and_ids_stay_apart() {
        let cal = Calibration {
            ticks_per_sec: 2e9,
            start_ticks: 1000,
            start_unix_ns: 10_000_000_000,
        };
        let clock = Clock {
            cal,
            offset_ns: -5_000_000_000,
            base_ns: 4_000_000_000,
        };
        // Tick 3000 is 1000 ns after the calibration's start: Unix 10 s +
        // 1 µs, on rank 0's clock 5 s + 1 µs, 1 s + 1 µs after the base.
        assert_eq!(clock.at(3000), 1_000_001_000);
        assert_eq!(clock.span(3000, 2000), (1_000_001_000, 1000));
        let mut ids = Ids {
            base: 100,
            first_worker: 2,
            ..Ids::default()
        };
        ids.cross.insert(7, (40, LocalSide::Reader));
        assert_eq!(
            (ids.task(0), ids.task(5), ids.stream(7), ids.stream(8)),
            (0, 105, 40, 108)
        );
        assert!(ids.foreign(7, Side::Writer) && !ids.foreign(7, Side::Reader));
        let p = Record::Period {
            start: 3000,
            end: 5000,
            task: 5,
            end_state: EndState::BlockedInput { stream: 7 },
            io: vec![StreamIo {
                stream: 8,
                reads: 1,
                writes: 0,
                woke_peer: false,
            }],
            ops: vec![],
            op_times: vec![4000],
        };
        let Some(Record::Period {
            start,
            end,
            task,
            end_state,
            io,
            op_times,
            ..
        }) = convert(p, &clock, &ids)
        else {
            panic!("a period stays a period")
        };
        assert_eq!((start, end, task), (1_000_001_000, 1_000_002_000, 105));
        assert_eq!(end_state, EndState::BlockedInput { stream: 40 });
        assert_eq!((io[0].stream, op_times[0]), (108, 1_000_001_500));
        let bind = |side| Record::StreamBind {
            t: 3000,
            stream: 7,
            side,
            task: 5,
        };
        assert!(convert(bind(Side::Writer), &clock, &ids).is_none());
        assert!(convert(bind(Side::Reader), &clock, &ids).is_some());
        let header = Header::new(MonitorFlags::FULL, 2, 3, Calibration::nanos());
        let (bytes, warning) = rewrite(&[], 0, &header, &clock, &ids, "x");
        assert_eq!(bytes.len(), rill_log::HEADER_LEN);
        assert!(warning.is_none());
    }
}
