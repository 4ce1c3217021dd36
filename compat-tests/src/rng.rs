//! The deterministic generator behind the generated streams and values: the runtime's
//! [`SplitMix64`], so every run draws the same inputs and a failure reproduces from its seed.

pub use diagwire_runtime::SplitMix64;
