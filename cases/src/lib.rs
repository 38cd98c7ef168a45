//! Scenario files for gantry; see tests/scenarios.rs.
