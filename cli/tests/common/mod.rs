//! What the CLI's integration tests share: where the repository is and how to run the binary.
#![allow(dead_code)] // each test file uses its own part of this

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Runs `diagwire` with `args` from the workspace root.
pub fn diagwire(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_diagwire"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run diagwire")
}

/// Output bytes as text (invalid UTF-8 replaced).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
