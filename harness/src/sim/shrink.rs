//! Shrinking a failing seed: leave steps of its plan out while the run still fails the same
//! checker, first in halves, then one by one, until no single step can go. The world's
//! draws stay the seed's, so each candidate is replayed exactly by `--seed S --keep …`.

use super::{Options, Outcome, run_seed};

/// At most this many candidate runs.
const BUDGET: usize = 200;

/// The smallest failing plan found from `failing` (itself when nothing can go).
pub(crate) fn shrink(failing: &Outcome, options: &Options) -> Result<Outcome, String> {
    let mut best = failing.clone();
    let mut runs = 0;
    let mut chunk = best.plan.steps.len().div_ceil(2).max(1);
    loop {
        let mut progressed = false;
        let mut start = 0;
        while start < best.plan.steps.len() && runs < BUDGET {
            let kept: Vec<usize> = best
                .plan
                .steps
                .iter()
                .enumerate()
                .filter(|(i, _)| *i < start || *i >= start + chunk)
                .map(|(_, s)| s.index)
                .collect();
            runs += 1;
            let candidate = run_seed(failing.seed, Some(&kept), options)?;
            let same = |o: &Outcome| o.violation.as_ref().map(|v| v.checker);
            if same(&candidate).is_some() && same(&candidate) == same(failing) {
                best = candidate;
                progressed = true;
            } else {
                start += chunk;
            }
        }
        if runs >= BUDGET || (chunk == 1 && !progressed) {
            return Ok(best);
        }
        if !progressed {
            chunk = chunk.div_ceil(2).max(1);
        }
    }
}
