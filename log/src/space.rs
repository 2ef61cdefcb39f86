//! Reserving a log file's disk space before it is written through its
//! mapping.
//!
//! A store into a mapped page of a file is backed by the filesystem only
//! when the page is faulted in; if the filesystem cannot find room then, the
//! kernel kills the writer with SIGBUS. So [`LogWriter`](crate::LogWriter)
//! writes only into space reserved beforehand, where a failure is an error
//! code: `fallocate(2)`, or, on a filesystem that does not implement it
//! (ext2, ext3, NFSv3, many FUSE filesystems), zeros written over the range
//! with `pwrite(2)`, which makes the filesystem allocate the blocks.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

/// How a file's space is reserved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    /// `fallocate(2)` (mode 0: allocate, the file's size unchanged inside it).
    Allocate,
    /// Zeros written with `pwrite(2)`: where `fallocate` is not supported.
    WriteZeros,
}

/// Reserves `len` bytes of `file` from `offset`, by `method`. A filesystem
/// that turns out not to support `fallocate` switches `method` to
/// [`Method::WriteZeros`] for this and later calls. The range must hold no
/// data: writing zeros overwrites it.
pub(crate) fn reserve(file: &File, offset: u64, len: u64, method: &mut Method) -> io::Result<()> {
    if *method == Method::Allocate {
        match allocate(file, offset, len) {
            Err(e) if unsupported(&e) => *method = Method::WriteZeros,
            other => return other,
        }
    }
    write_zeros(file, offset, len)
}

/// Whether `e` says `fallocate` is not available for this file.
fn unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::ENOSYS))
}

fn allocate(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let (Ok(off), Ok(n)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return Err(io::Error::other("log file size overflow"));
    };
    loop {
        // SAFETY: a plain system call on a file descriptor this process
        // holds open (`file` is borrowed for the call); it touches no
        // memory of ours.
        let r = unsafe { libc::fallocate(file.as_raw_fd(), 0, off, n) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Zeros for [`write_zeros`], written a block of this size at a time.
static ZEROS: [u8; 64 << 10] = [0; 64 << 10];

fn write_zeros(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let mut done = 0;
    while done < len {
        let n = (len - done).min(ZEROS.len() as u64) as usize;
        // `write_all_at` retries short writes and interruptions; a full
        // disk gives ENOSPC (or a write of 0 bytes, which it turns into an
        // error).
        file.write_all_at(&ZEROS[..n], offset + done)?;
        done += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// Both methods leave the range allocated (blocks counted) and zero,
    /// and neither changes the file's size inside it.
    #[test]
    fn both_methods_allocate_the_range() {
        for mut method in [Method::Allocate, Method::WriteZeros] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("f");
            let file = File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&path)
                .unwrap();
            file.set_len(1 << 20).unwrap();
            assert_eq!(file.metadata().unwrap().blocks(), 0, "sparse at first");
            reserve(&file, 4096, 256 << 10, &mut method).unwrap();
            let meta = file.metadata().unwrap();
            assert_eq!(meta.len(), 1 << 20);
            // `blocks` counts 512-byte units.
            assert!(
                meta.blocks() * 512 >= 256 << 10,
                "{method:?}: {} blocks",
                meta.blocks()
            );
            assert!(std::fs::read(&path).unwrap().iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn errors_are_classified() {
        assert!(unsupported(&io::Error::from_raw_os_error(libc::EOPNOTSUPP)));
        assert!(!unsupported(&io::Error::other("x")));
    }
}
