//! Monitoring hooks called by the runtime. (Filled in by the monitoring work;
//! for now every hook is an empty inline function.)

use crate::stream::Side;
use crate::task::BlockedOn;

#[inline(always)]
pub(crate) fn stream_open(_id: u64, _cap: usize) {}
#[inline(always)]
pub(crate) fn stream_bind(_id: u64, _side: Side) {}
#[inline(always)]
pub(crate) fn stream_close(_id: u64, _side: Side) {}
#[inline(always)]
pub(crate) fn stream_replace(_side: Side, _old: u64, _new: u64) {}
#[inline(always)]
pub(crate) fn message_written(_id: u64) {}
#[inline(always)]
pub(crate) fn message_read(_id: u64) {}
#[inline(always)]
pub(crate) fn woke_peer(_id: u64) {}
#[inline(always)]
pub(crate) fn task_blocking(_on: &BlockedOn) {}
#[inline(always)]
pub(crate) fn task_assigned(_id: u64, _parent: u64, _worker: usize, _name: &str) {}
#[inline(always)]
pub(crate) fn task_migrated(_id: u64, _from: usize, _to: usize) {}
