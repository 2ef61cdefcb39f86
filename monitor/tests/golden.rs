//! The whole summary of a generated run, pinned: `tests/golden/summary.json`
//! holds the JSON that `rill-mon summary --json` printed for it when it was
//! blessed (`RILL_BLESS=1 cargo test -p rill-monitor --test golden`), so any
//! change in what the summary says shows up here, down to the last digit;
//! `tests/golden/summary.txt` holds the text report, so any change in how it
//! is laid out shows up too.
//!
//! The run covers what the scanner and the replay distinguish: three workers,
//! implied, interleaved, listed and absent op orders, per-message times on
//! some periods, blocked end states, a migration, waits, ids above the
//! direct-indexed range, and a damaged tail.

mod common;

use std::io::Write as _;
use std::path::Path;

use common::*;
use rill_log::{Calibration, EndState, MonitorFlags, Op, Record, Side};
use rill_monitor::{load_run, summarize};

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

fn generate(dir: &Path) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
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

/// Compares `got` with the golden file `name`, or writes it there with
/// `RILL_BLESS` set.
fn pinned(name: &str, got: &str) {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("RILL_BLESS").is_some() {
        std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
        std::fs::write(&golden, got).unwrap();
    }
    let want = std::fs::read_to_string(&golden)
        .unwrap_or_else(|_| panic!("tests/golden/{name} (bless it)"));
    assert!(
        got == want,
        "{name} changed; got:\n{got}\n(if intended: RILL_BLESS=1)"
    );
}

#[test]
fn summary_text_is_pinned() {
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path());
    let text = summarize(&load_run(dir.path()).unwrap()).to_text();
    pinned(
        "summary.txt",
        &text.replace(&dir.path().display().to_string(), "<dir>"),
    );
}

#[test]
fn summary_is_pinned() {
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path());
    let s = summarize(&load_run(dir.path()).unwrap());
    let mut json = serde_json::to_value(&s).unwrap();
    json["dir"] = "<dir>".into();
    let got = serde_json::to_string_pretty(&json).unwrap() + "\n";
    pinned("summary.json", &got);
}
