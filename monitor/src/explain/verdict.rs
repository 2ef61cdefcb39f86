//! The words of `rill-mon bottleneck`: each finding's evidence and sentence,
//! the verdict paragraph, and the text report.

use std::fmt::Write as _;

use crate::explain::findings::{BottleneckOptions, Bottlenecks, Finding, Placement, Raw};
use crate::explain::task_graph::Graph;
use crate::load::model::RunLog;
use crate::render::number::fmt_ns;
use crate::render::prose::fill;
use crate::replay::activity_model::Activity;

/// Findings below this share are listed in the JSON only (the text counts
/// them).
const MINOR: f64 = 0.01;

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// A count with thousands separators (`1,200,000`).
fn count(n: u64) -> String {
    let d = n.to_string();
    let mut o = String::with_capacity(d.len() + d.len() / 3);
    for (i, ch) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            o.push(',');
        }
        o.push(ch);
    }
    o
}

/// `part` of `whole` as a percentage (0 when `whole` is 0).
fn of(part: u64, whole: u64) -> String {
    pct(if whole > 0 {
        part as f64 / whole as f64
    } else {
        0.0
    })
}

fn stream_label(run: &RunLog, s: u64) -> String {
    match run.streams.get(&s).and_then(|i| i.name.as_deref()) {
        Some(n) => format!("stream {n} ({s})"),
        None => format!("stream {s}"),
    }
}

/// A cross-rank stream's finding in words: the time its ends waited on it
/// with their workers otherwise idle (`latency`, the mean share of the
/// windows in which it held), on a stream whose two ends are on two ranks.
fn cross_rank_finding(
    c: &crate::load::ranks::model::CrossStream,
    sname: &str,
    (w, r): (&str, &str),
    (a, b): (&str, &str),
    (k, windows): (usize, usize),
    latency: f64,
    share: f64,
) -> Finding {
    let mark = c.marker();
    let evidence = format!(
        "{sname} ({mark}, net stream {}) from {w} (worker {a}) to {r} (worker {b}): in {k} of \
         {windows} windows its ends waited on it {} of the time with their workers otherwise \
         idle (blocked on it, or woken and not yet dispatched), and no task connected to it \
         was a bottleneck",
        c.net_stream,
        pct(latency)
    );
    let sentence = format!(
        "Crossing ranks holds the run back: {sname} carries {w}'s messages to {r} on another \
         rank ({mark}), and its ends waited on it with their workers otherwise idle {} of the \
         time in {k} of {windows} windows ({} of all waiting in the run); placing both on one \
         rank avoids the transport (rill-mon map --ranks plans a mapping).",
        pct(latency),
        pct(share)
    );
    Finding {
        kind: "stream".into(),
        name: format!("{w} -> {r} {mark}"),
        share,
        evidence,
        predicted_speedup: None,
        cross_rank: Some(c.clone()),
        sentence,
    }
}

