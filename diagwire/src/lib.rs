//! The swactor diagnostics wire contract.
//!
//! diagwire turns the JSON records that swactor's nodes, simulator and collector write (boot records,
//! event records, snapshots, finalize records, bundle manifests, collector replies and vast.ai
//! monitoring records) into a versioned contract: JSON Schemas under `schemas/` are the source of
//! truth, and the types in [`v1`] are generated from them.
//!
//! The generated types are lossless: JSON that swactor writes today parses and serializes back to the
//! same JSON value; unknown fields, unknown event types and unknown values of open enums are kept and
//! written back, so records survive a trip through older tooling.
//! Discriminated values answer "reported, derived or unavailable, and why" through their
//! `*_provenance` accessors.
//!
//! Records are built with constructors that take the required fields, in schema order; optional
//! fields are public and set afterwards. Every struct, open enum and open union is
//! `#[non_exhaustive]`, so code written against one minor version of the contract compiles against
//! the next:
//!
//! ```
//! use diagwire::v1::{DialStarted, EventRecord};
//! use diagwire::NodeId;
//!
//! let mut dial = DialStarted::new(NodeId([7; 32]), 1, 5_000);
//! dial.extra.insert("future_key".into(), serde_json::json!(true));
//! let record = EventRecord::new(NodeId([1; 32]), 42, 1_779_733_878_000, dial);
//! let json = serde_json::to_string(&record).unwrap();
//! assert!(json.contains(r#""type":"DialStarted""#));
//! ```
//!
//! Reading keeps what this version does not know:
//!
//! ```
//! use diagwire::v1::{Event, EventRecord};
//!
//! let json = r#"{"node_id":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],
//!   "monotonic_seq":7,"wall_ms":1779733878000,"type":"FutureThing","detail":{"x":1}}"#;
//! let record: EventRecord = serde_json::from_str(json).unwrap();
//! assert!(matches!(record.event, Event::Other(ref o) if o.tag == "FutureThing"));
//! let back = serde_json::to_value(&record).unwrap();
//! assert_eq!(back, serde_json::from_str::<serde_json::Value>(json).unwrap());
//! ```
//!
//! The default build depends on serde and serde_json only. Features: `bundle` (reading, writing and
//! assembling bundles; `tar` and `flate2`), `validate` (schema validation and record checks with the
//! `jsonschema` crate), `releases` (a reader for every frozen release), `arbitrary` (`Arbitrary` for
//! every type, producing schema-valid records).

pub use diagwire_generated::{releases, v1};
pub use diagwire_runtime::{
    Contract, Extra, Json, NodeId, NodeIdHex, ParseNodeIdError, Provenance, REPORTED_SOURCES,
    RecordInfo, UNAVAILABLE_SOURCE, Unavailable, UnknownRecordKind, UnknownVariant,
};

/// Calls a macro for every ordered pair of contract readers (feature `releases`): see
/// `diagwire_generated::release_pairs`.
#[cfg(feature = "releases")]
pub use diagwire_generated::release_pairs;

/// `Arbitrary` helpers the generated types use (finite floats, unknown keys and variants).
#[cfg(feature = "arbitrary")]
pub use diagwire_runtime::arb;

/// The lossless protobuf encoding of every record kind (feature `proto`): JSON ↔ protobuf with the
/// descriptor of any release, and length-delimited record streams. See `docs/protobuf.md`.
#[cfg(feature = "proto")]
pub use diagwire_proto as proto;

/// The version of the contract the [`v1`] types were generated from.
pub const CONTRACT_VERSION: &str = v1::CONTRACT_VERSION;

pub mod binary;
pub mod canonical;
pub mod frame;
pub mod generation;
pub mod layout;
pub mod problem;
pub mod quarantine;
pub mod scan;
pub mod shape;
pub mod view;

#[cfg(feature = "units")]
pub mod units;

pub use problem::{Location, Problem, ProblemKind, TextPosition};

#[cfg(feature = "validate")]
pub mod validate;

#[cfg(feature = "validate")]
#[deprecated(note = "renamed to diagwire::validate")]
pub mod check;

#[cfg(feature = "bundle")]
pub mod bundle;
