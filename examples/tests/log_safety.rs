//! Monitoring never harms the program it watches, checked on the built
//! `rill-bench` binary: a monitored run on a full filesystem goes to its
//! normal end with one warning and truncated logs; a log directory has one
//! live run at a time; a run killed with SIGKILL leaves readable logs and a
//! directory the next run takes without complaint.
//!
//! The full-disk tests mount small filesystems (a tmpfs; ext2, which has no
//! `fallocate`; ext4) and so need root, `mount`, and for the images
//! `mkfs.ext2`/`mkfs.ext4` and loop devices; where those are missing they
//! say so on stderr and skip.
//!
//! The runs use std's `Command`: they are spawned, killed and waited on,
//! under mounts they set up, which assert_cmd's run-to-the-end does not do.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use rill_monitor::{load_run, summarize};

fn rill_bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rill-bench"))
        .args(args)
        .output()
        .expect("running rill-bench")
}

/// Runs a command quietly; whether it succeeded.
fn quiet(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A small filesystem mounted in a fresh directory, unmounted when dropped.
struct SmallFs {
    dir: tempfile::TempDir,
    image: Option<PathBuf>,
}

impl SmallFs {
    /// `kind`: `tmpfs`, or a `mkfs.KIND` filesystem in an image of `size`
    /// bytes on a loop device. `None`, said on stderr, where it cannot be
    /// mounted.
    fn mount(kind: &str, size: u64) -> Option<SmallFs> {
        let skip = || {
            eprintln!(
                "skipped: cannot mount a {kind} of {size} bytes here \
                 (needs root, mount{})",
                if kind == "tmpfs" {
                    String::new()
                } else {
                    format!(", mkfs.{kind} and loop devices")
                }
            );
            None
        };
        // SAFETY: geteuid only reads the process's credentials.
        if unsafe { libc::geteuid() } != 0 {
            return skip();
        }
        let dir = tempfile::tempdir().ok()?;
        let at = dir.path().to_str()?.to_owned();
        if kind == "tmpfs" {
            let opts = format!("size={size}");
            if !quiet("mount", &["-t", "tmpfs", "-o", &opts, "tmpfs", &at]) {
                return skip();
            }
            return Some(SmallFs { dir, image: None });
        }
        let image = std::env::temp_dir().join(format!(
            "rill-bench-test-{kind}-{}-{}.img",
            std::process::id(),
            dir.path().file_name()?.to_str()?
        ));
        let made = std::fs::File::create(&image).and_then(|f| f.set_len(size));
        let img = image.to_str()?.to_owned();
        if made.is_err()
            || !quiet(&format!("mkfs.{kind}"), &["-q", "-F", &img])
            || !quiet("mount", &["-o", "loop", &img, &at])
        {
            let _ = std::fs::remove_file(&image);
            return skip();
        }
        Some(SmallFs {
            dir,
            image: Some(image),
        })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = quiet("umount", &["-l", self.dir.path().to_str().unwrap_or("")]);
        if let Some(image) = &self.image {
            let _ = std::fs::remove_file(image);
        }
    }
}

/// On a filesystem too small for its logs, a fully monitored ring runs to
/// its normal end (exit 0, its result verified): its workers' logs stop,
/// one warning names the directory and the cause, the logs say they were
/// truncated and `rill-mon summary` says so. Written through a sparse
/// file's mapping without reserving space, this run dies of SIGBUS (exit
/// 135) on each of these filesystems.
#[test]
fn a_full_disk_stops_the_logs_not_the_run() {
    // tmpfs: fallocate; ext2: no fallocate, so zeros are written to
    // reserve; ext4: fallocate, and near full some pages still cannot be
    // backed (the SIGBUS net's case).
    for (kind, size) in [("tmpfs", 256 << 10), ("ext2", 2 << 20), ("ext4", 4 << 20)] {
        let Some(fs) = SmallFs::mount(kind, size) else {
            continue;
        };
        let logs = fs.path().join("logs");
        let logs_arg = logs.to_str().unwrap();
        let out = rill_bench(&[
            "ring",
            "--engine",
            "rill",
            "--workers",
            "2",
            "--hops",
            "400000",
            "--monitor",
            "full",
            "--logs",
            logs_arg,
            "--json",
        ]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{kind}: {stdout}\n{stderr}");
        let v: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
        assert_eq!(v["verified"], true, "{kind}: {v}");
        let warnings: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("rill: warning: monitoring log"))
            .collect();
        assert_eq!(warnings.len(), 1, "{kind}: one warning per run:\n{stderr}");
        assert!(warnings[0].contains(logs_arg), "{kind}: {stderr}");
        assert!(
            warnings[0].contains("No space left on device")
                || warnings[0].contains("could not back"),
            "{kind}: the cause: {stderr}"
        );

        let run = load_run(&logs).unwrap();
        let cut: Vec<u32> = run
            .workers
            .iter()
            .filter(|w| w.header.truncated.is_some())
            .map(|w| w.worker)
            .collect();
        assert!(!cut.is_empty(), "{kind}: no log says it was truncated");
        let s = summarize(&run);
        for w in &s.workers {
            assert_eq!(w.truncated.is_some(), cut.contains(&w.worker), "{kind}");
        }
        assert!(
            s.dispatches_logged() > 0,
            "{kind}: the logs before the stop read"
        );
        let text = s.to_text();
        assert!(
            text.contains("truncated: the worker stopped"),
            "{kind}: {text}"
        );
    }
}

/// Under a file size limit (`ulimit -f`), a log that would grow past it
/// stops there: without the check, growing the file sends SIGXFSZ, whose
/// default action ends the process.
#[test]
fn a_file_size_limit_stops_the_logs_not_the_run() {
    use std::os::unix::process::CommandExt as _;
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rill-bench"));
    cmd.args([
        "ring",
        "--engine",
        "rill",
        "--workers",
        "2",
        "--hops",
        "1000000",
        "--monitor",
        "full",
        "--logs",
        logs.to_str().unwrap(),
        "--json",
    ]);
    // SAFETY: setrlimit is async-signal-safe, and the closure touches
    // nothing else between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 1 << 20,
                rlim_max: libc::RLIM_INFINITY,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{:?}: {stderr}", out.status);
    assert!(stderr.contains("File too large"), "{stderr}");
    let run = load_run(&logs).unwrap();
    assert!(run.workers.iter().any(|w| w.header.truncated.is_some()));
    for w in &run.workers {
        assert!(w.data().len() <= 1 << 20, "{}", w.data().len());
    }
}

/// Total periods in a summary's workers.
trait Dispatches {
    fn dispatches_logged(&self) -> u64;
}

impl Dispatches for rill_monitor::Summary {
    fn dispatches_logged(&self) -> u64 {
        self.workers.iter().map(|w| w.dispatches).sum()
    }
}

/// Waits until `f` holds, for at most `secs` seconds.
fn wait_for(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Two runs, one log directory: the second, started while the first is
/// live, exits with status 1 and an error naming the directory and the
/// first's pid, and leaves the first's logs alone. The first is then killed
/// with SIGKILL: its logs read (up to their last record), and the next run
/// takes the directory without complaint.
#[test]
fn a_log_directory_has_one_live_run_and_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    let logs_arg = logs.to_str().unwrap();
    // About ten seconds of work on two workers, killed long before.
    let mut first = Command::new(env!("CARGO_BIN_EXE_rill-bench"))
        .args([
            "pipe",
            "--engine",
            "rill",
            "--workers",
            "2",
            "--depth",
            "4",
            "--messages",
            "1000000",
            "--work",
            "10000",
            "--monitor",
            "full",
            "--logs",
            logs_arg,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = first.id();
    let lock = logs.join(rill_log::LOCK_FILE_NAME);
    wait_for("the first run's lock", 30, || {
        std::fs::read_to_string(&lock).is_ok_and(|s| s.trim() == pid.to_string())
    });
    let log0 = logs.join("worker-0.rlog");
    // Some records first (the workers are running once the lock is held).
    std::thread::sleep(Duration::from_millis(300));
    let ino = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&log0).unwrap());

    let out = rill_bench(&[
        "ring",
        "--engine",
        "rill",
        "--hops",
        "1000",
        "--monitor",
        "full",
        "--logs",
        logs_arg,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(logs_arg), "{stderr}");
    assert!(stderr.contains(&format!("pid {pid}")), "{stderr}");
    assert!(stderr.contains("in use by a live run"), "{stderr}");
    assert_eq!(
        std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&log0).unwrap()),
        ino,
        "the live run's log is untouched"
    );
    assert!(first.try_wait().unwrap().is_none(), "the first run goes on");

    first.kill().unwrap(); // SIGKILL
    let status = first.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    let run = load_run(&logs).unwrap();
    let s = summarize(&run);
    assert_eq!(s.workers.len(), 2);
    assert!(s.dispatches_logged() > 0, "{}", s.to_text());
    assert!(
        run.workers.iter().all(|w| w.header.truncated.is_none()),
        "a killed run's logs end where it stopped, not truncated"
    );
    assert!(
        s.tasks
            .iter()
            .any(|t| t.name.starts_with("pipe/relay/") && t.reads > 0),
        "{}",
        s.to_text()
    );

    let mut next = Command::new(env!("CARGO_BIN_EXE_rill-bench"))
        .args([
            "ring",
            "--engine",
            "rill",
            "--hops",
            "1000",
            "--monitor",
            "full",
            "--logs",
            logs_arg,
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let next_pid = next.id();
    let status = next.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut next.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    assert!(!err.contains("warning"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&lock).unwrap().trim(),
        next_pid.to_string()
    );
    let run = load_run(&logs).unwrap();
    assert!(run.warnings.is_empty(), "{:?}", run.warnings);
}
