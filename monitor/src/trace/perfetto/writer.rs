//! A streaming writer of Perfetto's protobuf trace format: tracks, slices
//! and counters as `TrackEvent` packets with interned names, each track on a
//! packet sequence of its own with delta-encoded time stamps.
//!
//! A trace file is a `Trace` message, that is a series of `TracePacket`s
//! each written as field 1 of `Trace`, so packets are appended one by one
//! and nothing is held back. Layout:
//!
//! * a `TrackDescriptor` packet per track (no sequence): its uuid, name,
//!   parent, and for a counter track its `CounterDescriptor`;
//! * on a track's first event, a packet on the track's own sequence that
//!   clears the sequence's incremental state, sets its defaults (the track,
//!   the clock) and holds a `ClockSnapshot` tying a sequence-scoped
//!   incremental clock (id 64, nanoseconds) to the boot-time clock at 0, as
//!   Perfetto's own SDK does; each later packet's `timestamp` is then the
//!   nanoseconds since the sequence's previous packet, so events of a track
//!   must be written in time order;
//! * slices as `TYPE_SLICE_BEGIN`/`TYPE_SLICE_END` pairs (slices on a track
//!   nest; trace processor keeps equal time stamps in file order), names as
//!   `name_iid`s whose strings go into the packet's `InternedData` the first
//!   time the sequence uses them; counters as `TYPE_COUNTER` with a double;
//!   flows as `flow_ids`/`terminating_flow_ids` on slice begins.
//!
//! The field numbers are those of Perfetto's `.proto` files under
//! `protos/perfetto/trace/` (named at each constant); the messages are
//! proto2, so an absent field is simply left out.

use std::collections::HashMap;
use std::io::{self, Write};

use crate::trace::protobuf::{put_varint, Message};

/// Field numbers and enum values from Perfetto's protos.
mod field {
    // trace.proto, message Trace.
    pub const TRACE_PACKET: u32 = 1;

    // trace_packet.proto, message TracePacket.
    pub const TIMESTAMP: u32 = 8;
    pub const CLOCK_SNAPSHOT: u32 = 6;
    pub const TRUSTED_PACKET_SEQUENCE_ID: u32 = 10;
    pub const TRACK_EVENT: u32 = 11;
    pub const INTERNED_DATA: u32 = 12;
    pub const SEQUENCE_FLAGS: u32 = 13;
    pub const TRACE_PACKET_DEFAULTS: u32 = 59;
    pub const TRACK_DESCRIPTOR: u32 = 60;
    // TracePacket.SequenceFlags.
    pub const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
    pub const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;

    // trace_packet_defaults.proto, message TracePacketDefaults.
    pub const DEFAULTS_TIMESTAMP_CLOCK_ID: u32 = 58;
    pub const DEFAULTS_TRACK_EVENT: u32 = 11;
    // track_event.proto, message TrackEventDefaults.
    pub const TRACK_EVENT_DEFAULTS_TRACK_UUID: u32 = 11;

    // clock_snapshot.proto, messages ClockSnapshot and ClockSnapshot.Clock.
    pub const CLOCKS: u32 = 1;
    pub const CLOCK_ID: u32 = 1;
    pub const CLOCK_TIMESTAMP: u32 = 2;
    pub const CLOCK_IS_INCREMENTAL: u32 = 3;
    pub const CLOCK_UNIT_MULTIPLIER_NS: u32 = 4;
    // ClockSnapshot.Clock.BuiltinClocks.
    pub const BUILTIN_CLOCK_BOOTTIME: u64 = 6;
    /// The first sequence-scoped clock id (ids 64 to 127 are per
    /// sequence); the SDK's incremental clock uses it too.
    pub const SEQUENCE_CLOCK: u64 = 64;

    // track_event/track_descriptor.proto, message TrackDescriptor.
    pub const TD_UUID: u32 = 1;
    pub const TD_NAME: u32 = 2;
    pub const TD_PARENT_UUID: u32 = 5;
    pub const TD_COUNTER: u32 = 8;
    pub const TD_CHILD_ORDERING: u32 = 11;
    pub const TD_SIBLING_ORDER_RANK: u32 = 12;
    pub const TD_DESCRIPTION: u32 = 14;
    pub const TD_SIBLING_MERGE_BEHAVIOR: u32 = 15;
    // TrackDescriptor.ChildTracksOrdering.
    pub const CHILD_ORDERING_EXPLICIT: u64 = 3;
    // TrackDescriptor.SiblingMergeBehavior.
    pub const SIBLING_MERGE_BEHAVIOR_NONE: u64 = 2;

