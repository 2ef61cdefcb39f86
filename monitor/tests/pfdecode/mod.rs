//! An independent reader of the Perfetto traces `rill-mon` writes: a
//! protobuf wire decoder and the parts of trace processor's import that the
//! traces use (track descriptors, per-sequence incremental state: defaults,
//! interned strings and a delta-encoded clock; slices, counters, flows).
//! Written from Perfetto's `.proto` files, not from `rill-mon`'s encoder,
//! and strict: anything it does not expect is an error.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};

/// One field: number and value.
#[derive(Clone, Debug)]
enum F<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
}

fn varint(b: &[u8], pos: &mut usize) -> Result<u64, String> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos).ok_or("truncated varint")?;
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("varint longer than 10 bytes".into())
}

/// The fields of one message, in order.
fn fields(b: &[u8]) -> Result<Vec<(u32, F<'_>)>, String> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < b.len() {
        let key = varint(b, &mut pos)?;
        let (num, wire) = ((key >> 3) as u32, key & 7);
        let v = match wire {
            0 => F::Varint(varint(b, &mut pos)?),
            1 => {
                let s = b.get(pos..pos + 8).ok_or("truncated fixed64")?;
                pos += 8;
                F::Fixed64(u64::from_le_bytes(s.try_into().unwrap()))
            }
            2 => {
                let len = varint(b, &mut pos)? as usize;
                let s = b.get(pos..pos + len).ok_or("truncated bytes")?;
                pos += len;
                F::Bytes(s)
            }
            w => return Err(format!("wire type {w} of field {num}")),
        };
        out.push((num, v));
    }
    Ok(out)
}

fn uint(f: &F<'_>) -> Result<u64, String> {
    match f {
        F::Varint(v) => Ok(*v),
        other => Err(format!("expected a varint, got {other:?}")),
    }
}

fn bytes<'a>(f: &F<'a>) -> Result<&'a [u8], String> {
    match f {
        F::Bytes(b) => Ok(b),
        other => Err(format!("expected bytes, got {other:?}")),
    }
}

fn string(f: &F<'_>) -> Result<String, String> {
    String::from_utf8(bytes(f)?.to_vec()).map_err(|e| e.to_string())
}

/// A declared track.
#[derive(Clone, Debug, Default)]
pub struct TrackDesc {
    pub name: String,
    pub parent: Option<u64>,
    pub counter: bool,
    pub description: Option<String>,
    pub rank: Option<u64>,
    /// Its siblings are not merged with it (sibling_merge_behavior NONE).
    pub merge_none: bool,
}

/// An argument value.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Uint(u64),
    Str(String),
}

/// A complete slice.
#[derive(Clone, Debug)]
pub struct Slice {
    pub track: u64,
    pub name: String,
    pub ts: u64,
    pub end: u64,
    pub args: BTreeMap<String, Arg>,
    pub flows: Vec<u64>,
    pub ends: Vec<u64>,
}

/// The decoded trace.
#[derive(Debug, Default)]
pub struct Trace {
    pub tracks: BTreeMap<u64, TrackDesc>,
    pub slices: Vec<Slice>,
    /// Counter values per track, in order.
    pub counters: BTreeMap<u64, Vec<(u64, f64)>>,
    pub packets: usize,
}

impl Trace {
    /// The uuid of the track named `name` (exactly one).
    pub fn track(&self, name: &str) -> u64 {
        let found: Vec<u64> = self
            .tracks
            .iter()
            .filter(|(_, t)| t.name == name)
            .map(|(&u, _)| u)
            .collect();
        assert_eq!(found.len(), 1, "one track named {name:?}: {found:?}");
        found[0]
    }

    /// The slices on track `uuid`, by start.
    pub fn on(&self, uuid: u64) -> Vec<&Slice> {
        let mut v: Vec<&Slice> = self.slices.iter().filter(|s| s.track == uuid).collect();
        v.sort_by_key(|s| (s.ts, s.end));
        v
    }

    /// The children of track `uuid`.
    pub fn children(&self, uuid: u64) -> Vec<u64> {
        self.tracks
            .iter()
            .filter(|(_, t)| t.parent == Some(uuid))
            .map(|(&u, _)| u)
            .collect()
    }
}

#[derive(Default)]
struct SeqState {
    valid: bool,
    default_track: Option<u64>,
    clock: Option<u64>,
    /// The incremental clock's value.
    now: u64,
    incremental: bool,
    names: HashMap<u64, String>,
    ann_names: HashMap<u64, String>,
    ann_strings: HashMap<u64, String>,
}

/// An open slice.
struct Open {
    name: String,
    ts: u64,
    args: BTreeMap<String, Arg>,
    flows: Vec<u64>,
    ends: Vec<u64>,
}

