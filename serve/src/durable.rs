//! A staged file made durable in two steps, so the first can overlap the door's parse of the
//! same body: [`Flushed::write`] writes the bytes under a hidden temporary name beside the target
//! and flushes them (`fsync`); [`Flushed::commit`] links the file to its staged name (never
//! replacing one), removes the temporary name and flushes the directory. The library's
//! `PendingFile` does the same in one call; the collector needs the steps apart, and opens every
//! folder and file without following links ([`crate::confined`]). A file that is never committed
//! is removed when dropped, and one a crash left (`.<name>.partial-…`) is removed when the
//! collector starts and skipped by assembly, so no staged name ever holds a torn file.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use diagwire::bundle::target::temporary_file_name;

use crate::confined::{Dir, Root};

/// Bytes written and flushed under a temporary name, waiting to be linked to their staged name.
#[derive(Debug)]
pub struct Flushed {
    dir: Dir,
    tmp: Option<String>,
    name: String,
    target: PathBuf,
}

impl Flushed {
    /// Creates `target`'s directory durably when missing (under `root`, no link followed), then
    /// writes `bytes` under a new temporary name beside `target` and flushes them.
    pub fn write(root: &Root, target: &Path, bytes: &[u8]) -> io::Result<Flushed> {
        let dir = root.dir(target.parent().unwrap_or(Path::new(".")), true)?;
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = temporary_file_name(&name);
        let mut file = dir.create_new(&tmp)?;
        let flushed = Flushed {
            dir,
            tmp: Some(tmp),
            name,
            target: target.to_path_buf(),
        };
        file.write_all(bytes)?;
        file.sync_all()?;
        Ok(flushed)
    }

    /// The staged name it is for.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Links the flushed file to its staged name, which must not exist, removes the temporary
    /// name and flushes the directory: once this returns, the staged file survives a crash whole.
    pub fn commit(mut self) -> io::Result<()> {
        let tmp = self.tmp.take().unwrap_or_default();
        let linked = self.dir.link(&tmp, &self.name);
        let _ = self.dir.remove(&tmp);
        linked?;
        self.dir.sync()
    }
}

impl Drop for Flushed {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            let _ = self.dir.remove(&tmp);
        }
    }
}
