//! `rill-mon trace -o FILE.json`: Chrome trace-event JSON (opens in
//! Perfetto and chrome://tracing), every period an event: for small runs
//! (about 190 bytes a period); Perfetto's protobuf format is in
//! [`crate::trace::perfetto`].

use std::io::{self, Write};

use rill_log::EndState;
use serde::Serialize;
use serde_json::{json, Value};

use crate::load::model::RunLog;
use crate::load::scan::Item;
use crate::summary::summarize::end_state_name;
use crate::trace::perfetto::window;

/// One trace event as written.
#[derive(Serialize)]
struct Event<'a> {
    name: &'a str,
    cat: &'static str,
    ph: &'static str,
    /// Microseconds since the run's first time stamp.
    ts: f64,
    dur: f64,
    pid: u32,
    tid: u32,
    args: Value,
}

/// Counts of what [`write_chrome_trace`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceStats {
    /// Complete (`X`) events for periods.
    pub periods: u64,
    /// Complete events for waits.
    pub waits: u64,
    /// Spans shortened because they overlapped the previous one on their track.
    pub clipped: u64,
    /// Spans dropped because clipping left nothing.
    pub dropped: u64,
}

/// Walks the run's spans per worker, clipping overlaps, and hands each event
/// to `emit`.
fn events(
    run: &RunLog,
    (lo, hi): (u64, u64),
    mut emit: impl FnMut(Value) -> io::Result<()>,
) -> io::Result<TraceStats> {
    let mut stats = TraceStats::default();
    emit(json!({
        "name": "process_name", "ph": "M", "pid": 1, "tid": 0,
        "args": { "name": format!("rill run {}", run.dir.display()) }
    }))?;
    for w in &run.workers {
        emit(json!({
            "name": "thread_name", "ph": "M", "pid": 1, "tid": w.worker,
            "args": { "name": format!("worker {}", run.worker_name(w.worker)) }
        }))?;
        emit(json!({
            "name": "thread_sort_index", "ph": "M", "pid": 1, "tid": w.worker,
            "args": { "sort_index": w.worker }
        }))?;
    }
    let npt = run.calibration.ns_per_tick();
    let us = |ticks: u64| ticks as f64 * npt / 1e3;
    for w in &run.workers {
        // End of the previous span on this track, ticks after t0.
        let mut last_end: u64 = 0;
        let mut sc = w.scanner();
        while let Some(item) = sc.next() {
            let (s, e) = match item {
                Item::Period(p) => (p.start, p.end.max(p.start)),
                Item::WorkerWait { t, dur } => (t, t.saturating_add(dur)),
                _ => continue,
            };
            if e < lo || s > hi {
                continue;
            }
            let (s, e) = (s.max(lo), e.min(hi));
            let mut rs = s.saturating_sub(run.t0);
            let re = e.saturating_sub(run.t0);
            let clipped = rs < last_end;
            if clipped {
                stats.clipped += 1;
                rs = last_end;
            }
            if re < rs || (clipped && re == rs) {
                stats.dropped += 1;
                continue;
            }
            last_end = last_end.max(re);
            let ev = match item {
                Item::Period(p) => {
                    stats.periods += 1;
                    let name = run.task_label(p.task);
                    let (mut reads, mut writes) = (0u64, 0u64);
                    for io in sc.io() {
                        reads = reads.saturating_add(u64::from(io.reads));
                        writes = writes.saturating_add(u64::from(io.writes));
                    }
                    let mut args = json!({
                        "task": p.task,
                        "end_state": end_state_name(p.end_state),
                        "reads": reads,
                        "writes": writes,
                    });
                    if let EndState::BlockedInput { stream } | EndState::BlockedOutput { stream } =
                        p.end_state
                    {
                        args["stream"] = json!(stream);
                    }
                    serde_json::to_value(Event {
                        name: &name,
                        cat: "task",
                        ph: "X",
                        ts: us(rs),
                        dur: us(re - rs),
                        pid: 1,
                        tid: w.worker,
                        args,
                    })
                }
                _ => {
                    stats.waits += 1;
                    serde_json::to_value(Event {
                        name: "wait",
                        cat: "wait",
                        ph: "X",
                        ts: us(rs),
                        dur: us(re - rs),
                        pid: 1,
                        tid: w.worker,
                        args: json!({}),
                    })
                }
            };
            emit(ev.map_err(io::Error::other)?)?;
        }
    }
    Ok(stats)
}

/// The run as a Chrome trace-event document: `{"traceEvents": [...],
/// "displayTimeUnit": "ns"}` with one complete (`X`) event per period (named
/// after the task; `args`: task id, end state, messages, blocked-on stream)
/// and per wait (named `wait`), `pid` 1, `tid` = worker, `ts`/`dur` in
/// microseconds after the run's first time stamp, and thread-name metadata.
/// Spans on one track never overlap (an overlapping span is clipped).
///
/// Builds the whole document in memory; for large runs use
/// [`write_chrome_trace`].
pub fn chrome_trace(run: &RunLog) -> Value {
    let mut evs = Vec::new();
    let _ = events(run, (run.t0, run.t1), |v| {
        evs.push(v);
        Ok(())
    });
    json!({ "traceEvents": evs, "displayTimeUnit": "ns" })
}

/// Streams the document of [`chrome_trace`] to `out`.
pub fn write_chrome_trace(run: &RunLog, out: &mut dyn Write) -> io::Result<TraceStats> {
    write_chrome_trace_window(run, None, None, out)
}

/// Streams the document of [`chrome_trace`] to `out`, keeping the periods
/// and waits that overlap the window `[from_ms, to_ms]` (ms after the run's
/// first time stamp; open ends reach the run's ends), clipped to it.
pub fn write_chrome_trace_window(
    run: &RunLog,
    from_ms: Option<f64>,
    to_ms: Option<f64>,
    out: &mut dyn Write,
) -> io::Result<TraceStats> {
    out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
    let mut first = true;
    let stats = events(run, window(run, from_ms, to_ms), |v| {
        if !first {
            out.write_all(b",\n")?;
        }
        first = false;
        serde_json::to_writer(&mut *out, &v).map_err(io::Error::other)
    })?;
    out.write_all(b"\n]}\n")?;
    Ok(stats)
}
