//! The mapping file `rill-mon map` writes ([`MapPlan::to_file`]) and the
//! plan it holds ([`MapPlan`]); the planner is `planner.rs`.
//!
//! File format: `"name" = worker` lines, `#` comments. Names are quoted
//! with the escapes `\\`, `\"`, `\n`, `\r`, `\t` and `\uXXXX` for other
//! control characters, which `ManualTable::parse` decodes, so names with
//! `#`, `=`, quotes or spaces at their ends round-trip. Matching is by
//! longest prefix, and every named task has a line, so each maps by its own
//! line (`relay/1` cannot catch `relay/10`: that name's own line is
//! longer); only a task missing from the file whose name extends a listed
//! one would take that line's worker.

use std::fmt::Write as _;

use serde::Serialize;

use crate::render::number::fmt_ns;

/// What `rill-mon map` proposes.
#[derive(Clone, Debug, Serialize)]
pub struct MapPlan {
    /// The log directory.
    pub dir: String,
    /// Workers planned for.
    pub workers: usize,
    /// One entry per task name, by worker, then by the first task's id.
    pub tasks: Vec<MappedTask>,
    /// Tasks without a name (not in the file; placed round-robin).
    pub unnamed_tasks: u64,
    /// The what-if estimate.
    pub estimate: Estimate,
    /// Per worker under the proposed mapping.
    pub loads: Vec<WorkerLoad>,
    /// Problems with the logs.
    pub warnings: Vec<String>,
}

/// One line of the file.
#[derive(Clone, Debug, Serialize)]
pub struct MappedTask {
    /// The task name.
    pub name: String,
    /// The proposed worker.
    pub worker: usize,
    /// Busy time of the tasks of that name.
    pub busy_ns: u64,
    /// How many tasks have that name.
    pub tasks: u64,
    /// The worker the (busiest) task of that name ran on.
    pub observed_worker: Option<u32>,
}

/// A worker's load under the proposed mapping.
#[derive(Clone, Debug, Serialize)]
pub struct WorkerLoad {
    /// Worker id.
    pub worker: usize,
    /// Busy time of its tasks, less what crossings cost them in the
    /// observed run (`c_busy` times their observed crossing traffic).
    pub busy_ns: u64,
    /// `c ·` its crossing traffic.
    pub crossing_ns: u64,
    /// Its named tasks (lines of the file).
    pub names: u64,
}

/// Streams between workers under a mapping.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Cut {
    /// Streams whose ends are on different workers.
    pub streams: u64,
    /// Their messages.
    pub messages: u64,
    /// Their traffic (messages + waits).
    pub traffic: u64,
}

/// The what-if estimate (see the module documentation).
#[derive(Clone, Debug, Serialize)]
pub struct Estimate {
    /// The model's run time under the proposed mapping.
    pub proposed_ns: u64,
    /// The model's run time under the observed mapping.
    pub observed_mapping_ns: u64,
    /// The observed run's span.
    pub observed_span_ns: u64,
    /// `c`: time per unit of traffic crossing workers, calibrated on the
    /// span.
    pub crossing_cost_ns: f64,
    /// `c_busy`: busy time per message crossing workers, at each end,
    /// fitted to the tasks' busy times (see the module documentation).
    pub busy_crossing_cost_ns: f64,
    /// Whether `c` was calibrated on crossing traffic (else it is 0 and the
    /// estimates are lower bounds).
    pub calibrated: bool,
    /// Messages on all streams whose two ends are known (the base of the
    /// cuts' shares).
    pub messages: u64,
    /// Where the proposed mapping came from.
    pub basis: Basis,
    /// The proposed mapping's cut.
    pub proposed_cut: Cut,
    /// The observed mapping's cut.
    pub observed_cut: Cut,
}

/// Where a proposed mapping came from: the partition's own search, or the
/// observed mapping refined by the same single-name moves (where the
/// search's result is predicted slower than the observed mapping, or faster
/// by less than the planner's `KEEP_MARGIN`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Basis {
    /// The search's result (predicted no slower than the observed mapping).
    Search,
    /// The observed mapping unchanged: no mapping found is predicted faster
    /// by the planner's `KEEP_MARGIN` (15%) or more.
    Observed,
    /// The observed mapping with `moved` names moved to other workers.
    ObservedImproved {
        /// Names on another worker than observed.
        moved: u64,
    },
}

impl Basis {
    /// One line for people.
    pub fn describe(&self) -> String {
        match self {
            Basis::Search => "found by the search".into(),
            Basis::Observed => {
                "the observed mapping, kept: no mapping found is predicted 15% faster or more"
                    .into()
            }
            Basis::ObservedImproved { moved } => {
                format!("the observed mapping with {moved} name(s) moved")
            }
        }
    }
}

