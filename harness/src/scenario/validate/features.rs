//! `features`: every name is in the closed list (`conformance/features.yaml`), once.

use super::*;

impl<'s> Validator<'s> {
    /// `features`: an unknown name is a problem at its element, naming the nearest known one;
    /// a repeated one too.
    pub(super) fn features(&mut self) {
        let catalog = crate::conformance::catalog();
        for (i, name) in self.s.features.iter().enumerate() {
            if catalog.get(name).is_none() {
                self.report(format!("features[{i}]"), catalog.unknown(name));
            }
        }
        self.unique(
            self.s.features.iter().map(String::as_str),
            "features",
            "feature",
        );
    }
}