fn interned(d: &[u8], into: &mut HashMap<u64, String>) -> Result<(), String> {
    let (mut iid, mut name) = (None, None);
    for (n, f) in fields(d)? {
        match n {
            1 => iid = Some(uint(&f)?),
            2 => name = Some(string(&f)?),
            _ => return Err(format!("interned entry field {n}")),
        }
    }
    let iid = iid.ok_or("interned entry without iid")?;
    if iid == 0 {
        return Err("iid 0".into());
    }
    into.insert(iid, name.ok_or("interned entry without a string")?);
    Ok(())
}

/// Decodes and checks a whole trace: packet sequences in file order, as
/// trace processor tokenizes them, then slices per track in time order
/// (equal times in file order, as its sorter keeps them).
pub fn decode(data: &[u8]) -> Result<Trace, String> {
    let mut trace = Trace::default();
    let mut seqs: HashMap<u64, SeqState> = HashMap::new();
    // (ts, file order, track, event) for the sort.
    let mut events: Vec<(u64, usize, u64, Ev)> = Vec::new();
    for (num, f) in fields(data)? {
        if num != 1 {
            return Err(format!("Trace field {num}"));
        }
        trace.packets += 1;
        let pkt = fields(bytes(&f)?)?;
        let get = |n: u32| pkt.iter().find(|(k, _)| *k == n).map(|(_, v)| v.clone());
        let seq_id = get(10).map(|f| uint(&f)).transpose()?;
        let flags = get(13).map(|f| uint(&f)).transpose()?.unwrap_or(0);
        if let Some(d) = get(60) {
            let mut t = TrackDesc::default();
            let mut uuid = None;
            for (n, f) in fields(bytes(&d)?)? {
                match n {
                    1 => uuid = Some(uint(&f)?),
                    2 => t.name = string(&f)?,
                    5 => t.parent = Some(uint(&f)?),
                    8 => {
                        t.counter = true;
                        for (n, _) in fields(bytes(&f)?)? {
                            if ![3, 6, 7].contains(&n) {
                                return Err(format!("CounterDescriptor field {n}"));
                            }
                        }
                    }
                    11 => {}
                    12 => t.rank = Some(uint(&f)?),
                    15 => t.merge_none = uint(&f)? == 2,
                    14 => t.description = Some(string(&f)?),
                    _ => return Err(format!("TrackDescriptor field {n}")),
                }
            }
            let uuid = uuid.ok_or("track without uuid")?;
            if trace.tracks.insert(uuid, t).is_some() {
                return Err(format!("track {uuid} declared twice"));
            }
            continue;
        }
        let seq_id = seq_id.ok_or("event packet without a sequence id")?;
        let st = seqs.entry(seq_id).or_default();
        if flags & 1 != 0 {
            *st = SeqState {
                valid: true,
                ..SeqState::default()
            };
        }
        if let Some(d) = get(59) {
            for (n, f) in fields(bytes(&d)?)? {
                match n {
                    58 => st.clock = Some(uint(&f)?),
                    11 => {
                        for (n, f) in fields(bytes(&f)?)? {
                            match n {
                                11 => st.default_track = Some(uint(&f)?),
                                _ => return Err(format!("TrackEventDefaults field {n}")),
                            }
                        }
                    }
                    _ => return Err(format!("TracePacketDefaults field {n}")),
                }
            }
        }
        if let Some(d) = get(12) {
            for (n, f) in fields(bytes(&d)?)? {
                let map = match n {
                    2 => &mut st.names,
                    3 => &mut st.ann_names,
                    29 => &mut st.ann_strings,
                    _ => return Err(format!("InternedData field {n}")),
                };
                interned(bytes(&f)?, map)?;
            }
        }
        if let Some(c) = get(6) {
            for (n, f) in fields(bytes(&c)?)? {
                if n != 1 {
                    return Err(format!("ClockSnapshot field {n}"));
                }
                let clock = fields(bytes(&f)?)?;
                let g = |n: u32| clock.iter().find(|(k, _)| *k == n).map(|(_, v)| uint(v));
                let id = g(1).ok_or("clock without id")??;
                let ts = g(2).ok_or("clock without time")??;
                if id == 64 {
                    st.incremental = g(3).transpose()?.unwrap_or(0) == 1;
                    if g(4).transpose()?.unwrap_or(1) != 1 {
                        return Err("clock units other than ns".into());
                    }
                    st.now = ts;
                } else if id != 6 || ts != 0 {
                    return Err(format!("clock {id} at {ts}"));
                }
            }
            continue;
        }
        let Some(te) = get(11) else {
            return Err(format!(
                "packet with fields {:?}",
                pkt.iter().map(|p| p.0).collect::<Vec<_>>()
            ));
        };
        if flags & 2 == 0 || !st.valid {
            return Err("track event without valid incremental state".into());
        }
        if st.clock != Some(64) || !st.incremental {
            return Err("track event without the incremental clock".into());
        }
        let delta = get(8)
            .map(|f| uint(&f))
            .transpose()?
            .ok_or("no timestamp")?;
        st.now += delta;
        let ts = st.now;
        let mut ev = Ev::default();
        let mut track = st.default_track;
        for (n, f) in fields(bytes(&te)?)? {
            match n {
                9 => ev.kind = uint(&f)?,
                10 => {
                    let iid = uint(&f)?;
                    ev.name = Some(st.names.get(&iid).ok_or(format!("name iid {iid}"))?.clone());
                }
                11 => track = Some(uint(&f)?),
                44 => match f {
                    F::Fixed64(v) => ev.value = Some(f64::from_bits(v)),
                    _ => return Err("counter value".into()),
                },
                47 | 48 => match f {
                    F::Fixed64(v) => if n == 47 { &mut ev.flows } else { &mut ev.ends }.push(v),
                    _ => return Err("flow ids are fixed64".into()),
                },
                4 => {
                    let (mut name, mut val) = (None, None);
                    for (n, f) in fields(bytes(&f)?)? {
                        match n {
                            1 => {
                                let iid = uint(&f)?;
                                name =
                                    Some(st.ann_names.get(&iid).ok_or("annotation name")?.clone());
                            }
                            3 => val = Some(Arg::Uint(uint(&f)?)),
                            6 => val = Some(Arg::Str(string(&f)?)),
                            17 => {
                                let iid = uint(&f)?;
                                val = Some(Arg::Str(
                                    st.ann_strings.get(&iid).ok_or("annotation string")?.clone(),
                                ))
                            }
                            _ => return Err(format!("DebugAnnotation field {n}")),
                        }
                    }
                    let name = name.ok_or("annotation without name")?;
                    if ev
                        .args
                        .insert(name.clone(), val.ok_or("annotation without value")?)
                        .is_some()
                    {
                        return Err(format!("argument {name} twice"));
                    }
                }
                _ => return Err(format!("TrackEvent field {n}")),
            }
        }
        let track = track.ok_or("event without track")?;
        events.push((ts, events.len(), track, ev));
    }
    events.sort_by_key(|e| (e.0, e.1));
    let mut open: HashMap<u64, Vec<Open>> = HashMap::new();
    let mut started = std::collections::HashSet::new();
    for (ts, _, track, ev) in events {
        let desc = trace
            .tracks
            .get(&track)
            .ok_or(format!("undeclared track {track}"))?;
        match ev.kind {
            1 | 2 if desc.counter => return Err(format!("slice on counter track {}", desc.name)),
            1 => {
                for e in &ev.ends {
                    if !started.contains(e) {
                        return Err(format!("flow {e} ends before it starts"));
                    }
                }
                for f in &ev.flows {
                    if !started.insert(*f) {
                        return Err(format!("flow {f} started twice"));
                    }
                }
                let stack = open.entry(track).or_default();
                if !stack.is_empty() {
                    // rill-mon's slices never nest.
                    return Err(format!("overlapping slices on {} at {ts}", desc.name));
                }
                stack.push(Open {
                    name: ev.name.ok_or("slice without name")?,
                    ts,
                    args: ev.args,
                    flows: ev.flows,
                    ends: ev.ends,
                });
            }
            2 => {
                let o = open
                    .get_mut(&track)
                    .and_then(|v| v.pop())
                    .ok_or(format!("end without begin on {}", desc.name))?;
                trace.slices.push(Slice {
                    track,
                    name: o.name,
                    ts: o.ts,
                    end: ts,
                    args: o.args,
                    flows: o.flows,
                    ends: o.ends,
                });
            }
            4 => {
                if !desc.counter {
                    return Err(format!("counter value on slice track {}", desc.name));
                }
                trace
                    .counters
                    .entry(track)
                    .or_default()
                    .push((ts, ev.value.ok_or("counter without value")?));
            }
            k => return Err(format!("event type {k}")),
        }
    }
    for (t, v) in open {
        if !v.is_empty() {
            return Err(format!("{} slices left open on track {t}", v.len()));
        }
    }
    Ok(trace)
}

#[derive(Default)]
struct Ev {
    kind: u64,
    name: Option<String>,
    value: Option<f64>,
    flows: Vec<u64>,
    ends: Vec<u64>,
    args: BTreeMap<String, Arg>,
}
