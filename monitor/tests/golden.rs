//! rill-mon's outputs on generated runs, pinned as insta snapshots
//! (`tests/snapshots/golden__*.snap`): the summary (text and JSON), the
//! waits, the bottleneck verdict, the mapping plan and its file, the diff
//! of two runs and the evolution's CSV, each as the `rill-mon` command
//! prints it (not `watch`, whose end of a run follows the files' times). Any change in what they say, down to the last digit, or in
//! how they are laid out fails here.
//!
//! The logs are written from records with fixed time stamps (no clock is
//! read), so the outputs are the same on any machine and under any load;
//! the temporary directory's path is the one part replaced (`<dir>`, `<B>`,
//! `<map>`).
//!
//! To accept a change, look at it first: `cargo insta review` (with
//! cargo-insta), or `INSTA_UPDATE=always cargo test -p rill-monitor --test
//! golden` and `git diff`. A missing or changed snapshot fails the test
//! (`scripts/test.sh` sets `INSTA_UPDATE=no`, so nothing is written there).
//!
//! The run covers what the scanner and the replay distinguish: three workers,
//! implied, interleaved, listed and absent op orders, per-message times on
//! some periods, blocked end states, a migration, waits, ids above the
//! direct-indexed range, the workers' own totals on two logs (the third
//! ends in a damaged tail, so its spins fall back to the log's shape).

mod common;

use std::io::Write as _;
use std::path::Path;

use common::*;
use rill_log::{Calibration, EndState, MonitorFlags, Op, Record, Side};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

const SRC: u64 = 1;
/// A task id far above the direct-indexed range.
const RELAY: u64 = 1 << 40;
const MIXER: u64 = 3;
const SINK: u64 = 4;
const S1: u64 = 10;
/// A stream id above the direct-indexed range.
const S2: u64 = 5_000_000;
const S3: u64 = 12;

/// The run with the generator's seed `seed`.
fn generate(dir: &Path, seed: u64) {
    let mut rng = Rng(seed);
    let mut logs: [Vec<Record>; 3] = Default::default();
    for (w, log) in logs.iter_mut().enumerate() {
        log.push(Record::WorkerStart { t: 100 + w as u64 });
    }
    let assign = |t, task, worker: u32, name: &str| Record::TaskAssign {
        t,
        task,
        parent: 0,
        worker,
        name: name.to_owned(),
    };
    logs[0].push(assign(110, SRC, 0, "source"));
    logs[0].push(assign(111, RELAY, 1, "relay"));
    logs[0].push(assign(112, MIXER, 2, "mixer"));
    logs[0].push(assign(113, SINK, 0, "sink"));
    for (i, (s, w, r)) in [(S1, SRC, RELAY), (S2, RELAY, MIXER), (S3, MIXER, SINK)]
        .into_iter()
        .enumerate()
    {
        let t = 120 + i as u64 * 3;
        logs[0].push(Record::StreamOpen {
            t,
            stream: s,
            capacity: 4 << i,
            creator: 0,
        });
        logs[0].push(Record::StreamBind {
            t: t + 1,
            stream: s,
            side: Side::Writer,
            task: w,
        });
        logs[0].push(Record::StreamBind {
            t: t + 2,
            stream: s,
            side: Side::Reader,
            task: r,
        });
    }
    let mut t = 1_000u64;
    let mut mixer_worker = 2;
    for round in 0..400u64 {
        let m = 1 + rng.next(4) as u32;
        let mut step = |rng: &mut Rng| {
            let d = 20 + rng.next(200);
            let s = t + rng.next(30);
            t = s + d + 1;
            (s, s + d)
        };
        // Source: m writes, implied ops (or none every 7th round).
        let (s, e) = step(&mut rng);
        let ops = if round % 7 == 3 {
            Vec::new()
        } else {
            vec![Op::write(0, m)]
        };
        let end = if round % 5 == 0 {
            EndState::BlockedOutput { stream: S1 }
        } else {
            EndState::Yielded
        };
        logs[0].push(period(s, e, SRC, end, vec![io(S1, 0, m)], ops, vec![]));
        // Relay: m reads and m writes, interleaved one by one.
        let (s, e) = step(&mut rng);
        let ops = (0..2 * m)
            .map(|k| {
                if k % 2 == 0 {
                    Op::read(0, 1)
                } else {
                    Op::write(1, 1)
                }
            })
            .collect();
        logs[1].push(period(
            s,
            e,
            RELAY,
            EndState::BlockedInput { stream: S1 },
            vec![io(S1, m, 0), io(S2, 0, m)],
            ops,
            vec![],
        ));
        if round == 200 {
            logs[2].push(Record::TaskMigrate {
                t: e + 1,
                task: MIXER,
                from: 2,
                to: 1,
            });
            mixer_worker = 1;
        }
        // Mixer: a listed order (one read and write, then the rest).
        let (s, e) = step(&mut rng);
        let ops = if m >= 2 {
            vec![
                Op::read(0, 1),
                Op::write(1, 1),
                Op::read(0, m - 1),
                Op::write(1, m - 1),
            ]
        } else {
            vec![Op::read(0, 1), Op::write(1, 1)]
        };
        logs[mixer_worker].push(period(
            s,
            e,
            MIXER,
            EndState::Yielded,
            vec![io(S2, m, 0), io(S3, 0, m)],
            ops,
            vec![],
        ));
        // Sink: m reads, with per-message times every third round.
        let (s, e) = step(&mut rng);
        let times = if round % 3 == 0 {
            (0..u64::from(m)).map(|k| s + 1 + k * 5).collect()
        } else {
            vec![]
        };
        logs[0].push(period(
            s,
            e,
            SINK,
            EndState::BlockedInput { stream: S3 },
            vec![io(S3, m, 0)],
            vec![Op::read(0, m)],
            times,
        ));
        if round % 16 == 15 {
            for (w, log) in logs.iter_mut().enumerate() {
                log.push(Record::WorkerWait {
                    t: t + w as u64,
                    dur: 50 + rng.next(100),
                });
            }
            t += 200;
        }
    }
    logs[0].push(Record::StreamClose {
        t: t + 1,
        stream: S3,
        side: Side::Reader,
    });
    logs[0].push(Record::Period {
        start: t + 2,
        end: t + 9,
        task: SINK,
        end_state: EndState::Ended,
        io: vec![],
        ops: vec![],
        op_times: vec![],
    });
    for (w, log) in logs.iter_mut().enumerate() {
        // Workers 0 and 1 end with their own totals: their periods are
        // their dispatches (none spun), their waits their idle stretches.
        if w < 2 {
            let count = |f: fn(&Record) -> bool| log.iter().filter(|r| f(r)).count() as u64;
            let dispatches = count(|r| matches!(r, Record::Period { .. }));
            let idles = count(|r| matches!(r, Record::WorkerWait { .. }));
            log.push(Record::WorkerTotals {
                t: t + 19,
                dispatches,
                spins: 0,
                idles,
                parks: idles / 2,
            });
        }
        log.push(Record::WorkerEnd {
            t: t + 20 + w as u64,
        });
    }
    let cal = Calibration {
        ticks_per_sec: 2.5e9,
        start_ticks: 1_000,
        start_unix_ns: 0,
    };
    for (w, log) in logs.iter().enumerate() {
        let path = write_log(dir, w as u32, 3, MonitorFlags::ALL, cal, log);
        if w == 2 {
            // A period tag whose body is cut off.
            let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
            f.write_all(&[0x81, 0x05]).unwrap();
        }
    }
}

