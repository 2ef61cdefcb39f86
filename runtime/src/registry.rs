//! Every live task of a run, so that a deadlock can be reported and a failed
//! run can drop what is left. Sharded by the spawning worker; each shard is a
//! slab behind a mutex that is taken once at spawn and once at exit.

use std::sync::Mutex;

use crate::task::TaskRef;

const SHARDS: usize = 16;

#[derive(Default)]
struct Slab {
    items: Vec<Option<TaskRef>>,
    free: Vec<usize>,
}

pub(crate) struct Registry {
    shards: Box<[Mutex<Slab>]>,
}

impl Registry {
    pub(crate) fn new() -> Self {
        Registry {
            shards: (0..SHARDS).map(|_| Mutex::new(Slab::default())).collect(),
        }
    }

    /// Adds `t`, recording its slot in the task.
    pub(crate) fn insert(&self, t: TaskRef, hint: usize) {
        let shard = hint % SHARDS;
        let mut s = self.shards[shard].lock().unwrap_or_else(|e| e.into_inner());
        let idx = match s.free.pop() {
            Some(i) => {
                s.items[i] = Some(t);
                i
            }
            None => {
                s.items.push(Some(t));
                s.items.len() - 1
            }
        };
        t.get().slot.set(idx * SHARDS + shard);
    }

    /// Removes `t`.
    pub(crate) fn remove(&self, t: TaskRef) {
        let slot = t.get().slot.get();
        let (idx, shard) = (slot / SHARDS, slot % SHARDS);
        let mut s = self.shards[shard].lock().unwrap_or_else(|e| e.into_inner());
        s.items[idx] = None;
        s.free.push(idx);
    }

    /// Takes every task out (after the workers stopped).
    pub(crate) fn drain(&self) -> Vec<TaskRef> {
        let mut out = Vec::new();
        for sh in self.shards.iter() {
            let mut s = sh.lock().unwrap_or_else(|e| e.into_inner());
            out.extend(s.items.drain(..).flatten());
            s.free.clear();
        }
        out.sort_by_key(|t| t.get().id);
        out
    }
}

impl Registry {
    /// Every task, without removing them (after the workers stopped).
    pub(crate) fn drain_view(&self) -> Vec<TaskRef> {
        let mut out = Vec::new();
        for sh in self.shards.iter() {
            let s = sh.lock().unwrap_or_else(|e| e.into_inner());
            out.extend(s.items.iter().flatten().copied());
        }
        out.sort_by_key(|t| t.get().id);
        out
    }
}
