//! Synthetic logs for the unit tests of the passes that use the load's
//! chunk index (`load/chunks.rs`): long enough for several chunks per log, with
//! worker waits between periods, and one log whose starts step back in time
//! now and then (as a damaged log's may).

use std::path::Path;

use rill_log::{Calibration, Encoder, EndState, Header, LogWriter, MonitorFlags, PeriodRef};

/// Periods per log.
pub(crate) const PERIODS: u64 = 5 * crate::load::chunks::CHUNK_PERIODS as u64 + 123;

/// The run of [`write`]'s logs, loaded, with the directory that holds them
/// (removed when it is dropped), each log cut into six chunks.
pub(crate) fn run() -> (tempfile::TempDir, crate::load::model::RunLog) {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path());
    let run = crate::replay::load_run::load_run(dir.path()).unwrap();
    assert!(run.workers.iter().all(|w| w.chunks.len() == 6));
    (dir, run)
}

/// Writes two worker logs into `dir`: period `k` of log `w` starts at
/// `7k + 3w` (log 1: 50 ticks earlier every 997th period), lasts 2 ticks
/// (every 500th: 3,000), and every 100th is followed by a worker wait of
/// one tick.
fn write(dir: &Path) {
    let cal = Calibration::nanos();
    for w in 0..2u32 {
        let header = Header::new(MonitorFlags::FULL, w, 2, cal);
        let mut out = LogWriter::create(dir, w, &header).unwrap();
        let mut enc = Encoder::new();
        enc.worker_start(&mut out, 0);
        for k in 0..PERIODS {
            let back = if w == 1 && k % 997 == 996 { 50 } else { 0 };
            let start = k * 7 + u64::from(w) * 3 - back;
            let len = if k % 500 == 499 { 3_000 } else { 2 };
            enc.period(
                &mut out,
                &PeriodRef {
                    start,
                    end: start + len,
                    task: u64::from(w) + 1 + k % 3,
                    end_state: EndState::Yielded,
                    io: &[],
                    ops: &[],
                    op_times: &[],
                },
            );
            if k % 100 == 0 {
                enc.worker_wait(&mut out, start + len + 1, 1);
            }
        }
        enc.worker_end(&mut out, 10_000_000);
        out.finish().unwrap();
    }
}
