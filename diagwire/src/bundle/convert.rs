//! Re-encoding a bundle's record files: JSON to the binary form or back (feature `proto`).
//!
//! Every record file is decoded to its JSON value and written in the target encoding at the same
//! place of the layout with the target extension; the manifest stays `MANIFEST.json`, and files
//! outside the layout are copied as they are. The conversion is exact in both directions: a
//! converted bundle converted back holds the same JSON values (`docs/protobuf.md`). A file that does
//! not decode as its kind is copied unchanged and reported, so nothing is lost. The result is held
//! in memory: at most what the reader's [`Limits`](super::read::Limits) let through.

use super::BundleContents;
use super::read::BundleReader;
use crate::layout::{self, Encoding};
use crate::problem::{Location, Problem, ProblemKind};

/// The bundle `reader` opens with every record file in `to`, and the problems met (files that
/// could not be read, or were copied unchanged because they do not decode as their kind).
pub fn convert(reader: &mut BundleReader, to: Encoding) -> (BundleContents, Vec<Problem>) {
    let mut out = BundleContents::new(reader.run_id());
    let mut problems = Vec::new();
    for file in reader.files() {
        let file = match file {
            Ok(f) => f,
            Err(e) => {
                problems.push(e.into());
                continue;
            }
        };
        let (Some(kind), Some(node)) = (file.role.record_kind(), file.node.as_deref()) else {
            // The manifest and files outside the layout.
            out.files.insert(file.path, file.bytes);
            continue;
        };
        if file.encoding == to {
            out.files.insert(file.path, file.bytes);
            continue;
        }
        let value = crate::binary::json_text(file.encoding, kind, &file.bytes).and_then(|text| {
            serde_json::from_slice::<serde_json::Value>(&text).map_err(|e| format!("not JSON: {e}"))
        });
        let bytes = value.and_then(|v| crate::binary::encode_value(to, kind, &v));
        match bytes {
            Ok(bytes) => {
                out.files
                    .insert(layout::bundle_path_as(node, &file.role, to), bytes);
            }
            Err(message) => {
                problems.push(Problem::new(
                    ProblemKind::Encoding,
                    Location::file(&file.location),
                    format!("{message}; copied unchanged"),
                ));
                out.files.insert(file.path, file.bytes);
            }
        }
    }
    (out, problems)
}
