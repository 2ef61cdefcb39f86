//! The report of a deadlock: the tasks left, what each waits for, a waiting
//! cycle among them, and the stream ends that no live task holds, gathered
//! once the workers have stopped; and the report's text (the message of
//! `RunError::Deadlock`).
//!
//! The holder of an end is the task noted in it (`stream/holder.rs`). A
//! holder that is not among the tasks left has ended while its end lives on:
//! the end was leaked (`mem::forget`) or moved out of the task, and nobody
//! can use it now. The report names such a holder when the run still knows
//! its name: the tasks the run started with keep theirs for the run
//! (`Shared::initial_assigns`); a task spawned in the run leaves only its id.

use std::fmt::Write;

use crate::registry::Registry;
use crate::vocab::{BlockedOn, Side, TaskId};

/// A blocked task, as listed in a deadlock report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedTask {
    /// Its id.
    pub id: TaskId,
    /// Its name.
    pub name: String,
    /// What it waits for.
    pub on: BlockedOn,
}

/// What a deadlock report holds (the fields of `RunError::Deadlock`).
pub(crate) struct Report {
    pub(crate) blocked: Vec<BlockedTask>,
    pub(crate) cycle: Vec<String>,
    pub(crate) stream_names: Vec<(u64, String)>,
    pub(crate) ended: Vec<(TaskId, String)>,
}

/// Lists the blocked tasks and finds a waiting cycle among them. `started`
/// is the run's tasks it started with, (id, worker, name): the names of
/// holders that have ended are looked up there.
pub(crate) fn report(registry: &Registry, started: &[(TaskId, usize, String)]) -> Report {
    let mut blocked = Vec::new();
    for t in registry.drain_view() {
        let task = t.get();
        // SAFETY: the workers have stopped; this thread reads task fields alone.
        let on = task.blocked_on.with(|p| unsafe { (*p).clone() });
        blocked.push(BlockedTask {
            id: task.id,
            name: task.name.to_string(),
            on,
        });
    }
    let cycle = find_cycle(&blocked);
    // Names now, while the streams live: the error is printed later.
    let mut stream_names = Vec::new();
    for b in &blocked {
        let ids: Vec<u64> = match &b.on {
            BlockedOn::Input { stream, .. } | BlockedOn::Output { stream, .. } => vec![*stream],
            BlockedOn::Any { streams } => streams.iter().map(|(s, _)| *s).collect(),
            BlockedOn::Nothing => Vec::new(),
        };
        for id in ids {
            if let Some(n) = crate::stream::names::name_of(id) {
                stream_names.push((id, n));
            }
        }
    }
    let mut ended: Vec<(TaskId, String)> = Vec::new();
    for (_, _, id) in leaked_ends(&blocked) {
        if ended.iter().any(|(e, _)| *e == id) {
            continue;
        }
        if let Some((_, _, name)) = started.iter().find(|(s, _, _)| *s == id) {
            ended.push((id, name.clone()));
        }
    }
    Report {
        blocked,
        cycle,
        stream_names,
        ended,
    }
}

/// A cycle in the waiting relation W(A,B), as task names.
pub(crate) fn find_cycle(blocked: &[BlockedTask]) -> Vec<String> {
    use std::collections::HashMap;
    let by_id: HashMap<TaskId, &BlockedTask> = blocked.iter().map(|b| (b.id, b)).collect();
    let next = |b: &BlockedTask| -> Vec<TaskId> {
        match &b.on {
            BlockedOn::Input { peer, .. } | BlockedOn::Output { peer, .. } => {
                peer.iter().copied().collect()
            }
            BlockedOn::Any { streams } => streams.iter().filter_map(|(_, p)| *p).collect(),
            BlockedOn::Nothing => Vec::new(),
        }
    };
    // Iterative DFS with colours.
    let mut colour: HashMap<TaskId, u8> = HashMap::new();
    for start in blocked {
        if colour.contains_key(&start.id) {
            continue;
        }
        let mut stack: Vec<(TaskId, Vec<TaskId>)> = vec![(start.id, next(start))];
        let mut path: Vec<TaskId> = vec![start.id];
        colour.insert(start.id, 1);
        while let Some((_, succ)) = stack.last_mut() {
            match succ.pop() {
                Some(s) => match colour.get(&s) {
                    Some(1) => {
                        let pos = path.iter().position(|&x| x == s).unwrap_or(0);
                        let mut names: Vec<String> = path[pos..]
                            .iter()
                            .map(|id| format!("{} ({id})", by_id[id].name))
                            .collect();
                        names.push(names[0].clone());
                        return names;
                    }
                    Some(_) => {}
                    None => {
                        if let Some(b) = by_id.get(&s) {
                            colour.insert(s, 1);
                            path.push(s);
                            stack.push((s, next(b)));
                        }
                    }
                },
                None => {
                    let (id, _) = stack.pop().expect("non-empty");
                    colour.insert(id, 2);
                    path.pop();
                }
            }
        }
    }
    Vec::new()
}

