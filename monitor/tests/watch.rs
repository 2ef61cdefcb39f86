//! `rill-mon watch` on real runs: followed from before they start to their
//! summary, as text (`--plain`), as one snapshot (`--once`, `--json`), and in
//! a terminal (tmux, against `rill-bench mc`); and the loading of a run's
//! logs while it writes them.

mod runs;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rill::MonitorFlags;

/// One run at a time: the runs and the watcher share the machine's cores.
static RUNS: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    RUNS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The binary. These tests keep std's `Command`: the watcher runs beside a
/// run (spawned, waited on), and under tmux, which assert_cmd does not do.
fn rill_mon() -> &'static str {
    env!("CARGO_BIN_EXE_rill-mon")
}

fn watch(args: &[&str]) -> Output {
    Command::new(rill_mon())
        .arg("watch")
        .args(args)
        .output()
        .expect("run rill-mon")
}

/// A pipe of three relays on two workers, the middle one slow (`work` per
/// message), monitored with `flags` into `dir`.
fn slow_pipe(dir: &Path, flags: MonitorFlags, messages: u64, work: Duration) {
    let rt = runs::runtime_with(dir, 2, rill::Mapping::RoundRobin, flags);
    let names: Vec<String> = (0..3).map(|k| format!("pipe/relay/{k}")).collect();
    runs::chain_with(rt, &names, Some(1), work, messages);
}

/// Waits for `child` to exit (killing it after `limit`); its status, stdout
/// and stderr (read as they come, so that a full pipe never stops it).
fn wait(mut child: Child, limit: Duration) -> (bool, String, String) {
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            r.read_to_string(&mut s).unwrap();
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let ok = status.is_some_and(|s| s.success());
    (ok, out.join().unwrap(), err.join().unwrap())
}

