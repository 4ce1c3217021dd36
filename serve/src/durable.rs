//! A staged file made durable in two steps, so the first can overlap the door's parse of the
//! same body: [`Flushed::write`] writes the bytes under a hidden temporary name beside the target
//! and flushes them (`fsync`); [`Flushed::commit`] links the file to its staged name (never
//! replacing one), removes the temporary name and flushes the directory. The library's
//! `PendingFile` does the same in one call; the collector needs the steps apart. A file that is
//! never committed is removed when dropped, and one a crash left (`.<name>.partial-…`) is removed
//! when the collector starts and skipped by assembly, so no staged name ever holds a torn file.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use diagwire::bundle::target::{create_dir_durable, sync_dir};

/// Bytes written and flushed under a temporary name, waiting to be linked to their staged name.
#[derive(Debug)]
pub struct Flushed {
    tmp: Option<PathBuf>,
    target: PathBuf,
}

impl Flushed {
    /// Creates `target`'s directory durably when missing, then writes `bytes` under a new
    /// temporary name beside `target` and flushes them.
    pub fn write(target: &Path, bytes: &[u8]) -> io::Result<Flushed> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = target.parent().unwrap_or(Path::new("."));
        create_dir_durable(dir)?;
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(
            ".{name}.partial-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        let flushed = Flushed {
            tmp: Some(tmp),
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
        let linked = fs::hard_link(&tmp, &self.target);
        let _ = fs::remove_file(&tmp);
        linked?;
        sync_dir(self.target.parent().unwrap_or(Path::new(".")))
    }
}

impl Drop for Flushed {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            let _ = fs::remove_file(tmp);
        }
    }
}
