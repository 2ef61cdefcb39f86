//! The evolution of task and worker states over the run
//! (`rill-mon evolution`): the view for stretches too dense for the
//! timeline's periods.

use super::html;
use super::Ctx;

pub(super) fn body(ctx: &Ctx<'_>) -> String {
    ctx.with_evolution(|evo| match evo {
        Ok(evo) => {
            let mut o = String::from("<div class=\"scroll\">\n");
            o.push_str(&super::timeline::inline(&evo.to_svg(), "evolution"));
            o.push_str("</div>\n");
            o.push_str(&html::note(
                "Over time, in buckets: the shares of live tasks running, ready, not yet \
                 started, blocked reading and blocked writing, the workers' busy and waiting \
                 shares, and the busiest task groups' running shares. `rill-mon evolution DIR \
                 --csv` gives the series.",
            ));
            if ctx.sampled() {
                o.push_str(&html::missing(
                    "ready and blocked tasks apart: sample mode sees which task runs, not why \
                     the others wait, so they show together as not running.",
                ));
            }
            o
        }
        Err(e) => html::missing(&format!("the evolution of states: {e:#}")),
    })
}