    // track_event/counter_descriptor.proto, message CounterDescriptor.
    pub const CD_UNIT_NAME: u32 = 6;
    pub const CD_Y_AXIS_SHARE_KEY: u32 = 7;

    // track_event/track_event.proto, message TrackEvent.
    pub const TE_DEBUG_ANNOTATIONS: u32 = 4;
    pub const TE_TYPE: u32 = 9;
    pub const TE_NAME_IID: u32 = 10;
    pub const TE_DOUBLE_COUNTER_VALUE: u32 = 44;
    pub const TE_FLOW_IDS: u32 = 47;
    pub const TE_TERMINATING_FLOW_IDS: u32 = 48;
    // TrackEvent.Type.
    pub const TYPE_SLICE_BEGIN: u64 = 1;
    pub const TYPE_SLICE_END: u64 = 2;
    pub const TYPE_COUNTER: u64 = 4;

    // track_event/debug_annotation.proto, message DebugAnnotation.
    pub const DA_NAME_IID: u32 = 1;
    pub const DA_UINT_VALUE: u32 = 3;
    pub const DA_STRING_VALUE: u32 = 6;
    pub const DA_STRING_VALUE_IID: u32 = 17;

    // interned_data/interned_data.proto, message InternedData.
    pub const ID_EVENT_NAMES: u32 = 2;
    pub const ID_DEBUG_ANNOTATION_NAMES: u32 = 3;
    pub const ID_DEBUG_ANNOTATION_STRING_VALUES: u32 = 29;
    // EventName and DebugAnnotationName (track_event.proto,
    // debug_annotation.proto): iid = 1, name = 2; InternedString
    // (profiling/profile_common.proto): iid = 1, str = 2.
    pub const INTERNED_IID: u32 = 1;
    pub const INTERNED_NAME: u32 = 2;
}

/// A string of the trace's one table: event names, annotation names and
/// annotation string values alike. Its interning id on every sequence is
/// its index + 1 (0 means "not set" in Perfetto's interning).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Name(u32);

/// A track written by a [`Writer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Track(u32);

impl Track {
    /// The track's uuid in the trace (index + 1).
    pub fn uuid(self) -> u64 {
        u64::from(self.0) + 1
    }
}

/// The value of a debug annotation.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Value<'a> {
    Uint(u64),
    /// A string of the table (interned on the sequence).
    Name(Name),
    /// A string written as is.
    Text(&'a str),
}

/// A debug annotation (shown as the slice's arguments).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Arg<'a> {
    pub name: Name,
    pub value: Value<'a>,
}

/// What a track holds.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind<'a> {
    /// Slices (or nothing: a parent of other tracks).
    Slices,
    /// A counter, with its unit's name and the key of the tracks whose
    /// y axes the UI shares.
    Counter {
        unit: &'a str,
        share: Option<&'a str>,
    },
}

/// One track's packet sequence.
#[derive(Debug, Default)]
struct Seq {
    started: bool,
    /// The time of its last packet, ns.
    last: u64,
    /// Which strings it has interned: bit 0 event name, 1 annotation
    /// name, 2 annotation string value; by name index.
    sent: Vec<u8>,
}

const EVENT_NAME: u8 = 1;
const ANNOTATION_NAME: u8 = 2;
const ANNOTATION_STRING: u8 = 4;

/// Counts of what a [`Writer`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct WriterStats {
    pub packets: u64,
    pub bytes: u64,
    pub tracks: u64,
    pub slices: u64,
    pub counter_values: u64,
}

/// Writes a trace packet by packet (see the module documentation).
pub(crate) struct Writer<'w> {
    out: &'w mut dyn Write,
    pkt: Message,
    head: Vec<u8>,
    names: Vec<String>,
    index: HashMap<String, u32>,
    seqs: Vec<Seq>,
    /// Strings to intern in the packet being built, by kind.
    pending: Vec<(u8, Name)>,
    pub stats: WriterStats,
}

impl<'w> Writer<'w> {
    pub fn new(out: &'w mut dyn Write) -> Self {
        Writer {
            out,
            pkt: Message::default(),
            head: Vec::with_capacity(8),
            names: Vec::new(),
            index: HashMap::new(),
            seqs: Vec::new(),
            pending: Vec::new(),
            stats: WriterStats::default(),
        }
    }

    /// The table's entry for `s` (added on first use).
    pub fn name(&mut self, s: &str) -> Name {
        if let Some(&i) = self.index.get(s) {
            return Name(i);
        }
        let i = self.names.len() as u32;
        self.names.push(s.to_owned());
        self.index.insert(s.to_owned(), i);
        Name(i)
    }

