#!/usr/bin/env python3
"""Checks a trace from `rill-mon trace -o FILE.pftrace` against Perfetto's own
message definitions (the `perfetto` Python package ships them; install it
with `pip install perfetto`), independently of rill-mon's encoder:

* the file parses as a perfetto.protos.Trace, with no unknown fields;
* every track event's sequence was cleared first and uses the incremental
  clock and interned names that sequence defined;
* slices on each track never overlap or stay open, counters sit on counter
  tracks, and every flow that ends was started before.

Prints what it found per kind of packet and the slice and flow counts;
exits 1 on the first violation.

    scripts/check_pftrace.py run.pftrace
"""

import collections
import sys

try:
    from google.protobuf.unknown_fields import UnknownFieldSet
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError:
    sys.exit("needs the perfetto package: pip install perfetto")


def fail(msg):
    print("check_pftrace: " + msg, file=sys.stderr)
    sys.exit(1)


def unknown_fields(msg, path="packet"):
    """Yields the paths of unknown fields anywhere in msg."""
    if len(UnknownFieldSet(msg)):
        yield path
    for desc, value in msg.ListFields():
        if desc.type != desc.TYPE_MESSAGE:
            continue
        items = value if desc.is_repeated else [value]
        for v in items:
            yield from unknown_fields(v, path + "." + desc.name)


def main(path):
    trace = pb.Trace()
    trace.ParseFromString(open(path, "rb").read())
    kinds = collections.Counter()
    tracks = {}
    seqs = {}
    events = []
    for i, p in enumerate(trace.packet):
        kind = p.WhichOneof("data") or "defaults only"
        kinds[kind] += 1
        if i < 2000:
            for u in unknown_fields(p):
                fail(f"packet {i}: unknown field in {u}")
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            if d.uuid in tracks:
                fail(f"track {d.uuid} declared twice")
            tracks[d.uuid] = d
            continue
        seq = p.trusted_packet_sequence_id
        if not seq:
            fail(f"packet {i} ({kind}) has no sequence")
        if p.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
            seqs[seq] = {"names": {}, "ann": {}, "str": {}, "now": None, "track": None}
        st = seqs.get(seq)
        if st is None:
            fail(f"packet {i} on sequence {seq} before it was cleared")
        if p.HasField("trace_packet_defaults"):
            d = p.trace_packet_defaults
            if d.timestamp_clock_id != 64:
                fail("defaults without the incremental clock")
            st["track"] = d.track_event_defaults.track_uuid
        if p.HasField("interned_data"):
            d = p.interned_data
            for e in d.event_names:
                st["names"][e.iid] = e.name
            for e in d.debug_annotation_names:
                st["ann"][e.iid] = e.name
            for e in d.debug_annotation_string_values:
                st["str"][e.iid] = e.str.decode()
        if p.HasField("clock_snapshot"):
            clocks = {c.clock_id: c for c in p.clock_snapshot.clocks}
            if 64 not in clocks or not clocks[64].is_incremental or 6 not in clocks:
                fail("clock snapshot without boot time and the incremental clock")
            st["now"] = clocks[64].timestamp
            continue
        if not p.HasField("track_event"):
            fail(f"packet {i}: unexpected {kind}")
        if not p.sequence_flags & pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE:
            fail(f"packet {i}: event without SEQ_NEEDS_INCREMENTAL_STATE")
        if st["now"] is None:
            fail(f"packet {i}: no clock on sequence {seq}")
        st["now"] += p.timestamp
        e = p.track_event
        track = e.track_uuid if e.HasField("track_uuid") else st["track"]
        name = None
        if e.HasField("name_iid"):
            if e.name_iid not in st["names"]:
                fail(f"packet {i}: name iid {e.name_iid} not interned")
            name = st["names"][e.name_iid]
        for a in e.debug_annotations:
            if a.name_iid not in st["ann"]:
                fail(f"packet {i}: annotation name iid {a.name_iid} not interned")
            if a.HasField("string_value_iid") and a.string_value_iid not in st["str"]:
                fail(f"packet {i}: annotation string iid not interned")
        events.append((st["now"], i, track, e.type, name, list(e.flow_ids),
                       list(e.terminating_flow_ids)))
    events.sort(key=lambda x: (x[0], x[1]))
    open_ = collections.defaultdict(int)
    slices = collections.Counter()
    started, ended = set(), 0
    T = pb.TrackEvent
    for ts, i, track, typ, name, flows, ends in events:
        d = tracks.get(track)
        if d is None:
            fail(f"packet {i}: undeclared track {track}")
        counter = d.HasField("counter")
        if typ == T.TYPE_SLICE_BEGIN:
            if counter or open_[track]:
                fail(f"packet {i}: slice on a counter track or overlapping on {d.name}")
            open_[track] += 1
            for f in ends:
                if f not in started:
                    fail(f"packet {i}: flow {f} ends before it starts")
                ended += 1
            for f in flows:
                started.add(f)
        elif typ == T.TYPE_SLICE_END:
            if not open_[track]:
                fail(f"packet {i}: end without begin on {d.name}")
            open_[track] -= 1
            slices[d.name] += 1
        elif typ == T.TYPE_COUNTER:
            if not counter:
                fail(f"packet {i}: counter value on slice track {d.name}")
        else:
            fail(f"packet {i}: event type {typ}")
    if any(open_.values()):
        fail("slices left open")
    for k, v in kinds.most_common():
        print(f"{k:20} {v:9} packets")
    print(f"{len(tracks)} tracks, {sum(slices.values())} slices, "
          f"{len(started)} flows started, {ended} ended")
    for name, n in slices.most_common(5):
        print(f"  {n:9} slices on {name}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
