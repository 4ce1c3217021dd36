//! Generates the prost types of the contract's current `.proto` (`generated/proto/diagwire/v1.proto`)
//! with prost-build, compiled by protox, so no `protoc` is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../generated/proto");
    let file = proto_root.join("diagwire/v1.proto");
    println!("cargo:rerun-if-changed={}", file.display());
    let descriptors = protox::compile([&file], [&proto_root])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
