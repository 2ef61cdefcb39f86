//! rill-monitor: reads rill logs (skeleton).
