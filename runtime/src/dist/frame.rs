//! The records a bridge sends another rank's bridge, several to a frame
//! (one transport message): stream data in batches, flow-control credits,
//! closes, and the run's control (termination, abort, clock pings).
//!
//! Every number is little-endian. A record is a tag byte and its fields:
//!
//! | tag | record | fields |
//! | --- | --- | --- |
//! | 1 | `Data` | stream u32, messages u32, bytes u32, then the encoded messages |
//! | 2 | `Credit` | stream u32, messages u64 (the reader's total consumed) |
//! | 3 | `Close` | stream u32: the writer is gone; nothing follows on it |
//! | 4 | `Gone` | stream u32: the reader is gone; stop sending |
//! | 5 | `Done` | per rank, frames this rank sent it (u64 each) |
//! | 6 | `End` | frames the receiver must have received in all (u64) |
//! | 7 | `Abort` | rank u32, text (u32 length, UTF-8) |
//! | 8 | `Ping` | the sender's time, ns (u64) |
//! | 9 | `Pong` | the ping's time, the replier's time (u64 each) |
//! | 10 | `Clock` | offset ns (i64), residual ns (u64) |
//! | 11 | `Stuck` | rank u32, a report of its blocked tasks (u32 length, UTF-8) |
//! | 12 | `Idle` | blocked u8, frames sent to each rank (u32 count, u64 each), frames received u64 |
//! | 13 | `Deadlock` | (none): every rank is blocked and nothing is in flight |

use super::wire::{take, Wire, WireError};

/// One record, as read from a frame; `Data` borrows its messages' bytes.
#[derive(Debug, PartialEq)]
pub(crate) enum Record<'a> {
    Data {
        stream: u32,
        count: u32,
        bytes: &'a [u8],
    },
    Credit {
        stream: u32,
        consumed: u64,
    },
    Close {
        stream: u32,
    },
    Gone {
        stream: u32,
    },
    Done {
        sent: Vec<u64>,
    },
    End {
        expect: u64,
    },
    Abort {
        rank: u32,
        text: String,
    },
    Ping {
        t0: u64,
    },
    Pong {
        t0: u64,
        t1: u64,
    },
    Clock {
        offset: i64,
        residual: u64,
    },
    Stuck {
        rank: u32,
        text: String,
    },
    Idle {
        blocked: bool,
        sent: Vec<u64>,
        received: u64,
    },
    Deadlock,
}

const DATA: u8 = 1;
const CREDIT: u8 = 2;
const CLOSE: u8 = 3;
const GONE: u8 = 4;
const DONE: u8 = 5;
const END: u8 = 6;
const ABORT: u8 = 7;
const PING: u8 = 8;
const PONG: u8 = 9;
const CLOCK: u8 = 10;
const STUCK: u8 = 11;
const IDLE: u8 = 12;
const DEADLOCK: u8 = 13;

/// The bytes of a `Data` record's header; the messages follow.
pub(crate) const DATA_HEADER: usize = 13;

/// Starts a `Data` record in `out`; returns where its header is, for
/// [`finish_data`] once the messages are appended.
pub(crate) fn start_data(out: &mut Vec<u8>) -> usize {
    let at = out.len();
    out.extend_from_slice(&[0; DATA_HEADER]);
    at
}

/// Fills in the header that [`start_data`] left at `at`, or takes the
/// record back out when it holds no message.
pub(crate) fn finish_data(out: &mut Vec<u8>, at: usize, stream: u32, count: u32) {
    if count == 0 {
        out.truncate(at);
        return;
    }
    let bytes =
        u32::try_from(out.len() - at - DATA_HEADER).expect("a frame's record is under 4 GiB");
    out[at] = DATA;
    out[at + 1..at + 5].copy_from_slice(&stream.to_le_bytes());
    out[at + 5..at + 9].copy_from_slice(&count.to_le_bytes());
    out[at + 9..at + 13].copy_from_slice(&bytes.to_le_bytes());
}

fn text(out: &mut Vec<u8>, s: &str) {
    let b = &s.as_bytes()[..s.len().min(1 << 20)];
    (b.len() as u32).encode(out);
    out.extend_from_slice(b);
}

fn read_text(input: &mut &[u8]) -> Result<String, WireError> {
    let n = u32::decode(input)? as usize;
    Ok(String::from_utf8_lossy(take(input, n)?).into_owned())
}