    /// Writes the packet built in `self.pkt` as a field of `Trace`.
    fn flush_packet(&mut self) -> io::Result<()> {
        self.head.clear();
        put_varint(&mut self.head, (u64::from(field::TRACE_PACKET) << 3) | 2);
        put_varint(&mut self.head, self.pkt.bytes().len() as u64);
        self.out.write_all(&self.head)?;
        self.out.write_all(self.pkt.bytes())?;
        self.stats.packets += 1;
        self.stats.bytes += (self.head.len() + self.pkt.bytes().len()) as u64;
        self.pkt.clear();
        Ok(())
    }

    /// Declares a track: `rank` orders it among its parent's children
    /// (which the UI shows in that order when the parent says
    /// `ordered_children`).
    pub fn track(
        &mut self,
        name: &str,
        description: Option<&str>,
        parent: Option<Track>,
        kind: Kind<'_>,
        rank: i32,
        ordered_children: bool,
    ) -> io::Result<Track> {
        let t = Track(self.seqs.len() as u32);
        self.seqs.push(Seq::default());
        self.pkt.nested(field::TRACK_DESCRIPTOR, |d| {
            d.uint(field::TD_UUID, t.uuid());
            d.string(field::TD_NAME, name);
            if let Some(p) = parent {
                d.uint(field::TD_PARENT_UUID, p.uuid());
            }
            if let Kind::Counter { unit, share } = kind {
                d.nested(field::TD_COUNTER, |c| {
                    c.string(field::CD_UNIT_NAME, unit);
                    if let Some(k) = share {
                        c.string(field::CD_Y_AXIS_SHARE_KEY, k);
                    }
                });
            }
            if ordered_children {
                d.uint(field::TD_CHILD_ORDERING, field::CHILD_ORDERING_EXPLICIT);
            }
            // int32: a negative rank would take ten bytes; ranks here are >= 0.
            d.uint(field::TD_SIBLING_ORDER_RANK, rank.max(0) as u64);
            if let Some(text) = description {
                d.string(field::TD_DESCRIPTION, text);
            }
            // Tasks may share a name: the UI must not merge their tracks.
            d.uint(
                field::TD_SIBLING_MERGE_BEHAVIOR,
                field::SIBLING_MERGE_BEHAVIOR_NONE,
            );
        });
        self.flush_packet()?;
        self.stats.tracks += 1;
        Ok(t)
    }

    /// Starts a packet on `track`'s sequence at `ts` (ns): the sequence's
    /// first packet before it if needed, then the delta time stamp.
    fn start_packet(&mut self, track: Track, ts: u64) -> io::Result<()> {
        let seq_id = track.uuid();
        let seq = &mut self.seqs[track.0 as usize];
        if !seq.started {
            seq.started = true;
            seq.last = 0;
            self.pkt.uint(field::TRUSTED_PACKET_SEQUENCE_ID, seq_id);
            self.pkt
                .uint(field::SEQUENCE_FLAGS, field::SEQ_INCREMENTAL_STATE_CLEARED);
            self.pkt.nested(field::TRACE_PACKET_DEFAULTS, |d| {
                d.uint(field::DEFAULTS_TIMESTAMP_CLOCK_ID, field::SEQUENCE_CLOCK);
                d.nested(field::DEFAULTS_TRACK_EVENT, |e| {
                    e.uint(field::TRACK_EVENT_DEFAULTS_TRACK_UUID, track.uuid());
                });
            });
            self.pkt.nested(field::CLOCK_SNAPSHOT, |s| {
                s.nested(field::CLOCKS, |c| {
                    c.uint(field::CLOCK_ID, field::BUILTIN_CLOCK_BOOTTIME);
                    c.uint(field::CLOCK_TIMESTAMP, 0);
                });
                s.nested(field::CLOCKS, |c| {
                    c.uint(field::CLOCK_ID, field::SEQUENCE_CLOCK);
                    c.uint(field::CLOCK_TIMESTAMP, 0);
                    c.uint(field::CLOCK_IS_INCREMENTAL, 1);
                    c.uint(field::CLOCK_UNIT_MULTIPLIER_NS, 1);
                });
            });
            self.flush_packet()?;
        }
        let seq = &mut self.seqs[track.0 as usize];
        // Events of a track come in time order; a late one is put at the
        // sequence's current time rather than breaking the delta encoding.
        let delta = ts.saturating_sub(seq.last);
        seq.last += delta;
        self.pkt.uint(field::TIMESTAMP, delta);
        self.pkt.uint(field::TRUSTED_PACKET_SEQUENCE_ID, seq_id);
        Ok(())
    }

