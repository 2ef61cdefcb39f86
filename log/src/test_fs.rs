//! Small filesystems mounted for tests: a tmpfs, and an ext2 image on a
//! loop device (a filesystem without `fallocate`). Mounting needs root; a
//! test that cannot mount one says so on stderr and skips.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A mounted filesystem in a fresh directory, unmounted when dropped.
pub(crate) struct SmallFs {
    dir: tempfile::TempDir,
    /// The ext2 image behind a loop mount.
    image: Option<PathBuf>,
}

/// Runs a command quietly; whether it succeeded.
fn run(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn skip(what: &str) -> Option<SmallFs> {
    eprintln!("skipped: cannot mount {what} here (mounting needs root, and `mount`)");
    None
}

impl SmallFs {
    /// A tmpfs of `size` (`mount -o size=...`).
    pub(crate) fn tmpfs(size: &str) -> Option<Self> {
        // SAFETY: geteuid only reads the process's credentials.
        if unsafe { libc::geteuid() } != 0 {
            return skip("a tmpfs");
        }
        let dir = tempfile::tempdir().ok()?;
        let at = dir.path().to_str()?;
        if !run(
            "mount",
            &["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs", at],
        ) {
            return skip("a tmpfs");
        }
        Some(SmallFs { dir, image: None })
    }

    /// An ext2 filesystem of `bytes` in an image file, loop-mounted.
    pub(crate) fn ext2(bytes: u64) -> Option<Self> {
        // SAFETY: as in `tmpfs`.
        if unsafe { libc::geteuid() } != 0 {
            return skip("an ext2 image");
        }
        let dir = tempfile::tempdir().ok()?;
        let image = std::env::temp_dir().join(format!(
            "rill-test-ext2-{}-{}.img",
            std::process::id(),
            dir.path().file_name()?.to_str()?
        ));
        let made = std::fs::File::create(&image).and_then(|f| f.set_len(bytes));
        let img = image.to_str()?;
        if made.is_err()
            || !run("mkfs.ext2", &["-q", "-F", img])
            || !run("mount", &["-o", "loop", img, dir.path().to_str()?])
        {
            let _ = std::fs::remove_file(&image);
            return skip("an ext2 image (needs mkfs.ext2 and loop devices)");
        }
        Some(SmallFs {
            dir,
            image: Some(image),
        })
    }

    /// Where it is mounted.
    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        // Lazy: a file still open does not keep the mount.
        let _ = run("umount", &["-l", self.dir.path().to_str().unwrap_or("")]);
        if let Some(image) = &self.image {
            let _ = std::fs::remove_file(image);
        }
    }
}
