//! Explaining a run: who waited for whom, what held it back. Imports the
//! layers below it (`render/` to `plan/`: the placement rule asks the
//! planner); within, lowest first:
//!
//! | module | what |
//! |--------|------|
//! | `waits` | the waiting relation ([`waits`](crate::waits())) |
//! | `findings` | what `bottleneck` finds: options, report, a finding's numbers |
//! | `task_graph` | the task graph the rules look at |
//! | `placement` | the placement rule: crossing workers against the planner's mapping |
//! | `verdict` | the findings in words |
//! | `bottleneck` | the window rules ([`bottleneck`](crate::bottleneck())) |

pub(crate) mod bottleneck;
pub(crate) mod findings;
pub(crate) mod placement;
pub(crate) mod task_graph;
pub(crate) mod verdict;
pub(crate) mod waits;
