//! Naming the task in the message of a panic: the default panic hook names
//! the worker thread (`thread 'rill-worker-1' panicked`), which says nothing
//! about which task of the network failed. rill chains a hook in front of
//! whatever hook was there (the default, or the program's own) that first
//! names the running task, then hands the panic on unchanged.

use std::sync::Once;

static INSTALL: Once = Once::new();

/// Installs the hook once per process (at a run's start).
pub(crate) fn install() {
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // A run's forced unwind raises no panic through the hook, but a
            // destructor may panic during it: then no task runs here.
            if let Some(t) = crate::context::current() {
                eprintln!(
                    "rill: task '{}' (id {}) on worker {} panicked; the run ends with an error naming it",
                    t.name, t.id, t.worker
                );
            }
            let unwinding = crate::context::unwinding_task_ptr();
            if !unwinding.is_null() {
                // A destructor panicked on the stack of a task that the run
                // is unwinding (the forced unwind raises no panic through
                // the hook): a panic that leaves a destructor during an
                // unwind, which Rust answers by aborting the process ("panic
                // in a destructor during cleanup") before the run can return
                // anything.
                // SAFETY: the task lives until its coroutine is dropped,
                // which is under way on this thread.
                let t = unsafe { &*unwinding };
                eprintln!(
                    "rill: a destructor panicked while the run dropped task '{}' (id {}), whose \
                     stack was unwinding; unless the destructor catches it, the process aborts (a panic \
                     that leaves a destructor during an unwind)",
                    t.name, t.id
                );
                crate::overflow::write_ending();
            }
            previous(info);
        }));
    });
}
