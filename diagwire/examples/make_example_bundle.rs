//! Writes the example bundle `n3-relay-flap` into `examples/bundles/n3-relay-flap/` of the repository.
//!
//! Run with `cargo run -p diagwire --all-features --example make_example_bundle`. The folder is the
//! run directory itself (`MANIFEST.json` at its top); stale files in it are deleted first.

#[cfg(feature = "bundle")]
fn main() -> std::io::Result<()> {
    use std::path::Path;

    let out = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/bundles")
        .join(diagwire::bundle::example::RUN_ID);
    let bundle = diagwire::bundle::example::n3_relay_flap();
    if out.exists() {
        std::fs::remove_dir_all(&out)?;
    }
    let mut bytes = 0;
    for (path, contents) in &bundle.files {
        let file = out.join(path);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&file, contents)?;
        bytes += contents.len();
    }
    println!(
        "wrote {} files ({bytes} bytes) to {}",
        bundle.files.len(),
        out.display()
    );
    Ok(())
}

#[cfg(not(feature = "bundle"))]
fn main() {
    eprintln!("make_example_bundle needs the `bundle` feature: run it with --all-features");
    std::process::exit(2);
}
