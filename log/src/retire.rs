//! Old logs out of a new run's way, without the run waiting for their
//! deletion.
//!
//! A run never truncates the logs an earlier run left (a reader may have one
//! mapped, and shrinking a mapped file ends the reader with SIGBUS): it
//! makes new files. Deleting the old file first cost a run's start 180 to
//! 270 µs per file on an ext4 mounted with `discard` (the freed blocks are
//! trimmed before `unlink` returns), as much as a short benchmark's whole
//! monitoring cost. [`retire`] instead renames the old file to a hidden
//! name in the same directory (a rename frees nothing: about 15 µs) and
//! hands it to a background thread that deletes it. A process that exits
//! before that thread is done leaves hidden files behind; the next run in
//! the directory hands them on again ([`sweep`]). Readers list logs by
//! their names (`worker-N.rlog`, `sampler.rlog`) and never see these.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock};

/// The prefix of a retired file's name.
pub const RETIRED_PREFIX: &str = ".retired-";

/// The deleting thread's queue (`None` where it could not be started).
static DELETER: OnceLock<Option<Mutex<Sender<PathBuf>>>> = OnceLock::new();

/// Retired files named by this process so far (for unique names).
static RETIRED: AtomicU64 = AtomicU64::new(0);

/// Gets `path` out of the way: renames it to a hidden name beside it and
/// deletes it in the background. A missing file is not an error. Where the
/// rename fails (a read-only directory, say), the file is deleted here, and
/// that error is the one returned.
pub fn retire(path: &Path) -> io::Result<()> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return remove(path);
    };
    let n = RETIRED.fetch_add(1, Ordering::Relaxed);
    let hidden = dir.join(format!(
        "{RETIRED_PREFIX}{}-{n}-{}",
        std::process::id(),
        name.to_string_lossy()
    ));
    match std::fs::rename(path, &hidden) {
        Ok(()) => {
            delete_later(hidden);
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(_) => remove(path),
    }
}

/// Hands the retired files in `dir` (another process's left over) to the
/// deleting thread (a run that owns `dir` calls it: no other run writes there).
pub fn sweep(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        // This process's own are queued already; deleting one twice is
        // harmless.
        if e.file_name().to_string_lossy().starts_with(RETIRED_PREFIX) {
            delete_later(e.path());
        }
    }
}

fn remove(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Queues `path` for the deleting thread, starting it the first time; where
/// it cannot run, deletes `path` here.
fn delete_later(path: PathBuf) {
    let queue = DELETER.get_or_init(|| {
        let (tx, rx) = channel::<PathBuf>();
        std::thread::Builder::new()
            .name("rill-retire".into())
            .spawn(move || {
                for p in rx {
                    // Best effort: a file already gone, or one that cannot
                    // be deleted, is left to the next sweep.
                    let _ = std::fs::remove_file(&p);
                }
            })
            .ok()
            .map(|_| Mutex::new(tx))
    });
    let sent = queue.as_ref().is_some_and(|q| {
        q.lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(path.clone())
            .is_ok()
    });
    if !sent {
        let _ = std::fs::remove_file(&path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn gone_soon(p: &Path) -> bool {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            if !p.exists() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        false
    }

    #[test]
    fn a_retired_file_leaves_its_name_at_once_and_the_directory_soon() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("worker-0.rlog");
        std::fs::write(&p, b"old run").unwrap();
        // A reader holding the old file keeps reading it.
        let held = std::fs::File::open(&p).unwrap();
        retire(&p).unwrap();
        assert!(!p.exists(), "the name is free for the new log");
        std::fs::write(&p, b"new run").unwrap();
        let mut old = String::new();
        std::io::Read::read_to_string(&mut &held, &mut old).unwrap();
        assert_eq!(old, "old run");
        let left = || {
            std::fs::read_dir(dir.path())
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(RETIRED_PREFIX))
                .count()
        };
        let t = Instant::now();
        while left() > 0 && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(left(), 0, "the retired file is deleted");
        assert_eq!(std::fs::read(&p).unwrap(), b"new run");
        // A missing file is nothing to retire.
        retire(&dir.path().join("nothing.rlog")).unwrap();
    }

    #[test]
    fn a_sweep_deletes_what_another_process_left() {
        let dir = tempfile::tempdir().unwrap();
        let left = dir
            .path()
            .join(format!("{RETIRED_PREFIX}1-0-worker-3.rlog"));
        let keep = dir.path().join("worker-3.rlog");
        std::fs::write(&left, b"x").unwrap();
        std::fs::write(&keep, b"y").unwrap();
        sweep(dir.path());
        assert!(gone_soon(&left));
        assert!(keep.exists());
    }
}