/// Appends a record other than `Data` (which [`start_data`] writes).
pub(crate) fn put(out: &mut Vec<u8>, r: &Record<'_>) {
    match r {
        Record::Data { .. } => unreachable!("data records are written in place"),
        Record::Credit { stream, consumed } => {
            out.push(CREDIT);
            stream.encode(out);
            consumed.encode(out);
        }
        Record::Close { stream } => {
            out.push(CLOSE);
            stream.encode(out);
        }
        Record::Gone { stream } => {
            out.push(GONE);
            stream.encode(out);
        }
        Record::Done { sent } => {
            out.push(DONE);
            (sent.len() as u32).encode(out);
            sent.iter().for_each(|s| s.encode(out));
        }
        Record::End { expect } => {
            out.push(END);
            expect.encode(out);
        }
        Record::Abort { rank, text: t } => {
            out.push(ABORT);
            rank.encode(out);
            text(out, t);
        }
        Record::Ping { t0 } => {
            out.push(PING);
            t0.encode(out);
        }
        Record::Pong { t0, t1 } => {
            out.push(PONG);
            t0.encode(out);
            t1.encode(out);
        }
        Record::Clock { offset, residual } => {
            out.push(CLOCK);
            offset.encode(out);
            residual.encode(out);
        }
        Record::Stuck { rank, text: t } => {
            out.push(STUCK);
            rank.encode(out);
            text(out, t);
        }
        Record::Idle {
            blocked,
            sent,
            received,
        } => {
            out.push(IDLE);
            blocked.encode(out);
            (sent.len() as u32).encode(out);
            sent.iter().for_each(|s| s.encode(out));
            received.encode(out);
        }
        Record::Deadlock => out.push(DEADLOCK),
    }
}

/// The records of a frame, in order.
pub(crate) struct Records<'a> {
    input: &'a [u8],
}

/// Reads the records of `frame`.
pub(crate) fn records(frame: &[u8]) -> Records<'_> {
    Records { input: frame }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.input.is_empty() {
            return None;
        }
        let r = self.read();
        if r.is_err() {
            // A bad frame ends its reading.
            self.input = &[];
        }
        Some(r)
    }
}

impl<'a> Records<'a> {
    fn read(&mut self) -> Result<Record<'a>, WireError> {
        let i = &mut self.input;
        let tag = take(i, 1)?[0];
        Ok(match tag {
            DATA => {
                let stream = u32::decode(i)?;
                let count = u32::decode(i)?;
                let n = u32::decode(i)? as usize;
                Record::Data {
                    stream,
                    count,
                    bytes: take(i, n)?,
                }
            }
            CREDIT => Record::Credit {
                stream: u32::decode(i)?,
                consumed: u64::decode(i)?,
            },
            CLOSE => Record::Close {
                stream: u32::decode(i)?,
            },
            GONE => Record::Gone {
                stream: u32::decode(i)?,
            },
            DONE => {
                let n = u32::decode(i)? as usize;
                let sent = (0..n).map(|_| u64::decode(i)).collect::<Result<_, _>>()?;
                Record::Done { sent }
            }
            END => Record::End {
                expect: u64::decode(i)?,
            },
            ABORT => Record::Abort {
                rank: u32::decode(i)?,
                text: read_text(i)?,
            },
            PING => Record::Ping {
                t0: u64::decode(i)?,
            },
            PONG => Record::Pong {
                t0: u64::decode(i)?,
                t1: u64::decode(i)?,
            },
            CLOCK => Record::Clock {
                offset: i64::decode(i)?,
                residual: u64::decode(i)?,
            },
            STUCK => Record::Stuck {
                rank: u32::decode(i)?,
                text: read_text(i)?,
            },
            IDLE => {
                let blocked = bool::decode(i)?;
                let n = u32::decode(i)? as usize;
                let sent = (0..n).map(|_| u64::decode(i)).collect::<Result<_, _>>()?;
                Record::Idle {
                    blocked,
                    sent,
                    received: u64::decode(i)?,
                }
            }
            DEADLOCK => Record::Deadlock,
            _ => return Err(WireError::Invalid("record tag")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_back_in_order() {
        let mut f = Vec::new();
        let at = start_data(&mut f);
        7u64.encode(&mut f);
        8u64.encode(&mut f);
        finish_data(&mut f, at, 3, 2);
        let empty = start_data(&mut f);
        finish_data(&mut f, empty, 4, 0);
        put(
            &mut f,
            &Record::Credit {
                stream: 3,
                consumed: 9,
            },
        );
        put(&mut f, &Record::Done { sent: vec![1, 2] });
        put(
            &mut f,
            &Record::Abort {
                rank: 1,
                text: "boom".into(),
            },
        );
        let got: Vec<_> = records(&f).collect::<Result<_, _>>().unwrap();
        assert_eq!(got.len(), 4, "the empty data record was taken back");
        match &got[0] {
            Record::Data {
                stream: 3,
                count: 2,
                bytes,
            } => {
                let mut b = *bytes;
                assert_eq!(u64::decode(&mut b), Ok(7));
                assert_eq!(u64::decode(&mut b), Ok(8));
            }
            r => panic!("{r:?}"),
        }
        assert_eq!(
            got[1],
            Record::Credit {
                stream: 3,
                consumed: 9
            }
        );
        assert_eq!(got[2], Record::Done { sent: vec![1, 2] });
        assert_eq!(
            got[3],
            Record::Abort {
                rank: 1,
                text: "boom".into()
            }
        );
    }

    #[test]
    fn a_cut_frame_is_an_error() {
        let mut f = Vec::new();
        put(&mut f, &Record::Pong { t0: 1, t1: 2 });
        f.pop();
        assert!(records(&f).next().unwrap().is_err());
        assert!(records(&[99]).next().unwrap().is_err());
    }
}