/// A finding in words.
pub(crate) fn finding(run: &RunLog, act: &Activity, raw: &Raw, share: f64) -> Finding {
    let windows = act.grid.n;
    let label = |t: u64| run.task_label(t);
    match *raw {
        Raw::Task {
            task,
            worker,
            windows: k,
            busy,
            worker_busy,
            full,
            empty,
            behind,
            input,
            output,
        } => {
            let name = label(task);
            let x = worker.map_or_else(|| "?".to_owned(), |x| run.worker_name(x));
            if act.sampled {
                // Sample mode: shares of time are estimates, waits are counts.
                let ev = [
                    format!(
                        "in {k} of {windows} windows it ran {} of the time on worker {x} (the \
                         worker was busy {}; estimates from samples)",
                        pct(busy),
                        pct(worker_busy)
                    ),
                    format!(
                        "over the run, writers found its inputs full {} times and readers found \
                         its outputs empty {} times (exact counts; sample mode measures no wait \
                         times)",
                        full as u64, empty as u64
                    ),
                ];
                let sentence = format!(
                    "{name} holds the run back: in {k} of {windows} windows it kept worker {x} \
                     busy (it ran {} of the time, the worker {}) while its neighbours waited on \
                     it {} times. It ran {} of all the work in the run while it held.",
                    pct(busy),
                    pct(worker_busy),
                    (full + empty) as u64,
                    pct(share)
                );
                return Finding {
                    kind: "task".into(),
                    name,
                    share,
                    evidence: ev.join("; "),
                    predicted_speedup: None,
                    cross_rank: None,
                    sentence,
                };
            }
            let mut ev = vec![format!(
                "in {k} of {windows} windows it ran {} of the time on worker {x} (the worker \
                 was busy {}) while others waited on it {} of the time (added up over them)",
                pct(busy),
                pct(worker_busy),
                pct(full + empty + behind)
            )];
            let mut waiters = Vec::new();
            if let Some(s) = input {
                let who = act
                    .ends(run, s)
                    .0
                    .map_or_else(|| "its writer".into(), label);
                ev.push(format!(
                    "{who} blocked writing its full input ({}) {}",
                    stream_label(run, s),
                    pct(full)
                ));
                waiters.push(format!("{who} waited to write to it ({})", pct(full)));
            }
            if let Some(s) = output {
                let who = act
                    .ends(run, s)
                    .1
                    .map_or_else(|| "its reader".into(), label);
                ev.push(format!(
                    "{who} blocked reading its empty output ({}) {}",
                    stream_label(run, s),
                    pct(empty)
                ));
                waiters.push(format!("{who} waited for its output ({})", pct(empty)));
            }
            if behind >= 0.005 {
                ev.push(format!(
                    "tasks on worker {x} were ready behind it {}",
                    pct(behind)
                ));
                waiters.push(format!(
                    "tasks on worker {x} waited behind it ({})",
                    pct(behind)
                ));
            }
            if waiters.is_empty() {
                waiters.push("others waited for it".to_owned());
            }
            let sentence = format!(
                "{name} holds the run back: in {k} of {windows} windows it kept worker {x} busy \
                 (it ran {} of the time, the worker {}) while {}. It accounts for {} of all \
                 waiting in the run.",
                pct(busy),
                pct(worker_busy),
                waiters.join(", "),
                pct(share)
            );
            Finding {
                kind: "task".into(),
                name,
                share,
                evidence: ev.join("; "),
                predicted_speedup: None,
                cross_rank: None,
                sentence,
            }
        }
        Raw::Stream {
            stream,
            writer,
            reader,
            workers: (a, b),
            windows: k,
            latency,
        } => {
            let sname = stream_label(run, stream);
            let (w, r) = (label(writer), label(reader));
            let (a, b) = (run.worker_name(a), run.worker_name(b));
            if let Some(c) = run.ranks.as_ref().and_then(|x| x.cross(stream)) {
                return cross_rank_finding(
                    c,
                    &sname,
                    (&w, &r),
                    (&a, &b),
                    (k, windows),
                    latency,
                    share,
                );
            }
            let evidence = format!(
                "{sname} from {w} (worker {a}) to {r} (worker {b}): in {k} of {windows} windows, \
                 tasks woken on it waited {} of the time for their otherwise idle worker to \
                 dispatch them, and no task connected to it was a bottleneck",
                pct(latency)
            );
            let sentence = format!(
                "Placement holds the run back: {w} and {r} run on different workers ({a} and \
                 {b}), and after wake-ups on {sname} the woken task waited for its idle worker \
                 {} of the time in {k} of {windows} windows ({} of all waiting in the run); on \
                 one worker that wake-up costs next to nothing (rill-mon map proposes a mapping).",
                pct(latency),
                pct(share)
            );
            Finding {
                kind: "stream".into(),
                name: format!("{w} -> {r}"),
                share,
                evidence,
                predicted_speedup: None,
                cross_rank: None,
                sentence,
            }
        }
        Raw::Placement(ref p) => placement(run, p, share),
        Raw::Worker {
            worker,
            windows: k,
            busy,
            idle,
            idle_worker,
            ref tops,
        } => {
            let (worker, idle_worker) = (run.worker_name(worker), run.worker_name(idle_worker));
            let tops: Vec<String> = tops
                .iter()
                .map(|&(t, b)| format!("{} ({})", label(t), pct(b)))
                .collect();
            let tops = if tops.is_empty() {
                "none".to_owned()
            } else {
                tops.join(", ")
            };
            let evidence = format!(
                "in {k} of {windows} windows it was busy {} while another worker (most often \
                 worker {idle_worker}) was idle {}; its busiest tasks then: {tops}",
                pct(busy),
                pct(idle)
            );
            let sentence = format!(
                "Load imbalance holds the run back: worker {worker} was busy {} of the time in \
                 {k} of {windows} windows while another (most often worker {idle_worker}) was \
                 idle {}, and no single task on it was the bottleneck; its work ({tops}) is \
                 worth spreading (rill-mon map proposes a mapping).",
                pct(busy),
                pct(idle)
            );
            Finding {
                kind: "worker".into(),
                name: format!("worker {worker}"),
                share,
                evidence,
                predicted_speedup: None,
                cross_rank: None,
                sentence,
            }
        }
    }
}

