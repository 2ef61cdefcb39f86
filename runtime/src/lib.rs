//! rill: a user-mode lightweight-task stream runtime (skeleton).

pub mod monitor;
