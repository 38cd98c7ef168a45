//! Conformance (gantry issue 40, after the Kubernetes Gateway API's conformance suite): the
//! closed list of features and their profiles ([`catalog`], `conformance/features.yaml`),
//! which cases a run takes by their features ([`selection`]: `--profile`,
//! `--supported-features`, `--exempt-features`), and the report a run writes
//! ([`report`]: `--report-conformance`). conformance/README.md explains the levels.

pub mod catalog;
pub mod report;
pub mod selection;

pub use catalog::{Area, Catalog, Feature, Level, catalog};
pub use report::{ConformanceLevel, ConformanceReport, Implementation};
pub use selection::{FeatureSelection, ProfileName, missing_features, unsupported_reason};

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every case file under `cases/scenarios` and `cases/regressions` names at least one
    /// feature, so every case belongs to a profile. Read as plain YAML: whether the rest of a
    /// file parses is the parser's tests' business.
    #[test]
    fn every_case_file_names_a_feature() {
        let root = Path::new(crate::WORKSPACE_DIR).join("cases");
        let dirs: Vec<_> = ["scenarios", "regressions"]
            .map(|d| root.join(d))
            .into_iter()
            .filter(|d| d.is_dir())
            .collect();
        let files: Vec<_> = crate::scenario::discover(&dirs)
            .unwrap()
            .into_iter()
            .map(|f| f.path)
            .collect();
        assert!(files.len() > 50, "{} files", files.len());
        let bare: Vec<String> = files
            .iter()
            .filter(|f| {
                let value: serde_norway::Value =
                    serde_norway::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
                value
                    .get("features")
                    .and_then(serde_norway::Value::as_sequence)
                    .is_none_or(Vec::is_empty)
            })
            .map(|f| f.display().to_string())
            .collect();
        assert!(
            bare.is_empty(),
            "these case files name no feature (`features:`):\n{}",
            bare.join("\n")
        );
    }
}