/// Starts `rill-mon watch DIR --plain` before the run, runs it, and returns
/// the watcher's output.
fn plain_around(flags: MonitorFlags) -> (String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("logs");
    let child = Command::new(rill_mon())
        .arg("watch")
        .arg(&dir)
        .args(["--plain", "--interval", "100", "--window", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    slow_pipe(&dir, flags, 3000, Duration::from_micros(500));
    let (ok, out, err) = wait(child, Duration::from_secs(120));
    assert!(ok, "rill-mon watch --plain failed or hung:\n{err}\n{out}");
    (out, err)
}

/// The snapshots of a `--plain` output (each starts with its status line)
/// taken while the run went on.
fn running_snapshots(out: &str) -> Vec<String> {
    let mut snaps: Vec<String> = Vec::new();
    for line in out.lines() {
        if line.contains(": running, ") || line.contains(": ended after ") {
            snaps.push(String::new());
        }
        if let Some(s) = snaps.last_mut() {
            s.push_str(line);
            s.push('\n');
        }
    }
    snaps.retain(|s| s.lines().next().is_some_and(|l| l.contains(": running, ")));
    snaps
}

#[test]
fn plain_follows_a_sampled_run_from_before_it_starts_to_its_summary() {
    let _g = lock();
    let (out, err) = plain_around(MonitorFlags::SAMPLED);
    assert!(err.contains("waiting for the directory to appear"), "{err}");
    let live = running_snapshots(&out);
    assert!(
        !live.is_empty(),
        "no snapshot while the run went on:\n{out}"
    );
    // While it ran: both workers, the relays folded into one group, and
    // estimates with their bound.
    assert!(
        live.iter().any(|s| s.contains("worker 0")
            && s.contains("worker 1")
            && s.contains("pipe/relay/*")
            && s.contains("estimates from samples")),
        "{out}"
    );
    // At the end: the last snapshot, then the summary.
    let end = out.rfind("ended after").expect("the end");
    assert!(out[end..].contains("rill run"), "{out}");
    assert!(
        out[end..].contains("sample mode: busy and waiting times"),
        "{out}"
    );
}

#[test]
fn plain_shows_the_recent_stream_waits_of_a_run_with_periods() {
    let _g = lock();
    let (out, _) = plain_around(MonitorFlags::FULL);
    let live = running_snapshots(&out);
    assert!(
        live.iter()
            .any(|s| s.contains("times from the periods (exact)")
                && s.contains("streams with the most waits, last")
                && s.contains(" -> pipe/relay/*")),
        "{out}"
    );
    assert!(out.contains("ended after"), "{out}");
}

#[test]
fn once_and_json_show_a_finished_run() {
    let _g = lock();
    let tmp = tempfile::tempdir().unwrap();
    slow_pipe(
        tmp.path(),
        MonitorFlags::SAMPLED,
        400,
        Duration::from_micros(500),
    );
    let dir = tmp.path().to_str().unwrap();
    let o = watch(&[dir, "--once"]);
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("ended after"), "{text}");
    assert!(text.contains("pipe/relay/*"), "{text}");
    // The stream ends closed at the end: their exact waits are there.
    assert!(text.contains("pipe/src -> pipe/relay/*"), "{text}");
    assert!(text.contains("bottleneck, over the whole run"), "{text}");
    let o = watch(&[dir, "--json", "--top", "2"]);
    assert!(o.status.success(), "{o:?}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["state"], "ended");
    assert_eq!(v["figures"]["source"], "samples");
    assert_eq!(v["figures"]["workers"].as_array().unwrap().len(), 2);
    assert!(v["figures"]["groups"].as_array().unwrap().len() <= 2);
    assert!(v["verdict"].is_string(), "{v}");
}

#[test]
fn bad_options_and_missing_logs_are_one_line_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nothing");
    let empty = tmp.path();
    for (args, says) in [
        (
            vec![missing.to_str().unwrap(), "--once"],
            "not found".to_owned(),
        ),
        (
            vec![empty.to_str().unwrap(), "--once"],
            "no rill logs".to_owned(),
        ),
        (
            vec![empty.to_str().unwrap(), "--interval", "0"],
            "--interval".to_owned(),
        ),
        (
            vec![empty.to_str().unwrap(), "--window", "100"],
            "--window".to_owned(),
        ),
        (
            vec![empty.to_str().unwrap(), "--top", "0"],
            "--top".to_owned(),
        ),
    ] {
        let o = watch(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
        let err = String::from_utf8(o.stderr).unwrap();
        assert!(err.starts_with("rill-mon: error: "), "{err}");
        assert!(err.contains(&says), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}

#[test]
fn a_sampled_run_loaded_while_it_runs_spans_its_windows() {
    let _g = lock();
    let tmp = tempfile::tempdir().unwrap();
    let dir: PathBuf = tmp.path().to_path_buf();
    let d = dir.clone();
    let run = std::thread::spawn(move || {
        let mut rt = runs::runtime_with(&d, 2, rill::Mapping::RoundRobin, MonitorFlags::SAMPLED);
        rt.spawn_on(0, "spinner", || runs::spin(Duration::from_millis(1500)));
        rt.run().unwrap();
    });
    std::thread::sleep(Duration::from_millis(900));
    let live = rill_monitor::load_run(&dir).unwrap();
    run.join().unwrap();
    // The worker logs hold little more than the start; the windows of
    // samples reach on, and so does the span.
    let span_ms = live.span_ns() as f64 / 1e6;
    assert!(span_ms >= 500.0, "span {span_ms} ms of a run 900 ms old");
    let w0 = &live.workers[0].stats;
    let busy = w0.busy as f64 / w0.finish.saturating_sub(w0.begin).max(1) as f64;
    assert!(busy > 0.7, "worker 0 busy {busy}");
}

/// A tmux server of its own, killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .env("TERM", "xterm-256color")
            .output()
            .expect("run tmux")
    }

    fn pane(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", "watch"]).stdout)
            .into_owned()
    }

    fn wait_for(&self, limit: Duration, what: impl Fn(&str) -> bool) -> Result<String, String> {
        let t = Instant::now();
        loop {
            let p = self.pane();
            if what(&p) {
                return Ok(p);
            }
            if t.elapsed() > limit {
                return Err(p);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

#[test]
fn the_terminal_view_follows_rill_bench_mc_under_tmux_to_its_summary() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!(
            "tmux is not installed: the terminal view test is skipped (apt-get install tmux)"
        );
        return;
    }
    let bench = Path::new(rill_mon()).with_file_name("rill-bench");
    if !bench.exists() {
        eprintln!(
            "{} is not built: the terminal view test is skipped (cargo build -p rill-examples, \
             or test the workspace)",
            bench.display()
        );
        return;
    }
    let _g = lock();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("logs");
    let tmux = Tmux {
        socket: format!("rill-mon-watch-test-{}", std::process::id()),
    };
    let cmd = format!("{} watch {} --interval 200", rill_mon(), dir.display());
    let o = tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        "watch",
        "-x",
        "120",
        "-y",
        "45",
        &cmd,
    ]);
    assert!(o.status.success(), "tmux: {o:?}");
    tmux.wait_for(Duration::from_secs(20), |p| {
        p.contains("waiting for the directory to appear")
    })
    .unwrap_or_else(|p| panic!("no waiting message:\n{p}"));
    // A run of a few seconds whatever the build, so that the view (every
    // 200 ms) refreshes several times while it goes on: 60,000 paths took
    // 0.48 s in a debug build, and one view in the test command saw a single
    // clock.
    let paths = if cfg!(debug_assertions) {
        "300000"
    } else {
        "3000000"
    };
    let mut run = Command::new(&bench)
        .args([
            "mc",
            "--monitor",
            "sample",
            "--workers",
            "2",
            "--paths",
            paths,
            "--logs",
        ])
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // While it runs: worker lines, task groups, and a clock that moves.
    let mut clocks = std::collections::BTreeSet::new();
    let mut live = None;
    let t = Instant::now();
    let status = loop {
        if let Some(s) = run.try_wait().unwrap() {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(300), "rill-bench hung");
        let p = tmux.pane();
        if let Some(i) = p.find(": running, ") {
            let clock: String = p[i..].chars().skip(11).take_while(|c| *c != ' ').collect();
            clocks.insert(clock);
            if p.contains("w0") && p.contains("w1") && p.contains("mc/star/*/step/*") {
                live = Some(p);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut err = String::new();
    run.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success(), "rill-bench failed: {err}");
    let live =
        live.unwrap_or_else(|| panic!("no live view while the run went on:\n{}", tmux.pane()));
    assert!(live.contains("estimates from samples"), "{live}");
    assert!(
        clocks.len() >= 2,
        "the view did not refresh: {clocks:?}\n{live}"
    );
    // The end: the summary, then q leaves.
    let end = tmux
        .wait_for(Duration::from_secs(60), |p| {
            p.contains("ended after") && p.contains("summary of the run") && p.contains("span")
        })
        .unwrap_or_else(|p| panic!("no summary at the end:\n{p}"));
    assert!(end.contains("bottleneck"), "{end}");
    tmux.cmd(&["send-keys", "-t", "watch", "q"]);
    let t = Instant::now();
    while tmux.cmd(&["has-session", "-t", "watch"]).status.success() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "q did not quit:\n{}",
            tmux.pane()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
