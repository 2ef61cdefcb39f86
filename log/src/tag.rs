//! Tag bytes: the first byte of each record names its kind (see the crate
//! documentation for the layout), and ops-mode codes within a period's tag.

use crate::record::Side;

pub const WORKER_START: u8 = 0x01;
pub const WORKER_WAIT: u8 = 0x02;
pub const WORKER_END: u8 = 0x03;
pub const TASK_ASSIGN: u8 = 0x04;
pub const TASK_MIGRATE: u8 = 0x05;
pub const STREAM_OPEN: u8 = 0x06;
/// Reader side; the writer side is the next tag.
pub const STREAM_BIND: u8 = 0x07;
pub const STREAM_BIND_W: u8 = 0x08;
pub const STREAM_CLOSE: u8 = 0x09;
pub const STREAM_CLOSE_W: u8 = 0x0a;
pub const STREAM_REPLACE: u8 = 0x0b;
pub const STREAM_REPLACE_W: u8 = 0x0c;
pub const STREAM_NAME: u8 = 0x0d;
pub const TASK_TOTALS: u8 = 0x0e;
/// Reader side; the writer side is the next tag.
pub const STREAM_TOTALS: u8 = 0x0f;
pub const STREAM_TOTALS_W: u8 = 0x10;
pub const WORKER_TOTALS: u8 = 0x11;
/// Version 4's window, without the signal count.
pub const SAMPLES: u8 = 0x12;
/// Version 5's window: the signal count follows the sample count.
pub const SAMPLES_SIGNALS: u8 = 0x13;
/// High bit: a period.
pub const PERIOD: u8 = 0x80;

pub const OPS_NONE: u8 = 0;
pub const OPS_IMPLIED: u8 = 1;
pub const OPS_INTERLEAVED: u8 = 2;
pub const OPS_LISTED: u8 = 3;

/// Forms of a listed period's ops (bits 1-2 of its ops header).
pub const FORM_EXPLICIT: u64 = 0;
pub const FORM_IMPLIED: u64 = 1;
pub const FORM_INTERLEAVED: u64 = 2;

/// The tag of a sided record from its reader-side tag.
pub const fn with_side(reader_tag: u8, side: Side) -> u8 {
    match side {
        Side::Reader => reader_tag,
        Side::Writer => reader_tag + 1,
    }
}

/// The side of a sided record's tag.
pub const fn side(tag: u8) -> Side {
    // Reader tags are odd (0x07, 0x09, 0x0b, 0x0f).
    if tag & 1 == 1 {
        Side::Reader
    } else {
        Side::Writer
    }
}
