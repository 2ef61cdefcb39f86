//! Synthetic logs with known answers, written with the runtime's encoder and
//! log writer.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use rill_log::{
    Calibration, Encoder, EndState, Header, LogWriter, MonitorFlags, Op, Record, Side, StreamIo,
};

pub fn io(stream: u64, reads: u32, writes: u32) -> StreamIo {
    StreamIo {
        stream,
        reads,
        writes,
        woke_peer: false,
    }
}

/// A task's placement record (at time 0).
pub fn assign(task: u64, worker: u32, name: &str) -> Record {
    Record::TaskAssign {
        t: 0,
        task,
        parent: 0,
        worker,
        name: name.into(),
    }
}

/// A stream end's binding to its task (at time 0).
pub fn bind(stream: u64, side: Side, task: u64) -> Record {
    Record::StreamBind {
        t: 0,
        stream,
        side,
        task,
    }
}

/// [`io`] whose operation woke the peer.
pub fn woke(stream: u64, reads: u32, writes: u32) -> StreamIo {
    StreamIo {
        woke_peer: true,
        ..io(stream, reads, writes)
    }
}

/// A period with stream entries and no ops.
pub fn p(start: u64, end: u64, task: u64, state: EndState, io: Vec<StreamIo>) -> Record {
    period(start, end, task, state, io, vec![], vec![])
}

/// One full-mode log per worker, in nanosecond ticks.
pub fn write_run(dir: &Path, logs: &[Vec<Record>]) {
    for (w, recs) in logs.iter().enumerate() {
        write_log(
            dir,
            w as u32,
            logs.len() as u32,
            MonitorFlags::FULL,
            Calibration::nanos(),
            recs,
        );
    }
}

pub fn period(
    start: u64,
    end: u64,
    task: u64,
    end_state: EndState,
    io: Vec<StreamIo>,
    ops: Vec<Op>,
    op_times: Vec<u64>,
) -> Record {
    Record::Period {
        start,
        end,
        task,
        end_state,
        io,
        ops,
        op_times,
    }
}

/// Writes `records` as worker `worker`'s log in `dir` with the memory-mapped writer.
pub fn write_log(
    dir: &Path,
    worker: u32,
    workers: u32,
    flags: MonitorFlags,
    cal: Calibration,
    records: &[Record],
) -> PathBuf {
    let header = Header::new(flags, worker, workers, cal);
    let mut w = LogWriter::create_with_len(dir, worker, &header, 4096).unwrap();
    let mut enc = Encoder::new();
    for r in records {
        enc.record(&mut w, r);
    }
    let path = w.path().to_owned();
    w.finish().unwrap();
    path
}

pub const SRC: u64 = 1;
pub const RELAY: u64 = 2;
pub const SINK: u64 = 3;
pub const S_IN: u64 = 10;
pub const S_OUT: u64 = 11;

/// The hand-computed pipeline src -> (10) -> relay -> (11) -> sink on two
/// workers (src and sink on worker 0, relay on worker 1). See `summary.rs`
/// for the expected numbers. `timed` adds per-message times (flags ALL).
pub fn pipeline(dir: &Path, timed: bool, cal: Calibration) {
    let flags = if timed {
        MonitorFlags::ALL
    } else {
        MonitorFlags::FULL
    };
    let t = |v: Vec<u64>| if timed { v } else { Vec::new() };
    let msg = |v: Vec<Op>| v; // MESSAGE is on in both variants
    let w0 = vec![
        Record::WorkerStart { t: 0 },
        Record::TaskAssign {
            t: 0,
            task: SRC,
            parent: 0,
            worker: 0,
            name: "src".into(),
        },
        Record::TaskAssign {
            t: 0,
            task: RELAY,
            parent: 0,
            worker: 1,
            name: "relay".into(),
        },
        Record::TaskAssign {
            t: 0,
            task: SINK,
            parent: 0,
            worker: 0,
            name: "sink".into(),
        },
        Record::StreamOpen {
            t: 0,
            stream: S_IN,
            capacity: 2,
            creator: 0,
        },
        Record::StreamOpen {
            t: 0,
            stream: S_OUT,
            capacity: 4,
            creator: 0,
        },
        Record::StreamBind {
            t: 10,
            stream: S_IN,
            side: Side::Writer,
            task: SRC,
        },
        period(
            10,
            30,
            SRC,
            EndState::BlockedOutput { stream: S_IN },
            vec![io(S_IN, 0, 2)],
            msg(vec![Op::write(0, 2)]),
            t(vec![12, 25]),
        ),
        Record::StreamBind {
            t: 30,
            stream: S_OUT,
            side: Side::Reader,
            task: SINK,
        },
        period(
            30,
            35,
            SINK,
            EndState::BlockedInput { stream: S_OUT },
            vec![],
            vec![],
            vec![],
        ),
        Record::WorkerWait { t: 35, dur: 25 },
        period(
            60,
            72,
            SRC,
            EndState::Ended,
            vec![io(S_IN, 0, 1)],
            msg(vec![Op::write(0, 1)]),
            t(vec![70]),
        ),
        period(
            80,
            90,
            SINK,
            EndState::BlockedInput { stream: S_OUT },
            vec![io(S_OUT, 2, 0)],
            msg(vec![Op::read(0, 2)]),
            t(vec![82, 85]),
        ),
        Record::WorkerWait { t: 90, dur: 30 },
        period(
            120,
            130,
            SINK,
            EndState::Ended,
            vec![io(S_OUT, 1, 0)],
            msg(vec![Op::read(0, 1)]),
            t(vec![121]),
        ),
        Record::WorkerEnd { t: 140 },
    ];
    let w1 = vec![
        Record::WorkerStart { t: 0 },
        Record::WorkerWait { t: 0, dur: 20 },
        Record::StreamBind {
            t: 20,
            stream: S_IN,
            side: Side::Reader,
            task: RELAY,
        },
        Record::StreamBind {
            t: 20,
            stream: S_OUT,
            side: Side::Writer,
            task: RELAY,
        },
        period(
            20,
            40,
            RELAY,
            EndState::BlockedInput { stream: S_IN },
            vec![io(S_IN, 2, 0), io(S_OUT, 0, 2)],
            msg(vec![
                Op::read(0, 1),
                Op::write(1, 1),
                Op::read(0, 1),
                Op::write(1, 1),
            ]),
            t(vec![21, 24, 31, 38]),
        ),
        Record::WorkerWait { t: 40, dur: 25 },
        period(
            65,
            81,
            RELAY,
            EndState::Ended,
            vec![io(S_IN, 1, 0), io(S_OUT, 0, 1)],
            msg(vec![Op::read(0, 1), Op::write(1, 1)]),
            t(vec![66, 80]),
        ),
        Record::WorkerEnd { t: 100 },
    ];
    write_log(dir, 0, 2, flags, cal, &w0);
    write_log(dir, 1, 2, flags, cal, &w1);
}