/// `name` as a quoted key of the mapping file (see the module
/// documentation for the escapes).
pub fn quote_name(name: &str) -> String {
    let mut s = String::with_capacity(name.len() + 2);
    s.push('"');
    for ch in name.chars() {
        match ch {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(s, "\\u{:04X}", u32::from(c));
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

impl MapPlan {
    /// The mapping file.
    pub fn to_file(&self) -> String {
        let mut o = String::new();
        let e = &self.estimate;
        let ms = |ns: u64| fmt_ns(ns as f64);
        let _ = writeln!(
            o,
            "# rill-mon map: the {} named task(s) of {} on {} worker(s).",
            self.tasks.len(),
            self.dir.replace('\n', " "),
            self.workers
        );
        o.push_str(
            "# Load with --mapping FILE (rill::ManualTable::load). Lines are \"task name\" = worker;\n\
             # every named task has its own line, so longest-prefix matching maps each by it.\n\
             # A task missing here whose name extends a listed one (relay/10 when only relay/1\n\
             # is listed) would take that line's worker; unnamed tasks go round-robin.\n#\n",
        );
        let _ = writeln!(
            o,
            "# Predicted run time = max over workers of busy time + c_busy x crossing messages\n\
             # + c x crossing traffic (traffic = messages + waits on streams between workers):\n\
             #   this mapping:     {}\n\
             #   observed mapping: {} (the observed run took {})",
            ms(e.proposed_ns),
            ms(e.observed_mapping_ns),
            ms(e.observed_span_ns)
        );
        if e.calibrated {
            let _ = writeln!(
                o,
                "#   c_busy = {} of busy time per message across workers (at each end), fitted to\n\
                 #   the tasks' busy times; c = {} per message or wait across workers, calibrated\n\
                 #   on the observed span",
                fmt_ns(e.busy_crossing_cost_ns),
                fmt_ns(e.crossing_cost_ns)
            );
        } else {
            o.push_str(
                "#   c_busy = c = 0: the observed run gave no crossing time to calibrate, so both are lower bounds\n",
            );
        }
        let _ = writeln!(o, "# This mapping is {}.", e.basis.describe());
        let _ = writeln!(
            o,
            "# Streams between workers: {} carrying {} messages (observed: {} carrying {}).\n\
             # The model ignores dependencies: a run serialised by its graph (a token ring)\n\
             # takes longer than it predicts.",
            e.proposed_cut.streams,
            e.proposed_cut.messages,
            e.observed_cut.streams,
            e.observed_cut.messages
        );
        if self.unnamed_tasks > 0 {
            let _ = writeln!(
                o,
                "# {} unnamed task(s) are not listed (the estimate puts them round-robin).",
                self.unnamed_tasks
            );
        }
        for w in &self.warnings {
            let _ = writeln!(o, "# warning: {}", w.replace('\n', " "));
        }
        for l in &self.loads {
            let _ = writeln!(
                o,
                "\n# worker {}: busy {}, crossing {}, {} name(s)",
                l.worker,
                ms(l.busy_ns),
                ms(l.crossing_ns),
                l.names
            );
            for t in self.tasks.iter().filter(|t| t.worker == l.worker) {
                let _ = writeln!(o, "{} = {}", quote_name(&t.name), t.worker);
            }
        }
        o
    }

    /// A few lines for the terminal.
    pub fn to_text(&self, file: &str) -> String {
        let e = &self.estimate;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "wrote {file}: {} named task(s) on {} worker(s){}",
            self.tasks.len(),
            self.workers,
            if self.unnamed_tasks > 0 {
                format!(
                    " ({} unnamed task(s) left to round-robin)",
                    self.unnamed_tasks
                )
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            o,
            "predicted run time: {} with this mapping, {} with the observed one (observed span {}){}",
            fmt_ns(e.proposed_ns as f64),
            fmt_ns(e.observed_mapping_ns as f64),
            fmt_ns(e.observed_span_ns as f64),
            if e.calibrated {
                format!(
                    "; crossing cost {} of busy time per message and {} per message or wait",
                    fmt_ns(e.busy_crossing_cost_ns),
                    fmt_ns(e.crossing_cost_ns)
                )
            } else {
                "; no crossing cost observed, so lower bounds".to_owned()
            }
        );
        let _ = writeln!(o, "mapping: {}", e.basis.describe());
        let _ = writeln!(
            o,
            "streams between workers: {} ({} messages), observed {} ({} messages)",
            e.proposed_cut.streams,
            e.proposed_cut.messages,
            e.observed_cut.streams,
            e.observed_cut.messages
        );
        for l in &self.loads {
            let _ = writeln!(
                o,
                "  worker {}: busy {}, crossing {}, {} name(s)",
                l.worker,
                fmt_ns(l.busy_ns as f64),
                fmt_ns(l.crossing_ns as f64),
                l.names
            );
        }
        for w in &self.warnings {
            let _ = writeln!(o, "warning: {w}");
        }
        o
    }
}
