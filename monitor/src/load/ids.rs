//! Ids to dense indices: [`IdMap`], a hash map keyed by ids, and
//! [`IdIndex`], a direct table for small ids beside one.

use std::collections::HashMap;

use rustc_hash::FxBuildHasher;

/// A hash map keyed by ids, with rustc-hash's Fx hasher (the analyses look
/// up a task or stream per period; SipHash would dominate).
pub(crate) type IdMap<K, V> = HashMap<K, V, FxBuildHasher>;

/// Dense indices for ids: a direct table for small ids (the runtime numbers
/// tasks and streams from 1), a hash map for the rest.
#[derive(Debug, Default)]
pub(crate) struct IdIndex {
    /// `index + 1` by id; 0 = not seen.
    direct: Vec<u32>,
    map: IdMap<u64, u32>,
}

/// Ids below this go into the direct table (4 bytes each, grown on demand).
const DIRECT_IDS: u64 = 1 << 20;

impl IdIndex {
    /// The index of `id`; a new id gets `len` (the caller then pushes its
    /// entry) and `true`.
    #[inline]
    pub(crate) fn index(&mut self, id: u64, len: usize) -> (usize, bool) {
        match self.direct.get(id as usize) {
            Some(&i) if i != 0 && id < DIRECT_IDS => (i as usize - 1, false),
            _ => self.index_cold(id, len),
        }
    }

    /// The index of `id`, if it has one.
    pub(crate) fn get(&self, id: u64) -> Option<usize> {
        if id < DIRECT_IDS {
            match self.direct.get(id as usize) {
                Some(&i) if i != 0 => Some(i as usize - 1),
                _ => None,
            }
        } else {
            self.map.get(&id).map(|&i| i as usize)
        }
    }

    #[cold]
    #[inline(never)]
    fn index_cold(&mut self, id: u64, len: usize) -> (usize, bool) {
        if id >= DIRECT_IDS {
            let mut new = false;
            let i = *self.map.entry(id).or_insert_with(|| {
                new = true;
                len as u32
            });
            return (i as usize, new);
        }
        let id = id as usize;
        if id >= self.direct.len() {
            self.direct.resize((id + 1).next_power_of_two().max(64), 0);
        }
        match self.direct[id] {
            0 => {
                self.direct[id] = len as u32 + 1;
                (len, true)
            }
            i => (i as usize - 1, false),
        }
    }
}
