//! The shipped copies under `examples/bundles/` are the generator's output, and stay small.

use std::collections::BTreeMap;

use diagwire::bundle::BundleContents;
use diagwire_example::{OLDEST_RUN_ID, RUN_ID, n3_relay_flap, n3_relay_flap_oldest};

use crate::support::*;

#[test]
fn bundles_stay_small() {
    let total: usize = n3_relay_flap().files.values().map(Vec::len).sum();
    assert!(total < 2_500_000, "{total} bytes");
    let total: usize = n3_relay_flap_oldest().files.values().map(Vec::len).sum();
    assert!(total < 1_500_000, "{total} bytes");
}

#[test]
fn shipped_copy_matches_the_generator() {
    shipped_copy_matches(&n3_relay_flap(), RUN_ID);
}

#[test]
fn shipped_oldest_generation_copy_matches_the_generator() {
    shipped_copy_matches(&n3_relay_flap_oldest(), OLDEST_RUN_ID);
}

fn shipped_copy_matches(bundle: &BundleContents, run_id: &str) {
    assert_eq!(bundle.run_id, run_id);
    let dir = shipped_dir(run_id);
    let mut shipped = BTreeMap::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(&dir)
                    .expect("under the bundle")
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                shipped.insert(rel, std::fs::read(&path).expect("readable"));
            }
        }
    }
    let mut problems = Vec::new();
    for (path, bytes) in &bundle.files {
        match shipped.get(path) {
            None => problems.push(format!("missing {path}")),
            Some(b) if b != bytes => problems.push(format!("differs {path}")),
            Some(_) => {}
        }
    }
    for path in shipped.keys() {
        if !bundle.files.contains_key(path) {
            problems.push(format!("stale {path}"));
        }
    }
    problems.truncate(20);
    assert!(
        problems.is_empty(),
        "{} is out of date; regenerate it with `{REGENERATE}`\n{}",
        dir.display(),
        problems.join("\n")
    );
}
