//! The task graph as the bottleneck rules look at it ([`Graph`]): each
//! task's streams, worker and connected part, and the streams that cross
//! workers.

use crate::load::ids::IdMap;
use crate::load::model::RunLog;
use crate::replay::activity_model::Activity;

/// Union-find over dense indices.
struct Parts(Vec<usize>);

impl Parts {
    fn find(&mut self, mut x: usize) -> usize {
        while self.0[x] != x {
            self.0[x] = self.0[self.0[x]];
            x = self.0[x];
        }
        x
    }

    fn join(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        if a != b {
            self.0[a.max(b)] = a.min(b);
        }
    }
}

/// The task graph as the windows need it.
pub(crate) struct Graph {
    /// Task ids, dense.
    pub tasks: Vec<u64>,
    /// Per task: input and output streams.
    pub(crate) inputs: Vec<Vec<u64>>,
    pub(crate) outputs: Vec<Vec<u64>>,
    /// Per task: its connected part.
    pub(crate) part: Vec<usize>,
    /// Per task: its worker.
    pub worker: Vec<Option<u32>>,
    /// Streams with both ends on known, different workers: (id, writer, reader).
    pub crossing: Vec<(u64, usize, usize)>,
    /// Per entry of `crossing`: whether the stream crosses ranks.
    pub cross_rank: Vec<bool>,
    /// Streams with both ends known.
    pub streams: usize,
}

pub(crate) fn graph(run: &RunLog, act: &Activity) -> Graph {
    let mut tasks: Vec<u64> = act.tasks.keys().copied().collect();
    tasks.sort_unstable();
    let mut index: IdMap<u64, usize> = IdMap::default();
    for (i, &t) in tasks.iter().enumerate() {
        index.insert(t, i);
    }
    let n = tasks.len();
    let mut g = Graph {
        inputs: vec![Vec::new(); n],
        outputs: vec![Vec::new(); n],
        part: Vec::new(),
        worker: tasks.iter().map(|&t| act.worker_of(run, t)).collect(),
        crossing: Vec::new(),
        cross_rank: Vec::new(),
        streams: 0,
        tasks,
    };
    let mut parts = Parts((0..n).collect());
    let mut ids: Vec<u64> = act.streams.keys().copied().collect();
    ids.sort_unstable();
    for s in ids {
        let (w, r) = act.ends(run, s);
        let w = w.and_then(|t| index.get(&t).copied());
        let r = r.and_then(|t| index.get(&t).copied());
        if let Some(w) = w {
            g.outputs[w].push(s);
        }
        if let Some(r) = r {
            g.inputs[r].push(s);
        }
        if let (Some(w), Some(r)) = (w, r) {
            g.streams += 1;
            parts.join(w, r);
            if matches!((g.worker[w], g.worker[r]), (Some(a), Some(b)) if a != b) {
                g.crossing.push((s, w, r));
                g.cross_rank
                    .push(run.ranks.as_ref().is_some_and(|x| x.cross(s).is_some()));
            }
        }
    }
    g.part = (0..n).map(|i| parts.find(i)).collect();
    g
}