/// The seed of the main run.
const SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// The main run, in a fresh directory.
fn run() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), SEED);
    dir
}

/// `rill-mon args`, which must succeed without a panic: its stdout with
/// each `(path, name)`'s path replaced by its name.
fn mon(args: &[&str], paths: &[(&Path, &str)]) -> String {
    let out = assert_cmd::cargo::cargo_bin_cmd!("rill-mon")
        .args(args)
        .assert()
        .success()
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    let mut text = String::from_utf8(out.stdout).unwrap();
    for (path, name) in paths {
        text = text.replace(&path.display().to_string(), name);
    }
    text
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn summary_text() {
    let dir = run();
    let d = dir.path();
    insta::assert_snapshot!(mon(&["summary", p(d)], &[(d, "<dir>")]));
}

#[test]
fn summary_json() {
    let dir = run();
    let d = dir.path();
    insta::assert_snapshot!(mon(&["summary", p(d), "--json"], &[(d, "<dir>")]));
}

#[test]
fn waits_text() {
    let dir = run();
    let d = dir.path();
    insta::assert_snapshot!(mon(&["waits", p(d)], &[(d, "<dir>")]));
}

#[test]
fn waits_json() {
    let dir = run();
    let d = dir.path();
    insta::assert_snapshot!(mon(&["waits", p(d), "--json"], &[(d, "<dir>")]));
}

#[test]
fn bottleneck_text() {
    let dir = run();
    let d = dir.path();
    insta::assert_snapshot!(mon(
        &["bottleneck", p(d), "--windows", "8"],
        &[(d, "<dir>")]
    ));
}

#[test]
fn bottleneck_json() {
    let dir = run();
    let d = dir.path();
    insta::assert_snapshot!(mon(
        &["bottleneck", p(d), "--windows", "8", "--json"],
        &[(d, "<dir>")]
    ));
}

/// The plan's text, its JSON and the mapping file it writes.
#[test]
fn map_text_json_and_file() {
    let dir = run();
    let d = dir.path();
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("proposed-2.map");
    let paths = [(file.as_path(), "<map>"), (d, "<dir>")];
    let args = ["map", p(d), "--workers", "2", "-o", p(&file)];
    insta::assert_snapshot!("map_text", mon(&args, &paths));
    let map = std::fs::read_to_string(&file).unwrap();
    insta::assert_snapshot!("map_file", map.replace(p(d), "<dir>"));
    let mut json = args.to_vec();
    json.push("--json");
    insta::assert_snapshot!("map_json", mon(&json, &paths));
    // The file reads back as the runtime's mapping table.
    let table = rill::ManualTable::load(&file).unwrap();
    assert_eq!(table.entries().len(), 4);
}

/// The main run against one from another seed.
#[test]
fn diff_text_and_json() {
    let a = run();
    let b = tempfile::tempdir().unwrap();
    generate(b.path(), 0x2545_f491_4f6c_dd1d);
    let paths = [(a.path(), "<A>"), (b.path(), "<B>")];
    let args = ["diff", p(a.path()), p(b.path())];
    insta::assert_snapshot!("diff_text", mon(&args, &paths));
    let mut json = args.to_vec();
    json.push("--json");
    insta::assert_snapshot!("diff_json", mon(&json, &paths));
}

#[test]
fn evolution_csv() {
    let dir = run();
    let d = dir.path();
    insta::assert_snapshot!(mon(
        &["evolution", p(d), "--csv", "--buckets", "6"],
        &[(d, "<dir>")]
    ));
}
