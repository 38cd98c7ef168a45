//! Checks: each fits its kind, its request, the objects it names and its number ranges (each
//! kind validates its own spec, [`crate::judge::spec::CheckSpec::validate`]).

use super::*;
use crate::judge::spec::ValidateCx;

impl<'s> Validator<'s> {
    /// A check fits its kind: its request is valid, the selector and upstreams it names exist
    /// at that point, and its numbers are in range.
    pub(super) fn check(&mut self, c: &Check, at: &str, selectors: &HashSet<&str>) {
        // A probe's keys stand beside `name`; a judge's under its key.
        let base = match &c.kind {
            CheckKind::Probe(_) => at.to_owned(),
            kind => format!("{at}.{}", kind.name()),
        };
        self.request(c.kind.request(), &format!("{base}.request"));
        c.kind.spec().validate(
            &mut CheckCx {
                validator: self,
                selectors,
            },
            &base,
        );
    }
}

/// The validator as a check kind sees it: with the selectors that exist at the check.
struct CheckCx<'v, 's> {
    validator: &'v mut Validator<'s>,
    selectors: &'v HashSet<&'v str>,
}

impl ValidateCx for CheckCx<'_, '_> {
    fn problem(&mut self, path: String, message: String) {
        self.validator.report(path, message);
    }

    fn has_selector(&self, name: &str) -> bool {
        self.selectors.contains(name)
    }

    fn upstream(&mut self, name: &str, path: String) {
        self.validator.known(name, path);
    }

    fn expectation(&mut self, expect: &Expect, path: &str) {
        self.validator.expectation(expect, path);
    }
}
