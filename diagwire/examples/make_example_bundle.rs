//! Writes the example bundle `n3-relay-flap` into `examples/bundles/n3-relay-flap/` of the repository.
//!
//! Run with `cargo run -p diagwire --all-features --example make_example_bundle`. The folder is the
//! run directory itself (`MANIFEST.json` at its top); stale files in it are deleted first.

use std::path::Path;

use diagwire::bundle::example::{RUN_ID, n3_relay_flap};
use diagwire::bundle::write::write_dir;

fn main() -> std::io::Result<()> {
    let bundles = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("OK because the diagwire package sits inside the workspace")
        .join("examples/bundles");
    let out = bundles.join(RUN_ID);
    if out.exists() {
        std::fs::remove_dir_all(&out)?;
    }
    let bundle = n3_relay_flap();
    let dir = write_dir(&bundle, &bundles)?;
    let bytes: usize = bundle.files.values().map(Vec::len).sum();
    println!(
        "wrote {} files ({bytes} bytes) to {}",
        bundle.files.len(),
        dir.display()
    );
    Ok(())
}
