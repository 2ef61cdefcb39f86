//! Stream names: what a program calls a stream ([`named_stream`]), shown
//! in errors, deadlock reports and the monitoring logs instead of a bare id.
//!
//! A stream keeps its name in its core (`Label`). Errors are formatted
//! where no core is at hand (a [`StreamClosed`](super::StreamClosed) is
//! printed by whoever got it), so named streams also register their name
//! in a process-wide table while they live; unnamed streams cost nothing.
//!
//! [`named_stream`]: super::named_stream

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// A stream's name and whether monitoring has logged its opening.
#[derive(Debug, Default)]
pub(crate) struct Label {
    pub(crate) name: Option<Box<str>>,
    /// Set once a monitored run logged the stream's opening (at creation,
    /// or at its first use for a stream made before the run).
    opened: AtomicBool,
}

impl Label {
    /// The label of stream `id`, registering a name.
    pub(crate) fn new(id: u64, name: Option<Box<str>>, opened: bool) -> Label {
        if let Some(n) = &name {
            table().insert(id, n.to_string());
        }
        Label {
            name,
            opened: AtomicBool::new(opened),
        }
    }

    /// Whether the opening still has to be logged; true once.
    pub(crate) fn take_open(&self) -> bool {
        // Relaxed: a flag for the log; both ends' first uses may race for it.
        !self.opened.swap(true, Ordering::Relaxed)
    }

    /// The stream is gone: forget its name.
    pub(crate) fn forget(&self, id: u64) {
        if self.name.is_some() {
            table().remove(id);
        }
    }
}

/// The process-wide table of live named streams.
struct Table(Mutex<HashMap<u64, String>>);

impl Table {
    fn insert(&self, id: u64, name: String) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, name);
    }
    fn remove(&self, id: u64) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
    }
}

fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| Table(Mutex::new(HashMap::new())))
}

/// The name of live stream `id`, if it has one.
pub fn name_of(id: u64) -> Option<String> {
    table()
        .0
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&id)
        .cloned()
}

/// How a report names stream `id`: `'name' (id)` or `id`.
pub(crate) fn describe(id: u64) -> String {
    match name_of(id) {
        Some(n) => format!("'{n}' ({id})"),
        None => id.to_string(),
    }
}
