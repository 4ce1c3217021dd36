//! Lossless protobuf encoding of the diagwire records.
//!
//! `cargo codegen` renders a `.proto` file and a codec layout per contract version into
//! `generated/proto/` (field numbers pinned in `proto/numbers.json`, frozen per release in
//! `proto/releases/`); this crate compiles the layouts in.

mod layouts {
    include!("../../generated/proto/layouts.rs");
}

pub use layouts::LAYOUTS;
