//! Writes the example bundles into `examples/bundles/` of the repository: `n3-relay-flap` and the
//! same run as the oldest swactor generation records it, `n3-relay-flap-oldest`.
//!
//! Run with `cargo run -p diagwire-example --example make_example_bundle`. Each folder is the run
//! directory itself (`MANIFEST.json` at its top); stale files in it are deleted first.

use std::path::Path;

use diagwire::bundle::output::write_dir;
use diagwire_example::{OLDEST_RUN_ID, RUN_ID, n3_relay_flap, n3_relay_flap_oldest};

fn main() -> std::io::Result<()> {
    let bundles = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("OK because the diagwire-example package sits inside the workspace")
        .join("examples/bundles");
    for (run_id, make) in [
        (RUN_ID, n3_relay_flap as fn() -> _),
        (OLDEST_RUN_ID, n3_relay_flap_oldest),
    ] {
        let out = bundles.join(run_id);
        if out.exists() {
            std::fs::remove_dir_all(&out)?;
        }
        let bundle = make();
        let dir = write_dir(&bundle, &bundles)?;
        let bytes: usize = bundle.files.values().map(Vec::len).sum();
        println!(
            "wrote {} files ({bytes} bytes) to {}",
            bundle.files.len(),
            dir.display()
        );
    }
    Ok(())
}
