//! A store's data directory, emptied for each fresh start.

use std::path::{Path, PathBuf};

use crate::error::BackendError;

/// An empty `<dir>/data` (emptied when it exists), for a store's fresh start.
pub(super) fn fresh_data(dir: &Path) -> Result<PathBuf, BackendError> {
    let io = |what: String| move |source| BackendError::Io { what, source };
    let data = dir.join("data");
    if data.exists() {
        std::fs::remove_dir_all(&data).map_err(io(format!("emptying {}", data.display())))?;
    }
    std::fs::create_dir_all(&data).map_err(io(format!("creating {}", data.display())))?;
    Ok(data)
}
