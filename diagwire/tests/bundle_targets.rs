//! Where bundle writers write (`diagwire::bundle::target`): a write that fails leaves nothing
//! behind, a commit never replaces what exists, and an output that is a link, the input or inside
//! it is refused. One check per concern, each case named after the behaviour.
#![cfg(feature = "bundle")]

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use diagwire::bundle::target::{PendingDir, PendingFile, check_output, files_under};

/// The names in `dir`.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_failed_write_leaves_no_partial_output() {
    let dir = tempfile::tempdir().expect("temp dir");

    // A run directory that fails after some files: dropped, it leaves nothing.
    let result: io::Result<()> = (|| {
        let pending = PendingDir::create(dir.path(), "run")?;
        pending.write("MANIFEST.json", b"{}")?;
        pending.write("stage-0/boot.json", b"{}")?;
        Err(io::Error::other("the source broke"))
    })();
    assert!(result.is_err());

    // An archive that fails half written: dropped, it leaves nothing.
    let result: io::Result<()> = (|| {
        let mut pending = PendingFile::create(&dir.path().join("out.tar.gz"))?;
        pending.file().write_all(b"half an archive")?;
        Err(io::Error::other("the source broke"))
    })();
    assert!(result.is_err());

    // A scratch directory is never kept.
    let scratch = PendingDir::scratch(&dir.path().join("out.tar.gz")).expect("scratch");
    scratch.write("a/b.json", b"{}").expect("write");
    drop(scratch);

    assert_eq!(names(dir.path()), Vec::<String>::new());
}

#[test]
fn a_committed_write_appears_whole_under_its_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pending = PendingDir::create(dir.path(), "run").expect("create");
    pending.write("stage-0/boot.json", b"{}").expect("write");
    pending.write("MANIFEST.json", b"{}").expect("write");
    let run = pending.commit().expect("commit");
    assert_eq!(run, dir.path().join("run"));
    assert_eq!(
        files_under(&run).expect("list"),
        ["MANIFEST.json", "stage-0/boot.json"]
    );

    let mut file = PendingFile::create(&dir.path().join("out.tar.gz")).expect("create");
    file.file().write_all(b"bytes").expect("write");
    file.commit().expect("commit");
    assert_eq!(names(dir.path()), ["out.tar.gz", "run"]);
}

#[test]
fn a_write_never_replaces_what_exists() {
    let dir = tempfile::tempdir().expect("temp dir");
    fs::write(dir.path().join("out.tar.gz"), "someone else's").expect("write");
    let e = PendingFile::create(&dir.path().join("out.tar.gz")).expect_err("exists");
    assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);

    // Created between the start and the commit: still not replaced.
    let target = dir.path().join("late.tar.gz");
    let mut pending = PendingFile::create(&target).expect("create");
    pending.file().write_all(b"ours").expect("write");
    fs::write(&target, "theirs").expect("write");
    assert!(pending.commit().is_err());
    assert_eq!(fs::read(&target).expect("read"), b"theirs");

    fs::create_dir_all(dir.path().join("run")).expect("mkdir");
    fs::write(dir.path().join("run/keep"), "in use").expect("write");
    assert!(PendingDir::create(dir.path(), "run").is_err());
    let pending = PendingDir::create(dir.path(), "later").expect("create");
    fs::create_dir_all(dir.path().join("later")).expect("mkdir");
    fs::write(dir.path().join("later/keep"), "in use").expect("write");
    assert!(pending.commit().is_err());
    assert_eq!(names(&dir.path().join("later")), ["keep"]);
    assert_eq!(
        names(dir.path()),
        ["late.tar.gz", "later", "out.tar.gz", "run"]
    );

    // A run id or file path that would leave the run directory.
    assert!(PendingDir::create(dir.path(), "..").is_err());
    let pending = PendingDir::create(dir.path(), "fresh").expect("create");
    for bad in ["../x", "/abs", "a/../../x", "a//b"] {
        assert!(pending.write(bad, b"").is_err(), "{bad}");
    }
    assert!(pending.write("a.json", b"").is_ok());
    assert_eq!(
        pending.write("a.json", b"").expect_err("twice").kind(),
        io::ErrorKind::AlreadyExists
    );
}

#[cfg(unix)]
#[test]
fn an_output_that_is_a_link_the_input_or_inside_it_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    fs::create_dir(root.join("input")).expect("mkdir");
    fs::write(root.join("in.tar.gz"), "archive").expect("write");
    fs::write(root.join("victim"), "someone else's").expect("write");
    std::os::unix::fs::symlink(root.join("victim"), root.join("link")).expect("symlink");
    fs::hard_link(root.join("in.tar.gz"), root.join("hard.tar.gz")).expect("link");
    std::os::unix::fs::symlink(root.join("input"), root.join("input-link")).expect("symlink");

    let refused = [
        ("in.tar.gz", "link", "is a symbolic link"),
        ("in.tar.gz", "in.tar.gz", "is the input"),
        ("in.tar.gz", "hard.tar.gz", "is the input"),
        ("input", "input", "is the input"),
        ("input", "input/out", "is inside the input"),
        ("input", "input/a/b/out.tar.gz", "is inside the input"),
        ("input", "input-link/out", "is inside the input"),
        ("input-link", "input/out", "is inside the input"),
    ];
    for (input, out, says) in refused {
        let e = check_output(&root.join(input), &root.join(out)).expect_err(out);
        assert!(e.to_string().contains(says), "{input} → {out}: {e}");
    }
    for (input, out) in [
        ("in.tar.gz", "out.tar.gz"),
        ("input", "elsewhere/out"),
        ("input", "input2"),
    ] {
        check_output(&root.join(input), &root.join(out)).expect(out);
    }
}
