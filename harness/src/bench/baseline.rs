//! `gantry bench proxy --baseline <rev>`: the gateway and admin of another git revision, built
//! in a worktree of their own, measured in the same rounds as the current build.
//!
//! The worktree is `target/gantry-baseline/<commit>` (kept, so a second run at the same
//! revision builds nothing) and every baseline builds into `target/gantry-baseline/target`
//! (shared, so a nearby revision rebuilds only what differs). The build's profile is the
//! running gantry's, like the current binaries'.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::backend::host::{Profile, build_binaries_into};

/// A revision's binaries, built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Baseline {
    /// The revision as asked (`main`, `HEAD~3`, a sha).
    pub rev: String,
    /// The commit it names.
    pub commit: String,
    /// Where its `gantry-admin` and `gantry-gateway` are.
    pub bin_dir: PathBuf,
}

/// Resolves `rev` in the git checkout at `workspace`, checks it out in its worktree (once)
/// and builds its binaries; `progress` hears what it does (the first build takes minutes).
pub(crate) fn build(
    workspace: &Path,
    rev: &str,
    progress: &(dyn Fn(String) + Sync),
) -> anyhow::Result<Baseline> {
    let commit = git(
        workspace,
        &["rev-parse", "--verify", &format!("{rev}^{{commit}}")],
    )
    .map_err(|e| {
        anyhow::anyhow!(
            "--baseline {rev}: not a commit of {}: {e}",
            workspace.display()
        )
    })?;
    let root = workspace.join("target").join("gantry-baseline");
    let tree = root.join(&commit);
    if tree.join("Cargo.toml").is_file() {
        progress(format!(
            "baseline {rev} ({commit}): worktree {}",
            tree.display()
        ));
    } else {
        std::fs::create_dir_all(&root)?;
        // A directory left by a removed worktree would make `worktree add` refuse.
        git(workspace, &["worktree", "prune"])?;
        git(
            workspace,
            &[
                "worktree",
                "add",
                "--detach",
                &tree.to_string_lossy(),
                &commit,
            ],
        )
        .map_err(|e| anyhow::anyhow!("--baseline {rev}: checking out {commit}: {e}"))?;
        progress(format!(
            "baseline {rev} ({commit}): checked out in {}",
            tree.display()
        ));
    }
    let target = root.join("target");
    progress(format!(
        "baseline {rev}: cargo build --workspace --bins{} into {} (the first time takes minutes)",
        if cfg!(debug_assertions) {
            ""
        } else {
            " --release"
        },
        target.display()
    ));
    anyhow::ensure!(
        build_binaries_into(&tree, Some(&target), Profile::Harness)?,
        "--baseline needs cargo on PATH to build {rev}"
    );
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    Ok(Baseline {
        rev: rev.to_owned(),
        commit,
        bin_dir: target.join(profile),
    })
}

/// Runs git in `dir`, answering its trimmed stdout or its stderr as the error.
fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| anyhow::anyhow!("running git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        anyhow::bail!("{}", String::from_utf8_lossy(&out.stderr).trim())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revision_that_is_not_a_commit_is_named() {
        let workspace = Path::new(crate::WORKSPACE_DIR);
        let e = build(workspace, "no-such-revision-here", &|_| {}).unwrap_err();
        let text = format!("{e:#}");
        assert!(
            text.contains("--baseline no-such-revision-here: not a commit"),
            "{text}"
        );
    }
}
