//! Where suites and the files they name are read from: the disk for the `taintguard` command,
//! callbacks into Node's `fs` for the npm package, whose wasm has no file system of its own.

use std::path::Path;

/// Reads suites and the files they name, so that the suite code runs the same on the disk and
/// through Node's `fs`.
pub trait Files {
    /// The text of the file at `path`.
    ///
    /// # Errors
    ///
    /// It cannot be read; the message names it.
    fn read(&self, path: &Path) -> Result<String, String>;

    /// The entries of the directory at `path` as `(name, is a directory)`; `None` when `path` is
    /// not a directory.
    ///
    /// # Errors
    ///
    /// It is a directory that cannot be listed.
    fn list(&self, path: &Path) -> Result<Option<Vec<(String, bool)>>, String>;
}

/// The local file system.
pub struct Disk;

impl Files for Disk {
    fn read(&self, path: &Path) -> Result<String, String> {
        std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn list(&self, path: &Path) -> Result<Option<Vec<(String, bool)>>, String> {
        if !path.is_dir() {
            return Ok(None);
        }
        let entries = std::fs::read_dir(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Some(
            entries
                .filter_map(Result::ok)
                .map(|e| {
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        e.path().is_dir(),
                    )
                })
                .collect(),
        ))
    }
}
