//! Traces.

pub(crate) mod chrome;
pub(crate) mod detail;
pub(crate) mod perfetto;
pub(crate) mod protobuf;
pub(crate) mod timeline;
