//! The summary as text ([`Summary::to_text`]).

use std::fmt::Write as _;

use crate::render::number::fmt_ns;
use crate::render::table::table;
use crate::summary::latency::LatencyStats;
use crate::summary::model::Summary;

/// Tasks listed in the text report when groups are shown as well.
const TEXT_TASKS_WITH_GROUPS: usize = 20;

// ---------------------------------------------------------------------------
// Text.

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_owned()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

impl Summary {
    /// Worker `w`'s name: `rR/wK` in a run across ranks, else its id.
    fn worker_name(&self, w: u32) -> String {
        match &self.ranks {
            Some(r) => r.worker_name(w),
            None => w.to_string(),
        }
    }

    /// The human-readable report.
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "rill run {}: {} worker(s), flags {}, span {}",
            self.dir,
            self.worker_count,
            self.flags,
            fmt_ns(self.span_ns as f64)
        );
        if let Some(r) = &self.ranks {
            let _ = writeln!(o, "ranks: {}", r.describe());
        }
        let _ = writeln!(
            o,
            "log: {} events in {} bytes ({:.2} bytes/event)",
            self.events, self.bytes, self.bytes_per_event
        );

        o.push_str(
            "\nworkers (WE = waiting events, WT = waiting time; dispatches = task resumptions, \
             as RunStats counts them;\n  spins = a task about to block spun first and went on, \
             logged as a period, a wait and a new period)\n",
        );
        let rows: Vec<Vec<String>> = self
            .workers
            .iter()
            .map(|w| {
                vec![
                    w.name.clone().unwrap_or_else(|| w.worker.to_string()),
                    fmt_ns(w.span_ns as f64),
                    fmt_ns(w.busy_ns as f64),
                    pct(w.busy_ns, w.span_ns),
                    fmt_ns(w.wait_ns as f64),
                    w.waiting_events.to_string(),
                    fmt_ns(w.unaccounted_ns as f64),
                    w.dispatches.to_string(),
                    w.spins.to_string(),
                ]
            })
            .collect();
        table(
            &mut o,
            &[
                "worker",
                "span",
                "busy",
                "busy%",
                "WT",
                "WE",
                "unaccounted",
                "dispatches",
                "spins",
            ],
            &rows,
            &[],
        );

        // Groups, where some fold several tasks.
        let folded = self.grouped && self.groups.len() < self.tasks.len();
        if folded {
            let est = self.groups.iter().any(|g| g.estimated);
            let _ = writeln!(
                o,
                "\ntask groups (numbered names folded; heaviest first{})",
                if est {
                    "; ~ busy time estimated from samples"
                } else {
                    ""
                }
            );
            let rows: Vec<Vec<String>> = self
                .groups
                .iter()
                .map(|g| {
                    let tilde = if g.estimated { "~" } else { "" };
                    vec![
                        g.group.clone(),
                        g.tasks.to_string(),
                        format!("{tilde}{}", fmt_ns(g.busy_ns as f64)),
                        format!("{:.1}%", g.busy_share * 100.0),
                        g.dispatches.to_string(),
                        g.reads.to_string(),
                        g.writes.to_string(),
                        g.waits.to_string(),
                        g.wait_ns.map_or_else(|| "-".into(), |w| fmt_ns(w as f64)),
                    ]
                })
                .collect();
            table(
                &mut o,
                &[
                    "group",
                    "tasks",
                    "busy",
                    "busy%",
                    "dispatches",
                    "reads",
                    "writes",
                    "waits",
                    "wait time",
                ],
                &rows,
                &[0],
            );
            let flagged: Vec<_> = self
                .groups
                .iter()
                .filter_map(|g| g.outlier.as_ref().map(|x| (g, x)))
                .collect();
            if !flagged.is_empty() {
                let _ = writeln!(
                    o,
                    "  uneven groups (a task busy over {}x its group's median; the sums above hide it):",
                    crate::summary::outlier::OUTLIER_RATIO
                );
                for (g, x) in flagged {
                    let _ = writeln!(o, "    {}: {}", g.group, x.describe());
                }
            }
        }

        if !self.tasks.is_empty() {
            let shown = if folded {
                TEXT_TASKS_WITH_GROUPS.min(self.tasks.len())
            } else {
                self.tasks.len()
            };
            if shown < self.tasks.len() {
                let _ = writeln!(
                    o,
                    "\ntasks (the {shown} heaviest of {}; --no-group lists every task)",
                    self.tasks.len()
                );
            } else {
                o.push_str("\ntasks (heaviest first)\n");
            }
            let rows: Vec<Vec<String>> = self
                .tasks
                .iter()
                .take(shown)
                .map(|t| {
                    vec![
                        t.task.to_string(),
                        t.name.clone(),
                        t.worker.map_or_else(|| "-".into(), |w| self.worker_name(w)),
                        fmt_ns(t.total_ns as f64),
                        t.dispatches.to_string(),
                        fmt_ns(t.mean_ns),
                        t.reads.to_string(),
                        t.writes.to_string(),
                        t.last_state.clone().unwrap_or_else(|| "-".into()),
                    ]
                })
                .collect();
            table(
                &mut o,
                &[
                    "task",
                    "name",
                    "worker",
                    "total",
                    "dispatches",
                    "mean",
                    "reads",
                    "writes",
                    "last",
                ],
                &rows,
                &[1, 8],
            );
        }

        if !self.streams.is_empty() {
            o.push_str(
                "\nstreams (waits: how often a task blocked on the stream, reading it empty or \
                 writing it full;\n  a poll wait, blocked on several inputs at once, counts on \
                 the stream its task read first\n  when it next ran, as `waits` counts it)\n",
            );
            let ranked = self.ranks.is_some();
            let rows: Vec<Vec<String>> = self
                .streams
                .iter()
                .map(|s| {
                    let mut row = vec![
                        match &s.name {
                            Some(n) => format!("{n} ({})", s.stream),
                            None => s.stream.to_string(),
                        },
                        s.capacity.map_or_else(|| "-".into(), |c| c.to_string()),
                        s.writer.clone().unwrap_or_else(|| "-".into()),
                        s.reader.clone().unwrap_or_else(|| "-".into()),
                        s.read.to_string(),
                        s.written.to_string(),
                        s.writer_blocked.to_string(),
                        s.reader_blocked
                            .saturating_add(s.reader_poll_waits)
                            .to_string(),
                    ];
                    if ranked {
                        row.push(match (&s.cross_rank, s.rank) {
                            (Some(c), _) => c.marker(),
                            (None, Some(r)) => format!("r{r}"),
                            (None, None) => "-".into(),
                        });
                    }
                    row
                })
                .collect();
            let mut head = vec![
                "stream",
                "capacity",
                "writer",
                "reader",
                "carried",
                "written",
                "writer waits",
                "reader waits",
            ];
            if ranked {
                head.push("rank");
            }
            table(&mut o, &head, &rows, &[2, 3, 8]);
            if self.unattributed_poll_waits > 0 {
                let _ = writeln!(
                    o,
                    "  {} poll wait(s) are on no stream: the period after them read nothing",
                    self.unattributed_poll_waits
                );
            }
        }

        if let Some(t) = &self.throughput {
            let _ = writeln!(
                o,
                "\nthroughput: {:.1} {}/s ({} {} over {})",
                t.per_sec,
                t.basis,
                t.count,
                t.basis,
                fmt_ns(self.span_ns as f64)
            );
        }
        if let Some(l) = &self.latency {
            let _ = writeln!(
                o,
                "\nper-input latency ({}; {} outputs)",
                l.timing, l.all.outputs
            );
            let row = |name: String, s: &LatencyStats| {
                vec![
                    name,
                    s.outputs.to_string(),
                    fmt_ns(s.mean_ns),
                    fmt_ns(s.stddev_ns),
                    fmt_ns(s.min_ns),
                    fmt_ns(s.max_ns),
                    fmt_ns(s.jitter_ns),
                ]
            };
            let mut rows = vec![row("all".into(), &l.all)];
            if l.sinks.len() > 1 {
                rows.extend(l.sinks.iter().map(|s| row(s.name.clone(), &s.stats)));
            }
            table(
                &mut o,
                &[
                    "outputs of",
                    "outputs",
                    "mean",
                    "stddev",
                    "min",
                    "max",
                    "jitter",
                ],
                &rows,
                &[0],
            );
            if l.skipped_periods > 0 {
                let _ = writeln!(
                    o,
                    "  {} periods claiming implausibly many messages (over 16 Mi in one period, or more \
                     than the logs' size allows) were left out: the latencies are unreliable",
                    l.skipped_periods
                );
            }
            if l.unmatched_reads > 0 {
                let _ = writeln!(
                    o,
                    "  {} reads had no logged write (damaged or missing logs)",
                    l.unmatched_reads
                );
            }
        }
        if !self.notes.is_empty() {
            o.push_str("\nnot analysed:\n");
            for n in &self.notes {
                let _ = writeln!(o, "  {n}");
            }
        }
        if !self.warnings.is_empty() {
            o.push_str("\nwarnings:\n");
            for w in &self.warnings {
                let _ = writeln!(o, "  {w}");
            }
        }
        o
    }
}
