//! Re-encoding a bundle's record files: JSON to the binary form or back (feature `proto`).
//!
//! Every record file is decoded to its JSON value and written in the target encoding at the same
//! place of the layout with the target extension; the manifest stays `MANIFEST.json`. The
//! conversion is exact in both directions: a converted bundle converted back holds the same JSON
//! values (`docs/protobuf.md`). A file that does not decode as its kind is copied unchanged and
//! reported, so nothing is lost; so is a record file whose converted form would be over the
//! reader's per-file limit ([`Limits::max_file_bytes`], default caps), so that what is written
//! always reads back. Files outside the layout are reported and left out.
//!
//! [`convert_each`] streams: it reads the bundle one file at a time and hands each converted file
//! on as soon as it is made, so memory holds one file (within the reader's caps) whatever the
//! bundle holds. [`convert`] collects the files in memory.

use std::io;

use super::BundleContents;
use super::read::{BundleReader, Limits};
use crate::layout::{self, Encoding};
use crate::problem::{Location, Problem, ProblemKind};

/// The bundle `reader` opens with every record file in `to`, and the problems met (files that
/// could not be read, were copied unchanged because they do not decode as their kind, or were
/// left out). Holds the whole result in memory; [`convert_each`] does not.
pub fn convert(reader: &mut BundleReader, to: Encoding) -> (BundleContents, Vec<Problem>) {
    let mut out = BundleContents::new(reader.run_id());
    let problems = convert_each(reader, to, |path, bytes| {
        if out.files.contains_key(path) {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, path));
        }
        out.files.insert(path.to_owned(), bytes.to_vec());
        Ok(())
    });
    match problems {
        Ok(problems) => (out, problems),
        Err(e) => {
            let at = Location::file(reader.source().display().to_string());
            (
                out,
                vec![Problem::new(ProblemKind::Layout, at, e.to_string())],
            )
        }
    }
}

/// Converts the bundle `reader` opens one file at a time, handing each file of the result to
/// `put` (its path relative to the run directory, and its bytes) in the order the reader yields
/// them, and returns the problems met. A `put` failing with [`io::ErrorKind::AlreadyExists`]
/// (two files of the bundle convert to the same path) is reported and the later file left out;
/// any other failure of `put` stops the conversion and is returned, as is a result that would be
/// over the reader's total limit.
pub fn convert_each(
    reader: &mut BundleReader,
    to: Encoding,
    mut put: impl FnMut(&str, &[u8]) -> io::Result<()>,
) -> io::Result<Vec<Problem>> {
    let caps = Limits::default();
    let mut problems = Vec::new();
    let mut written: u64 = 0;
    for file in reader.files() {
        let file = match file {
            Ok(f) => f,
            Err(e) => {
                problems.push(e.into());
                continue;
            }
        };
        let kind = file.role.record_kind();
        let (path, bytes) = match (kind, file.node.as_deref()) {
            (None, _) => {
                problems.push(Problem::new(
                    ProblemKind::Layout,
                    Location::file(&file.location),
                    "a file outside the bundle layout; left out",
                ));
                continue;
            }
            // The manifest, and files already in the target encoding.
            (Some(_), None) => (file.path, file.bytes),
            (Some(_), Some(_)) if file.encoding == to => (file.path, file.bytes),
            (Some(kind), Some(node)) => {
                let bytes = crate::binary::json_text(file.encoding, kind, &file.bytes)
                    .and_then(|text| {
                        serde_json::from_slice::<serde_json::Value>(&text)
                            .map_err(|e| format!("not JSON: {e}"))
                    })
                    .and_then(|v| crate::binary::encode_value(to, kind, &v))
                    .and_then(|bytes| {
                        if bytes.len() as u64 > caps.max_file_bytes {
                            Err(format!(
                                "{} bytes once converted, over the per-file limit of {} bytes",
                                bytes.len(),
                                caps.max_file_bytes
                            ))
                        } else {
                            Ok(bytes)
                        }
                    });
                match bytes {
                    Ok(bytes) => (layout::bundle_path_as(node, &file.role, to), bytes),
                    Err(message) => {
                        problems.push(Problem::new(
                            ProblemKind::Encoding,
                            Location::file(&file.location),
                            format!("{message}; copied unchanged"),
                        ));
                        (file.path, file.bytes)
                    }
                }
            }
        };
        written = written.saturating_add(bytes.len() as u64);
        if written > caps.max_total_bytes {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the converted bundle is over the total limit of {} bytes at `{path}`",
                    caps.max_total_bytes
                ),
            ));
        }
        match put(&path, &bytes) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                problems.push(Problem::new(
                    ProblemKind::Layout,
                    Location::file(&file.location),
                    format!("another file of the bundle converts to `{path}` too; left out"),
                ));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(problems)
}
