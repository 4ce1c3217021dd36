//! Writes the example bundle `n3-relay-flap` into `examples/bundles/n3-relay-flap/` of the repository.
//!
//! Run with `cargo run -p diagwire-example --example make_example_bundle`. The folder is the run
//! directory itself (`MANIFEST.json` at its top); stale files in it are deleted first.

use std::path::Path;

use diagwire::bundle::write::write_dir;
use diagwire_example::{RUN_ID, n3_relay_flap};

fn main() -> std::io::Result<()> {
    let bundles = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("OK because the diagwire-example package sits inside the workspace")
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
