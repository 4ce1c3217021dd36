//! The former name of [`crate::validate`], kept for one release: each item is a deprecated alias
//! of the item of the same name there, so code written against the old path compiles with a
//! deprecation warning that names the new one.
#![allow(deprecated)]

use crate::v1::RecordKind;
use crate::validate;

/// Renamed to [`validate::Options`].
#[deprecated(note = "renamed to diagwire::validate::Options")]
pub type Options = validate::Options;

/// Renamed to [`validate::Report`].
#[deprecated(note = "renamed to diagwire::validate::Report")]
pub type Report = validate::Report;

/// Renamed to [`validate::Omitted`].
#[deprecated(note = "renamed to diagwire::validate::Omitted")]
pub type Omitted = validate::Omitted;

/// Renamed to [`validate::Validator`].
#[deprecated(note = "renamed to diagwire::validate::Validator")]
pub type Checker<'v> = validate::Validator<'v>;

/// Renamed to [`validate::FileShape`].
#[deprecated(note = "renamed to diagwire::validate::FileShape")]
pub type FileShape = validate::FileShape;

/// Renamed to [`validate::IN_MEMORY`].
#[deprecated(note = "renamed to diagwire::validate::IN_MEMORY")]
pub const IN_MEMORY: u64 = validate::IN_MEMORY;

/// Renamed to [`validate::validate_text`].
#[deprecated(note = "renamed to diagwire::validate::validate_text")]
pub fn check_text(
    validators: &validate::Validators,
    file: &str,
    text: &str,
    kind: RecordKind,
) -> validate::Report {
    validate::validate_text(validators, file, text, kind)
}

/// Renamed to [`validate::validate_file`].
#[cfg(feature = "bundle")]
#[deprecated(note = "renamed to diagwire::validate::validate_file")]
pub fn check_file(
    validators: &validate::Validators,
    path: &std::path::Path,
    kind: Option<RecordKind>,
) -> validate::Report {
    validate::validate_file(validators, path, kind)
}

/// Renamed to [`validate::bundle`].
#[cfg(feature = "bundle")]
#[deprecated(note = "renamed to diagwire::validate::bundle")]
pub mod bundle {
    use std::path::Path;

    use crate::bundle::read::{BundleReader, Limits, ReadError};
    use crate::validate::{self, Validators};

    /// Renamed to [`validate::bundle::Progress`].
    #[deprecated(note = "renamed to diagwire::validate::bundle::Progress")]
    pub type Progress<'a> = validate::bundle::Progress<'a>;

    /// Renamed to [`validate::bundle::open`].
    #[deprecated(note = "renamed to diagwire::validate::bundle::open")]
    pub fn open(path: &Path, limits: Limits) -> Result<BundleReader, ReadError> {
        validate::bundle::open(path, limits)
    }

    /// Renamed to [`validate::bundle::validate_bundle`].
    #[deprecated(note = "renamed to diagwire::validate::bundle::validate_bundle")]
    pub fn check_bundle(
        validators: &Validators,
        reader: &mut BundleReader,
        progress: validate::bundle::Progress<'_>,
    ) -> validate::Report {
        validate::bundle::validate_bundle(validators, reader, progress)
    }
}
