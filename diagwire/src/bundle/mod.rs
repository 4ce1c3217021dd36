//! swactor diagnostics bundles: reading (a directory or a `.tar.gz`, [`read`]), building one record
//! by record ([`Writer`] in memory, [`StreamWriter`] to disk as each file is made), writing its files out (a directory or a deterministic `.tar.gz`,
//! [`output`]), and assembling one from the collector's staging tree ([`assemble`]); with the
//! feature `proto`, re-encoding one between JSON and the binary form ([`convert`]). The layout is
//! [`crate::layout`]'s; `docs/legacy-wire.md` describes it.

use std::collections::BTreeMap;

pub mod assemble;
#[cfg(feature = "proto")]
pub mod convert;
pub mod output;
pub mod read;
pub mod records;
mod stream_writer;
pub mod target;
mod writer;

pub use stream_writer::{StreamWriter, Written};
pub use writer::{Finished, Writer};

/// A bundle held in memory: the files of the run directory by relative path (`/`-separated, without
/// the `<run_id>/` prefix), each as its bytes. What writers write and assemblers build.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BundleContents {
    /// The run id, which is also the name of the top-level directory.
    pub run_id: String,
    /// Files by path relative to the run directory, e.g. `MANIFEST.json`, `stage-0/boot.json`.
    pub files: BTreeMap<String, Vec<u8>>,
}

impl BundleContents {
    /// An empty bundle for a run.
    pub fn new(run_id: impl Into<String>) -> Self {
        BundleContents {
            run_id: run_id.into(),
            files: BTreeMap::new(),
        }
    }

    /// Adds a file holding `value` as pretty-printed JSON with a final newline.
    pub fn insert_json(&mut self, path: impl Into<String>, value: &impl serde::Serialize) {
        self.files.insert(path.into(), pretty_json(value));
    }
}

pub(crate) use crate::binary::pretty_json;

/// The former name of [`output`], kept for one release.
#[deprecated(note = "renamed to diagwire::bundle::output")]
pub mod write {
    use std::io;
    use std::path::{Path, PathBuf};

    use super::BundleContents;

    /// Renamed to [`super::output::write_dir`].
    #[deprecated(note = "renamed to diagwire::bundle::output::write_dir")]
    pub fn write_dir(bundle: &BundleContents, parent: &Path) -> io::Result<PathBuf> {
        super::output::write_dir(bundle, parent)
    }

    /// Renamed to [`super::output::write_tar_gz`].
    #[deprecated(note = "renamed to diagwire::bundle::output::write_tar_gz")]
    pub fn write_tar_gz(bundle: &BundleContents, out: impl io::Write) -> io::Result<()> {
        super::output::write_tar_gz(bundle, out)
    }
}
