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
//! The default build depends on serde and serde_json only. Features: `validate` (schema validation
//! with the `jsonschema` crate), `arbitrary` (`Arbitrary` for every type, producing schema-valid
//! records), `cli` (the `diagwire` command-line tool).

pub use diagwire_generated::{releases, v1};
pub use diagwire_runtime::{
    Extra, Json, NodeId, NodeIdHex, ParseNodeIdError, Provenance, RecordInfo, Unavailable,
    UnknownVariant,
};

/// `Arbitrary` helpers the generated types use (finite floats, unknown keys and variants).
#[cfg(feature = "arbitrary")]
pub use diagwire_runtime::arb;

/// The version of the contract the [`v1`] types were generated from.
pub const CONTRACT_VERSION: &str = v1::CONTRACT_VERSION;

#[cfg(feature = "validate")]
pub mod validate;

#[cfg(feature = "validate")]
pub mod check;

#[cfg(feature = "bundle")]
pub mod bundle;