    /// Marks `name` as used by the packet being built on `track` in the
    /// role `kind`, to be interned with it if the sequence lacks it.
    fn intern(&mut self, track: Track, kind: u8, name: Name) {
        let sent = &mut self.seqs[track.0 as usize].sent;
        let i = name.0 as usize;
        if sent.len() <= i {
            sent.resize(i + 1, 0);
        }
        if sent[i] & kind == 0 {
            sent[i] |= kind;
            self.pending.push((kind, name));
        }
    }

    /// The interned data of the packet being built, and its flags.
    fn finish_event_packet(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            let names = &self.names;
            let pending = &self.pending;
            self.pkt.nested(field::INTERNED_DATA, |d| {
                for &(kind, name) in pending {
                    let f = match kind {
                        EVENT_NAME => field::ID_EVENT_NAMES,
                        ANNOTATION_NAME => field::ID_DEBUG_ANNOTATION_NAMES,
                        _ => field::ID_DEBUG_ANNOTATION_STRING_VALUES,
                    };
                    d.nested(f, |e| {
                        e.uint(field::INTERNED_IID, u64::from(name.0) + 1);
                        e.string(field::INTERNED_NAME, &names[name.0 as usize]);
                    });
                }
            });
            self.pending.clear();
        }
        self.pkt
            .uint(field::SEQUENCE_FLAGS, field::SEQ_NEEDS_INCREMENTAL_STATE);
        self.flush_packet()
    }

    /// Begins a slice named `name` on `track` at `ts` (ns), with arguments
    /// and flows: `flows` start (or continue) here, `ends` end here.
    pub fn begin(
        &mut self,
        track: Track,
        ts: u64,
        name: Name,
        args: &[Arg<'_>],
        flows: &[u64],
        ends: &[u64],
    ) -> io::Result<()> {
        self.start_packet(track, ts)?;
        self.intern(track, EVENT_NAME, name);
        for a in args {
            self.intern(track, ANNOTATION_NAME, a.name);
            if let Value::Name(v) = a.value {
                self.intern(track, ANNOTATION_STRING, v);
            }
        }
        self.pkt.nested(field::TRACK_EVENT, |e| {
            e.uint(field::TE_TYPE, field::TYPE_SLICE_BEGIN);
            e.uint(field::TE_NAME_IID, u64::from(name.0) + 1);
            for a in args {
                e.nested(field::TE_DEBUG_ANNOTATIONS, |d| {
                    d.uint(field::DA_NAME_IID, u64::from(a.name.0) + 1);
                    match a.value {
                        Value::Uint(v) => d.uint(field::DA_UINT_VALUE, v),
                        Value::Name(v) => d.uint(field::DA_STRING_VALUE_IID, u64::from(v.0) + 1),
                        Value::Text(s) => d.string(field::DA_STRING_VALUE, s),
                    }
                });
            }
            for &f in flows {
                e.fixed64(field::TE_FLOW_IDS, f);
            }
            for &f in ends {
                e.fixed64(field::TE_TERMINATING_FLOW_IDS, f);
            }
        });
        self.finish_event_packet()
    }

    /// Ends the innermost open slice of `track` at `ts` (ns).
    pub fn end(&mut self, track: Track, ts: u64) -> io::Result<()> {
        self.start_packet(track, ts)?;
        self.pkt.nested(field::TRACK_EVENT, |e| {
            e.uint(field::TE_TYPE, field::TYPE_SLICE_END);
        });
        self.stats.slices += 1;
        self.finish_event_packet()
    }

    /// A slice `[a, b]` (ns) on `track`.
    #[allow(clippy::too_many_arguments)]
    pub fn slice(
        &mut self,
        track: Track,
        a: u64,
        b: u64,
        name: Name,
        args: &[Arg<'_>],
        flows: &[u64],
        ends: &[u64],
    ) -> io::Result<()> {
        self.begin(track, a, name, args, flows, ends)?;
        self.end(track, b.max(a))
    }

    /// The value of counter `track` from `ts` (ns) on.
    pub fn counter(&mut self, track: Track, ts: u64, v: f64) -> io::Result<()> {
        self.start_packet(track, ts)?;
        self.pkt.nested(field::TRACK_EVENT, |e| {
            e.uint(field::TE_TYPE, field::TYPE_COUNTER);
            e.double(field::TE_DOUBLE_COUNTER_VALUE, v);
        });
        self.stats.counter_values += 1;
        self.finish_event_packet()
    }

    /// Flushes the output.
    pub fn finish(self) -> io::Result<WriterStats> {
        self.out.flush()?;
        Ok(self.stats)
    }
}
