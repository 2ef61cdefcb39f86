//! The report of a deadlock: the tasks left, what each waits for, and a
//! waiting cycle among them, gathered once the workers have stopped.

use crate::error::{BlockedTask, RunError};
use crate::registry::Registry;
use crate::vocab::{BlockedOn, TaskId};

/// Lists the blocked tasks and finds a waiting cycle among them.
pub(crate) fn report(registry: &Registry) -> RunError {
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
    RunError::Deadlock {
        blocked,
        cycle,
        stream_names,
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
