//! Pictures of a run over time. Imports the layers below it (`render/` to
//! `summary/`); within, lowest first:
//!
//! | module | what |
//! |--------|------|
//! | `detail` | detail levels: which periods a trace draws one by one |
//! | `protobuf` | the protobuf wire format |
//! | `perfetto/` | the Perfetto trace ([`write_perfetto_trace`](crate::write_perfetto_trace)): `writer` (packets and tracks), `layout` (the track groups), `pass` (the slices and counters) |
//! | `chrome` | the Chrome JSON trace ([`chrome_trace`](crate::chrome_trace)) |
//! | `timeline` | the SVG timeline ([`timeline_svg`](crate::timeline_svg)) |

pub(crate) mod chrome;
pub(crate) mod detail;
pub(crate) mod perfetto;
pub(crate) mod protobuf;
pub(crate) mod timeline;
