//! A full disk under the admin's database (a step's `diskFull` / `diskFree`): a size-limited
//! tmpfs mounted under the case's directory for the admin's SQLite file ([`DiskMount`]), filled
//! by a filler file until ENOSPC and freed by removing it; unmounted when dropped (after the
//! admins, before the directory goes).

use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::BackendError;

/// The size of the tmpfs: room for the admin's database and its WAL in a case.
const SIZE: &str = "8m";

/// The chunks the filler is written in: large ones, then pages for the last few.
const CHUNKS: [usize; 2] = [1 << 16, 1 << 12];

/// Why a case with disk faults cannot run here (mounting a tmpfs needs root), or `None`.
pub(crate) fn skip_reason() -> Option<String> {
    (!rustix::process::geteuid().is_root()).then(|| {
        "the disk faults (`diskFull`) mount a tmpfs for the admin's database: that needs root"
            .to_owned()
    })
}

/// A tmpfs of [`SIZE`] mounted at a directory; dropping it unmounts it (lazily: a process
/// still holding a file there lets go later).
#[derive(Debug)]
pub(crate) struct DiskMount {
    dir: PathBuf,
}

impl DiskMount {
    /// Mounts a tmpfs at `dir` (created); needs root.
    pub(crate) fn mount(dir: PathBuf) -> Result<DiskMount, BackendError> {
        fs::create_dir_all(&dir).map_err(|source| BackendError::Io {
            what: format!("creating {}", dir.display()),
            source,
        })?;
        run(Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={SIZE},mode=0700")])
            .arg("gantry-disk")
            .arg(&dir))?;
        Ok(DiskMount { dir })
    }

    /// The mounted directory.
    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }

    fn filler(&self) -> PathBuf {
        self.dir.join("filler")
    }

    /// Fills the disk: writes the filler until the disk refuses more (ENOSPC); returns how
    /// many bytes it took.
    pub(crate) fn fill(&self) -> Result<u64, BackendError> {
        let path = self.filler();
        let io = |source| BackendError::Io {
            what: format!("filling {}", path.display()),
            source,
        };
        let mut file = File::create(&path).map_err(io)?;
        let mut written = 0;
        for chunk in CHUNKS {
            let zeros = vec![0u8; chunk];
            loop {
                match file.write(&zeros) {
                    Ok(0) => break,
                    Ok(n) => written += n as u64,
                    Err(e) if e.kind() == ErrorKind::StorageFull => break,
                    Err(e) => return Err(io(e)),
                }
            }
        }
        Ok(written)
    }

    /// Frees the disk: removes the filler.
    pub(crate) fn free(&self) -> Result<(), BackendError> {
        let path = self.filler();
        fs::remove_file(&path).map_err(|source| BackendError::Io {
            what: format!("removing {}", path.display()),
            source,
        })
    }
}

impl Drop for DiskMount {
    fn drop(&mut self) {
        if let Err(e) = run(Command::new("umount").arg("-l").arg(&self.dir)) {
            tracing::warn!("unmounting the database disk: {e}");
        }
    }
}

/// Runs `cmd` to its end; fails naming it, with its stderr, when it does not succeed.
fn run(cmd: &mut Command) -> Result<(), BackendError> {
    let command = format!("{cmd:?}");
    let out = cmd.output().map_err(|source| BackendError::Io {
        what: format!("running {command}"),
        source,
    })?;
    match out.status.success() {
        true => Ok(()),
        false => Err(BackendError::CommandFailed {
            command,
            status: out.status.to_string(),
            stderr_tail: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        }),
    }
}
