//! The post-incident summary of a bundle (`diagwire summary`): every section swactor's
//! post-processor renders, readable on any generation and any release, plus subprocess buckets,
//! validation, absence and what the reader did not know; as Markdown, JSON, TSV or one
//! self-contained HTML page with plots; the two-bundle comparison (`diagwire compare`); and the
//! fleet report's output and renderings ([`fleet`], whose numbers `diagwire-fleet` computes).
//!
//! [`collect`] reads the bundle in one pass into a [`model::Summary`]; the renderers only read it.

pub mod absence;
mod buckets;
pub mod collect;
pub mod compare;
mod gaps;
pub mod html;
pub mod model;
pub mod output;
pub mod quantile;
pub mod render;
pub mod svg;
pub mod tsv;

pub use collect::{summarize, summarize_walk, summarize_with};
pub use model::Summary;
