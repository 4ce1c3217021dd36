//! The contract's messages as prost-build generates them from `generated/proto/diagwire/v1.proto`
//! (with protox as the compiler): a client written with another toolchain than diagwire's own
//! codec, which the collector's interop test posts with.

/// `package diagwire.v1`, as prost-build writes it.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod v1 {
    include!(concat!(env!("OUT_DIR"), "/diagwire.v1.rs"));
}