/// The ends that the blocked tasks wait on and that no live task holds:
/// (side, stream, holder), once each. A holder that is not among the tasks
/// left has ended (every task left is in `blocked`).
fn leaked_ends(blocked: &[BlockedTask]) -> Vec<(Side, u64, TaskId)> {
    let live = |id: TaskId| blocked.iter().any(|b| b.id == id);
    let mut out: Vec<(Side, u64, TaskId)> = Vec::new();
    let mut add = |side: Side, stream: u64, peer: Option<TaskId>| {
        if let Some(id) = peer {
            if !live(id) && !out.iter().any(|(s, st, _)| *s == side && *st == stream) {
                out.push((side, stream, id));
            }
        }
    };
    for b in blocked {
        match &b.on {
            BlockedOn::Input { stream, peer } => add(Side::Writer, *stream, *peer),
            BlockedOn::Output { stream, peer } => add(Side::Reader, *stream, *peer),
            BlockedOn::Any { streams } => {
                for (stream, peer) in streams {
                    add(Side::Writer, *stream, *peer);
                }
            }
            BlockedOn::Nothing => {}
        }
    }
    out
}

/// The text of `RunError::Deadlock`.
pub(crate) fn text(
    blocked: &[BlockedTask],
    cycle: &[String],
    names: &[(u64, String)],
    ended: &[(TaskId, String)],
) -> String {
    let label = |id: u64| match names.iter().find(|(s, _)| *s == id) {
        Some((_, n)) => format!("'{n}' ({id})"),
        None => id.to_string(),
    };
    let holders = Holders { blocked, ended };
    let mut s = format!(
        "deadlock: {} task(s) are blocked and none can run",
        blocked.len()
    );
    if !cycle.is_empty() {
        let _ = write!(s, "; waiting cycle: {}", cycle.join(" -> "));
    } else if blocked.iter().any(|b| has_unknown_peer(&b.on)) {
        s.push_str(
            "; no waiting cycle is known: some ends were never used, so their holders are \
             not known (hand a task its ends with spawn_with to name them)",
        );
    }
    for b in blocked.iter().take(20) {
        let what = match &b.on {
            BlockedOn::Nothing => "ready but never ran".to_string(),
            BlockedOn::Input { stream, peer } => format!(
                "reading empty stream {} (writer: {})",
                label(*stream),
                holders.peer_text(*peer)
            ),
            BlockedOn::Output { stream, peer } => format!(
                "writing full stream {} (reader: {})",
                label(*stream),
                holders.peer_text(*peer)
            ),
            BlockedOn::Any { streams } => format!(
                "polling streams {}",
                streams
                    .iter()
                    .map(|(s, p)| format!("{} (writer: {})", label(*s), holders.short(*p)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let _ = write!(s, "\n  task '{}' (id {}): {}", b.name, b.id, what);
    }
    if blocked.len() > 20 {
        let _ = write!(s, "\n  ... and {} more", blocked.len() - 20);
    }
    let leaked = leaked_ends(blocked);
    if !leaked.is_empty() {
        let ends: Vec<String> = leaked
            .iter()
            .map(|&(side, stream, id)| {
                let side = match side {
                    Side::Writer => "writer",
                    Side::Reader => "reader",
                };
                format!(
                    "the {side} of stream {} ({}, ended)",
                    label(stream),
                    holders.name(id)
                )
            })
            .collect();
        let _ = write!(
            s,
            "\n  leaked ends (held by no live task): {}",
            ends.join(", ")
        );
    }
    s
}

fn has_unknown_peer(on: &BlockedOn) -> bool {
    match on {
        BlockedOn::Input { peer, .. } | BlockedOn::Output { peer, .. } => peer.is_none(),
        BlockedOn::Any { streams } => streams.iter().any(|(_, p)| p.is_none()),
        BlockedOn::Nothing => false,
    }
}

/// The holders a report can name: the tasks left (`blocked`), and those
/// that have ended whose names the run kept (`ended`).
struct Holders<'a> {
    blocked: &'a [BlockedTask],
    ended: &'a [(TaskId, String)],
}

impl Holders<'_> {
    /// Whether task `id` is among the tasks left.
    fn live(&self, id: TaskId) -> bool {
        self.blocked.iter().any(|b| b.id == id)
    }

    /// Task `id`, by name and id: `task 'name' (id N)`, or `task N` for a
    /// task that has ended without leaving its name.
    fn name(&self, id: TaskId) -> String {
        let name = self
            .blocked
            .iter()
            .find(|b| b.id == id)
            .map(|b| b.name.as_str())
            .or_else(|| {
                self.ended
                    .iter()
                    .find(|(e, _)| *e == id)
                    .map(|(_, n)| n.as_str())
            });
        match name {
            Some(n) => format!("task '{n}' (id {id})"),
            None => format!("task {id}"),
        }
    }

    /// The holder of the other end, named: a task left in the run, or one
    /// that has ended while its end lives on (leaked with `mem::forget`, or
    /// moved out of the task before it ended).
    fn peer_text(&self, p: Option<TaskId>) -> String {
        match p {
            Some(id) if self.live(id) => self.name(id),
            Some(id) => format!(
                "{}, which has ended; its end outlived it (leaked, or moved out of \
                 the task) and nobody can use it now",
                self.name(id)
            ),
            None => "not known: its end was never used (spawn_with names the holder in advance; \
                     an end that a thread outside the run holds counts from its first use \
                     there, or from hold_outside)"
                .into(),
        }
    }

    /// [`peer_text`](Self::peer_text) in short, for one of several streams
    /// polled.
    fn short(&self, p: Option<TaskId>) -> String {
        match p {
            Some(id) if self.live(id) => self.name(id),
            Some(id) => format!("{}, which has ended", self.name(id)),
            None => "not known".into(),
        }
    }
}
