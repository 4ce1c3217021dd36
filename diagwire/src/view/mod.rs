//! A record's view: its JSON text read once as a [`Tape`] of borrowed tokens, and every struct
//! instance in it found with a contract's shape table ([`Shapes`]). Tools that handle records
//! generically (which keys a record holds that the contract does not name, which fields an
//! instance has, absent or `null`, the gap lists that apply to it) read this view beside the
//! typed record the reading path decoded, instead of building a `serde_json::Value` of the text
//! and walking that.
//!
//! The view is the one walk of a record's instances: the behavioural rules and coverage of
//! `diagwire-check`, the unknown keys a summary lists and those an upgrade reports all go through
//! it ([`unknown_keys`]).

mod tape;
mod walk;

pub use tape::{Buffer, Elements, Key, Tape};
pub use walk::{GAP_LIST, Instance, Only, Shapes, Slot, unknown_keys};
