//! Finding a run's log files and reading each into memory with its header
//! checked ([`RawFile`]).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use rill_log::{Header, LogError};

use crate::load::bytes::Bytes;

/// The `worker-*.rlog` files in `dir`, sorted by name.
pub(crate) fn find_logs(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(dir).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            anyhow::anyhow!("log directory {} not found", dir.display())
        } else {
            anyhow::anyhow!("cannot read log directory {}: {e}", dir.display())
        }
    })?;
    if !meta.is_dir() {
        bail!(
            "{} is not a directory (give the directory holding the worker-*.rlog files)",
            dir.display()
        );
    }
    let mut paths = Vec::new();
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read log directory {}", dir.display()))?;
    for entry in entries {
        let entry =
            entry.with_context(|| format!("cannot read log directory {}", dir.display()))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with("worker-") && name.ends_with(".rlog") {
            paths.push(entry.path());
        }
    }
    if paths.is_empty() {
        bail!("no rill logs (worker-*.rlog) in {}", dir.display());
    }
    // Numeric order of the worker id where the name has one.
    paths.sort_by_key(|p| {
        let n = file_label(p);
        let id = n
            .strip_prefix("worker-")
            .and_then(|s| s.strip_suffix(".rlog"))
            .and_then(|s| s.parse::<u64>().ok());
        (id.is_none(), id, n)
    });
    Ok(paths)
}

/// A log file's name for messages; in a rank's directory (`rank-R/`)
/// with that directory, since every rank has a `worker-0.rlog`.
pub(crate) fn file_label(p: &Path) -> String {
    let Some(name) = p.file_name() else {
        return p.display().to_string();
    };
    let name = name.to_string_lossy();
    match p
        .parent()
        .and_then(|d| d.file_name())
        .map(|d| d.to_string_lossy())
    {
        Some(d) if d.starts_with("rank-") => format!("{d}/{name}"),
        _ => name.into_owned(),
    }
}

/// The slowest clock a header may claim, in ticks per second. A rate below
/// it (or zero, negative, infinite or NaN: a damaged or forged header) would
/// turn every duration into nonsense or an infinity.
const MIN_TICKS_PER_SEC: f64 = 1.0;
/// A log file mapped (or read) into memory, its header checked.
pub(crate) struct RawFile {
    pub path: PathBuf,
    pub data: Bytes,
    pub header: Header,
    pub records_start: usize,
}

impl RawFile {
    /// A log made in memory (`bytes` starting with `header`, records after
    /// it), standing for the file at `path`.
    pub(crate) fn in_memory(path: PathBuf, bytes: Vec<u8>, header: Header) -> Self {
        RawFile {
            path,
            data: Bytes::Read(bytes),
            header,
            records_start: rill_log::HEADER_LEN,
        }
    }
}

pub(crate) fn read_file(path: &Path) -> anyhow::Result<RawFile> {
    let label = path.display();
    let data = map_or_read(path).map_err(|e| anyhow::anyhow!("{label}: cannot read: {e}"))?;
    let (header, records_start) =
        Header::parse(&data).map_err(|e: LogError| anyhow::anyhow!("{label}: {e}"))?;
    let rate = header.calibration.ticks_per_sec;
    if !(rate.is_finite() && rate >= MIN_TICKS_PER_SEC) {
        bail!(
            "{label}: invalid rill log header: clock rate {rate} ticks per second \
             (the header's calibration must give a finite rate of at least {MIN_TICKS_PER_SEC})"
        );
    }
    Ok(RawFile {
        path: path.to_path_buf(),
        data,
        header,
        records_start,
    })
}

/// Maps a log file for one sequential pass (no copy into fresh, zeroed
/// memory: reading 1 GiB that way cost about a second of CPU); reads it
/// where it cannot be mapped (empty files, special files) or where its run
/// may still be writing it.
fn map_or_read(path: &Path) -> std::io::Result<Bytes> {
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if len > 0 && !may_be_live(&file, len) {
        // SAFETY: the map is only read, as a byte slice. Only a file that
        // shrinks while mapped could end this process (SIGBUS), and a log
        // shrinks once, when its writer trims it at the end of the run: a
        // file that was trimmed already is left alone (a later run into the
        // same directory unlinks it and writes a new file; see rill-log's
        // `LogWriter::create`), and files that may still be written are read
        // instead (`may_be_live`).
        if let Ok(map) = unsafe { memmap2::Mmap::map(&file) } {
            // Advice only: a failure changes nothing.
            let _ = map.advise(memmap2::Advice::Sequential);
            return Ok(Bytes::Mapped(map));
        }
    }
    let mut data = Vec::new();
    std::io::Read::read_to_end(&mut &file, &mut data)?;
    Ok(Bytes::Read(data))
}

/// Whether `file` (of `len` bytes) may be a log its run is still writing:
/// such a file has the writer's untrimmed size, a multiple of 4096 bytes,
/// and ends in zeros. So does the log of a run that was killed, which is
/// then read rather than mapped (correct, a little slower); a trimmed log
/// ends in its last record.
pub(crate) fn may_be_live(file: &std::fs::File, len: u64) -> bool {
    use std::os::unix::fs::FileExt;
    const N: u64 = 8;
    let mut tail = [0u8; N as usize];
    len.is_multiple_of(4096)
        && len >= N
        && file.read_exact_at(&mut tail, len - N).is_ok()
        && tail == [0; N as usize]
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untrimmed_zero_tailed_files_are_read_not_mapped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let live = |bytes: &[u8]| {
            std::fs::write(&p, bytes).unwrap();
            let f = std::fs::File::open(&p).unwrap();
            may_be_live(&f, bytes.len() as u64)
        };
        let mut page = vec![0u8; 8192];
        page[..100].fill(7);
        assert!(live(&page), "writer-sized, zero tail: maybe live");
        assert!(!live(&page[..8191]), "trimmed length");
        page[8191] = 1;
        assert!(!live(&page), "ends in a record");
        assert!(!live(&[]));
    }
}
