//! Where a run's tasks should run. Imports the layers below it (`render/`
//! to `trace/`); within, lowest first:
//!
//! | module | what |
//! |--------|------|
//! | `partition` | the graph partition ([`partition`](crate::partition()), [`evaluate`](crate::evaluate)) |
//! | `mapfile` | the plan and its mapping file ([`MapPlan`](crate::MapPlan)) |
//! | `planner` | `rill-mon map`'s planner ([`plan_mapping`](crate::plan_mapping)) |
//! | `rankmap` | the planner over ranks and workers ([`plan_rank_mapping`](crate::plan_rank_mapping)) |

pub(crate) mod mapfile;
pub(crate) mod partition;
pub(crate) mod planner;
pub(crate) mod rankmap;