/// The placement finding in words (`explain/placement.rs`).
fn placement(run: &RunLog, p: &Placement, share: f64) -> Finding {
    let ms = |ns: u64| fmt_ns(ns as f64);
    let gain = p.observed_ns as f64 / p.proposed_ns.max(1) as f64;
    let pairs: Vec<String> = p
        .pairs
        .iter()
        .map(|(w, r, n, m)| {
            format!(
                "{w} -> {r} ({n} stream{}, {} messages, {})",
                if *n == 1 { "" } else { "s" },
                count(*m),
                of(*m, p.messages)
            )
        })
        .collect();
    let streams: Vec<String> = p
        .heaviest
        .iter()
        .map(|&(s, w, r, m)| {
            format!(
                "{} -> {} ({}): {} messages ({})",
                run.task_label(w),
                run.task_label(r),
                stream_label(run, s),
                count(m),
                of(m, p.messages)
            )
        })
        .collect();
    let cost = if p.busy_cost_ns > 0.0 && p.span_cost_ns > 0.0 {
        format!(
            "a message across workers costs {} of busy time at each end and a message or wait \
             across workers {} more of the span",
            fmt_ns(p.busy_cost_ns),
            fmt_ns(p.span_cost_ns)
        )
    } else if p.busy_cost_ns > 0.0 {
        format!(
            "a message across workers costs {} of busy time at each end",
            fmt_ns(p.busy_cost_ns)
        )
    } else {
        format!(
            "a message or wait across workers costs {} of the span",
            fmt_ns(p.span_cost_ns)
        )
    };
    let evidence = format!(
        "{} of {} streams ran across workers, carrying {} of {} messages ({}); heaviest: {}; \
         streams: {}; rill-mon map proposes a mapping for {} workers that crosses {} stream(s) \
         ({} messages, {}); the model (busy time + crossing time, calibrated on this run: {cost}) \
         predicts {} for it against {} for the observed mapping ({gain:.2}x faster; observed \
         span {})",
        p.crossing,
        p.streams,
        count(p.crossing_messages),
        count(p.messages),
        of(p.crossing_messages, p.messages),
        pairs.join(", "),
        streams.join(", "),
        p.workers,
        p.proposed_crossing,
        count(p.proposed_messages),
        of(p.proposed_messages, p.messages),
        ms(p.proposed_ns),
        ms(p.observed_ns),
        ms(p.span_ns),
    );
    let top = p
        .pairs
        .first()
        .map_or_else(String::new, |(w, r, _, _)| format!("{w} -> {r}"));
    let keeps = match p.proposed_crossing {
        0 => "every stream".to_owned(),
        n => format!("all but {n} stream(s)"),
    };
    let sentence = format!(
        "Placement holds the run back: {} of its {} messages ({}) crossed workers, on {} of {} \
         streams ({top} the most), and crossing costs the tasks time ({cost}). The mapping \
         rill-mon map proposes for {} workers keeps {keeps} on one worker and is predicted \
         {gain:.2}x faster ({} against {}).",
        count(p.crossing_messages),
        count(p.messages),
        of(p.crossing_messages, p.messages),
        p.crossing,
        p.streams,
        p.workers,
        ms(p.proposed_ns),
        ms(p.observed_ns),
    );
    Finding {
        kind: "stream".into(),
        name: top,
        share,
        evidence,
        predicted_speedup: Some(gain),
        cross_rank: None,
        sentence,
    }
}