/// A tiny XML well-formedness check: balanced tags, quoted attributes, known
/// entities only. Returns the element names in document order.
pub fn check_xml(s: &str) -> Result<Vec<String>, String> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut stack: Vec<String> = Vec::new();
    let mut names = Vec::new();
    let mut roots = 0;
    let check_text = |t: &str| -> Result<(), String> {
        let mut rest = t;
        while let Some(p) = rest.find('&') {
            let after = &rest[p + 1..];
            let end = after.find(';').ok_or("unterminated entity")?;
            let ent = &after[..end];
            let ok = matches!(ent, "amp" | "lt" | "gt" | "quot" | "apos")
                || (ent.starts_with('#') && ent.len() > 1);
            if !ok {
                return Err(format!("unknown entity &{ent};"));
            }
            rest = &after[end + 1..];
        }
        if rest.contains('<') {
            return Err("stray <".into());
        }
        Ok(())
    };
    while i < b.len() {
        if b[i] != b'<' {
            let next = s[i..].find('<').map_or(b.len(), |p| i + p);
            let text = &s[i..next];
            check_text(text)?;
            if stack.is_empty() && !text.trim().is_empty() {
                return Err(format!("text outside the root: {text:?}"));
            }
            i = next;
            continue;
        }
        let close = s[i..].find('>').ok_or("unterminated tag")? + i;
        let tag = &s[i + 1..close];
        i = close + 1;
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack.pop().ok_or(format!("unmatched </{name}>"))?;
            if open != name.trim() {
                return Err(format!("<{open}> closed by </{name}>"));
            }
            continue;
        }
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let name_end = tag.find(|c: char| c.is_whitespace()).unwrap_or(tag.len());
        let name = &tag[..name_end];
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_alphanumeric() || c == ':' || c == '-')
        {
            return Err(format!("bad element name {name:?}"));
        }
        // Attributes: name="value" pairs.
        let mut rest = tag[name_end..].trim();
        while !rest.is_empty() {
            let eq = rest
                .find('=')
                .ok_or(format!("attribute without value in <{name}>"))?;
            let q = rest[eq + 1..].chars().next().ok_or("missing quote")?;
            if q != '"' && q != '\'' {
                return Err(format!("unquoted attribute in <{name}>"));
            }
            let vstart = eq + 2;
            let vend = rest[vstart..].find(q).ok_or("unterminated attribute")? + vstart;
            check_text(&rest[vstart..vend])?;
            rest = rest[vend + 1..].trim_start();
        }
        if stack.is_empty() {
            roots += 1;
        }
        names.push(name.to_owned());
        if !self_closing {
            stack.push(name.to_owned());
        }
    }
    if let Some(open) = stack.pop() {
        return Err(format!("<{open}> never closed"));
    }
    if roots != 1 {
        return Err(format!("{roots} root elements"));
    }
    Ok(names)
}
