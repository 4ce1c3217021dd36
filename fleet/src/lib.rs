//! Fleet analysis: the contract-derived Parquet dataset and SQL over it.
//!
//! `export` reads bundles through the one record walk and writes their runs as Parquet tables
//! whose columns `cargo codegen` derives from the schemas (`columns.rs`, turned into Arrow schemas
//! by `arrow_schema.rs`); `dataset` is the layout and index on disk; `query` runs SQL over the
//! dataset with an embedded DataFusion, the tables registered with the generated schemas and the
//! shipped views of `views/` defined on them; `report` is the fleet report (`diagwire fleet`),
//! computed with SQL in the same session; `bounded` caps the functions whose result outgrows their
//! input. `docs/fleet.md` describes the dataset, the views and the
//! report.
//!
//! This crate is never a dependency of the library's default build: the `diagwire` binary reaches
//! it only through its feature `fleet`.

use std::fmt;
use std::path::Path;

use diagwire::Problem;

pub use datafusion;

pub mod arrow_schema;
pub mod bounded;
pub mod columns;
pub mod dataset;
pub mod evolve;
pub mod export;
pub mod footers;
pub mod format;
pub mod leaves;
pub mod listed;
pub mod query;
pub mod report;
pub mod rows;
pub mod safe;
pub mod sort;
pub mod stage;
pub mod table;
pub mod views;

/// Why a fleet command failed: a place and a sentence.
#[derive(Debug)]
pub struct Error {
    /// Where (a path, or a bundle's located problem).
    pub at: String,
    /// What went wrong.
    pub message: String,
}

impl Error {
    /// An error at a path.
    pub fn at(path: &Path, message: impl Into<String>) -> Error {
        Error {
            at: path.display().to_string(),
            message: message.into(),
        }
    }

    /// An error that is a bundle's located problem.
    pub fn problem(p: Problem) -> Error {
        Error {
            at: p.location.to_string(),
            message: p.message,
        }
    }

    /// An error of a query.
    pub fn query(message: impl Into<String>) -> Error {
        Error {
            at: "query".into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}",
            diagwire::problem::printable(&self.at),
            diagwire::problem::printable(&self.message)
        )
    }
}

impl std::error::Error for Error {}