/// The verdict paragraph.
pub(crate) fn verdict(
    run: &RunLog,
    act: &Activity,
    g: &Graph,
    found: &[Finding],
    opts: &BottleneckOptions,
) -> String {
    let span = act.grid.span;
    if span == 0 || act.tasks.is_empty() {
        return "Nothing to judge: the logs hold no task periods (was the SCHEDULER flag on?)."
            .to_owned();
    }
    let busiest = g
        .tasks
        .iter()
        .map(|&t| (act.tasks[&t].busy_ticks, t))
        .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
        .filter(|&(b, _)| b > 0);
    let busiest_line = |v: &mut String| {
        if let Some((b, t)) = busiest {
            let _ = write!(
                v,
                " The busiest task was {}, busy {} of the run.",
                run.task_label(t),
                pct(b as f64 / span as f64)
            );
        }
    };
    if let Some(first) = found.first() {
        let mut v = first.sentence.clone();
        let others: Vec<&Finding> = found[1..].iter().filter(|f| f.share >= MINOR).collect();
        if !others.is_empty() {
            let named: Vec<String> = others
                .iter()
                .take(3)
                .map(|f| format!("{} {} ({})", f.kind, f.name, pct(f.share)))
                .collect();
            let _ = write!(
                v,
                " Also found: {}{}.",
                named.join(", "),
                if others.len() > 3 { ", ..." } else { "" }
            );
        }
        if first.kind != "task" {
            busiest_line(&mut v);
        }
        return v;
    }
    let busy: Vec<f64> = act
        .workers
        .values()
        .map(|s| (0..act.grid.n).fold(0u64, |n, w| n.saturating_add(s.get(w))) as f64 / span as f64)
        .collect();
    let mean = busy.iter().sum::<f64>() / busy.len().max(1) as f64;
    let mut v = if mean >= opts.alpha {
        format!(
            "No single task, stream or worker holds the run back: its {} worker(s) were busy {} \
             of the run on average. The run is bound by the CPU time of its tasks: more workers, \
             or less work per message, would help.",
            busy.len(),
            pct(mean)
        )
    } else {
        format!(
            "No bottleneck meets the thresholds (α = {}, β = {}, γ = {}): the workers were busy \
             {} of the run on average, so the run is bound by its tasks' dependencies (a task \
             waits for one that waits in turn) more than by one task, stream or worker.",
            pct(opts.alpha),
            pct(opts.beta),
            pct(opts.gamma),
            pct(mean)
        )
    };
    busiest_line(&mut v);
    v
}

impl Bottlenecks {
    /// The human-readable report: the verdict, the findings, the definitions.
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "bottleneck of {} ({} windows of {}; α = {}, β = {}, γ = {})\n",
            self.dir,
            self.windows,
            fmt_ns(self.window_ns as f64),
            pct(self.alpha),
            pct(self.beta),
            pct(self.gamma)
        );
        let _ = writeln!(o, "{}", fill(&self.verdict, 78));
        if !self.bottlenecks.is_empty() {
            let _ = writeln!(
                o,
                "\nfindings, strongest first (share = the part of all waiting, {}, each accounts for):",
                fmt_ns(self.waiting_ns as f64)
            );
            let shown = self
                .bottlenecks
                .iter()
                .enumerate()
                .filter(|(k, f)| *k == 0 || f.share >= MINOR);
            for (k, f) in shown {
                let share = match f.predicted_speedup {
                    Some(_) => format!("placement: saves {} of the predicted time", pct(f.share)),
                    None => format!("share {}", pct(f.share)),
                };
                let line = format!("{}. {} {} ({share}): {}", k + 1, f.kind, f.name, f.evidence);
                for (j, l) in fill(&line, 75).lines().enumerate() {
                    let _ = writeln!(o, "{}{l}", if j == 0 { "  " } else { "     " });
                }
            }
            let minor = self.bottlenecks[1..]
                .iter()
                .filter(|f| f.share < MINOR)
                .count();
            if minor > 0 {
                let _ = writeln!(
                    o,
                    "  and {minor} minor finding(s), each under {} of the waiting (--json lists them)",
                    pct(MINOR)
                );
            }
        }
        let defs = "In a window: a task is a bottleneck when its worker is busy at least α, it \
             runs at least half of that, and others wait on it at least β of the window (writers \
             blocked on its full inputs, readers on its empty outputs, tasks of its worker ready \
             behind it); a stream, when its ends run on different workers and wake-ups on it cost \
             at least γ of the window with no bottleneck task connected to it; a worker, when it \
             is busy at least α while another is idle at least β and no bottleneck task runs on \
             it.";
        let _ = writeln!(
            o,
            "\n{}",
            fill(
                &format!(
                    "{defs} {}{}",
                    if self.across_ranks {
                        format!("{} ", crate::explain::findings::CROSS_RANK_RULE)
                    } else {
                        String::new()
                    },
                    crate::explain::placement::rule_text()
                ),
                78
            )
        );
        crate::explain::waits::notes_and_warnings(&mut o, &self.notes, &self.warnings);
        o
    }
}
