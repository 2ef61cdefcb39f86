//! [`DirLock`]: a log directory belongs to one live run at a time.
//!
//! The owner holds an exclusive `flock(2)` on the directory's
//! [`LOCK_FILE_NAME`] file, which holds its process id. The kernel drops the
//! lock when the owner closes the file or dies, SIGKILL included, so a
//! directory left by a dead run is free again without any cleaning up; the
//! file itself stays (removing it would let a run that opened it just before
//! lock a file no longer in the directory, beside a run that locks a new
//! one).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The name of the lock file in a log directory.
pub const LOCK_FILE_NAME: &str = "rill.lock";

/// How long [`DirLock::acquire`] waits for the owner of a directory to
/// write its pid, when the lock file is still empty.
const PID_WAIT: Duration = Duration::from_millis(200);

/// Why a log directory could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum DirLockError {
    /// Another live run (this process or another) owns the directory.
    #[error(
        "the log directory {} is in use by a live run ({}); give another directory, or wait for that run to end",
        dir.display(),
        match pid { Some(p) => format!("pid {p}"), None => "pid not known".to_owned() }
    )]
    Held {
        /// The directory.
        dir: PathBuf,
        /// The owner's process id, as its lock file gives it.
        pid: Option<u32>,
    },
    /// The lock file could not be made or locked.
    #[error("cannot lock the log directory {}: {source}", dir.display())]
    Io {
        /// The directory.
        dir: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

/// Ownership of a log directory, held until dropped.
#[derive(Debug)]
pub struct DirLock {
    /// The open, locked lock file (closing it releases the lock); `None`
    /// where the filesystem has no `flock` (the directory is then not
    /// guarded).
    file: Option<File>,
    path: PathBuf,
}

impl DirLock {
    /// Takes `dir` (which must exist) for this run: locks its lock file,
    /// without waiting, and writes this process's id into it. Fails with
    /// [`DirLockError::Held`], naming the owner's pid, while another run
    /// holds it. On a filesystem that cannot lock files the directory is
    /// taken unguarded.
    pub fn acquire(dir: &Path) -> Result<DirLock, DirLockError> {
        let path = dir.join(LOCK_FILE_NAME);
        let io_err = |source| DirLockError::Io {
            dir: dir.to_path_buf(),
            source,
        };
        // Not truncated on open: until the lock is ours, the pid in it is
        // the owner's.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io_err)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(DirLockError::Held {
                    dir: dir.to_path_buf(),
                    pid: owner_pid(&file),
                })
            }
            Err(std::fs::TryLockError::Error(e)) if cannot_lock(&e) => {
                return Ok(DirLock { file: None, path });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io_err(e)),
        }
        // Best effort: without its pid (a full disk) the lock still guards
        // the directory; a second run then says the pid is not known.
        // Fixed width, so that the file is rewritten in place and truncated
        // only when an older one has another length: truncating cost a run's
        // start 130 to 400 µs on an ext4 mounted with `discard`. (A reader
        // racing the write may read the previous owner's pid: one message
        // then names a dead process.)
        let pid = format!("{:<10}\n", std::process::id());
        let same_len = file.metadata().is_ok_and(|m| m.len() == pid.len() as u64);
        if same_len || file.set_len(0).is_ok() {
            let _ = file.write_all_at(pid.as_bytes(), 0);
        }
        Ok(DirLock {
            file: Some(file),
            path,
        })
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the directory is guarded (false where the filesystem cannot
    /// lock files).
    pub fn is_guarded(&self) -> bool {
        self.file.is_some()
    }
}

/// Whether `e` says the filesystem has no file locks (NFS without its lock
/// service gives `ENOLCK`).
fn cannot_lock(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Unsupported
        || matches!(
            e.raw_os_error(),
            Some(libc::ENOLCK | libc::EOPNOTSUPP | libc::ENOSYS)
        )
}

/// The pid in a lock file held by another run. The owner writes it just
/// after taking the lock, so an empty file is read again for a moment.
fn owner_pid(file: &File) -> Option<u32> {
    let deadline = Instant::now() + PID_WAIT;
    loop {
        let mut buf = [0u8; 32];
        let n = file.read_at(&mut buf, 0).ok()?;
        let text = std::str::from_utf8(&buf[..n]).unwrap_or("");
        if let Ok(pid) = text.trim().parse() {
            return Some(pid);
        }
        if n != 0 || Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_has_one_owner_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(dir.path()).unwrap();
        assert!(first.is_guarded());
        let text = std::fs::read_to_string(first.path()).unwrap();
        assert_eq!(text, format!("{:<10}\n", std::process::id()));
        // A second owner in the same process is refused too (the lock is
        // per open file), and the message names the directory and the pid.
        let err = DirLock::acquire(dir.path()).unwrap_err();
        match &err {
            DirLockError::Held { pid, .. } => assert_eq!(*pid, Some(std::process::id())),
            other => panic!("{other:?}"),
        }
        let msg = err.to_string();
        assert!(msg.contains(&dir.path().display().to_string()), "{msg}");
        assert!(
            msg.contains(&format!("pid {}", std::process::id())),
            "{msg}"
        );
        drop(first);
        let again = DirLock::acquire(dir.path()).unwrap();
        drop(again);
    }

    #[test]
    fn a_stale_or_odd_lock_file_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(LOCK_FILE_NAME), "99999999\nnot a pid").unwrap();
        let lock = DirLock::acquire(dir.path()).unwrap();
        let mine = format!("{:<10}\n", std::process::id());
        assert_eq!(std::fs::read_to_string(lock.path()).unwrap(), mine);
        drop(lock);
        // A previous owner's pid of the same width is overwritten in place.
        std::fs::write(dir.path().join(LOCK_FILE_NAME), "4000000000\n").unwrap();
        let lock = DirLock::acquire(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(lock.path()).unwrap(), mine);
    }

    #[test]
    fn a_missing_directory_is_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = DirLock::acquire(&dir.path().join("nope")).unwrap_err();
        assert!(matches!(err, DirLockError::Io { .. }), "{err:?}");
        assert!(err.to_string().contains("nope"), "{err}");
    }
}
