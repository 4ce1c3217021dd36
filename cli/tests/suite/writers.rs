//! The commands that write bundles (`convert`, `upgrade`) against hostile outputs and inputs: one
//! table, one case per rule, each run as the real binary with a timeout and held to the same
//! checks: its exit status, a phrase of its message, nothing changed under the work folder but
//! what the case may write, and no raw `ESC` in what it prints.

use crate::common;

use common::{copy_tree, repo};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use diagwire::bundle::output::{TarGzWriter, write_tar_gz};
use diagwire::bundle::read::{Limits, read_all};

/// The longest a case may run.
const TIMEOUT: Duration = Duration::from_secs(120);

/// The example bundle the cases convert (a small one).
const RUN: &str = "n3-relay-flap-oldest";

/// The work folder of a case: `in/<run>` (the example bundle), `in.tar.gz` (the same as an
/// archive), `victim.tar.gz` (a file someone else wrote), `link.tar.gz` (a link to it),
/// `elsewhere/` and `linkdir` (a link to it), `full/<run>/keep` (a run directory in use), `sim/`
/// (the simulator fixture), `sim-esc/` (the fixture with a file whose name holds `ESC`) and
/// `esc/<run>` (the bundle with a file whose name holds `ESC`).
struct Work {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn work() -> Work {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().to_path_buf();
    let example = repo().join("examples/bundles").join(RUN);
    copy_tree(&example, &root.join("in").join(RUN));
    let (contents, errors) = read_all(&example, Limits::default()).expect("the example opens");
    assert!(errors.is_empty(), "{errors:?}");
    write_tar_gz(
        &contents,
        fs::File::create(root.join("in.tar.gz")).expect("create"),
    )
    .expect("tar");
    fs::write(root.join("victim.tar.gz"), "someone else's").expect("write");
    fs::create_dir(root.join("elsewhere")).expect("mkdir");
    fs::create_dir_all(root.join("full").join(RUN)).expect("mkdir");
    fs::write(root.join("full").join(RUN).join("keep"), "in use").expect("write");
    copy_tree(
        &repo().join("compat-tests/fixtures/sim-prod-shape/n3-basic"),
        &root.join("sim"),
    );
    copy_tree(
        &repo().join("compat-tests/fixtures/sim-prod-shape/n3-basic"),
        &root.join("sim-esc"),
    );
    fs::write(root.join("sim-esc/\u{1b}[2Jnotes.json"), "{}").expect("write");
    copy_tree(&example, &root.join("esc").join(RUN));
    fs::write(
        root.join("esc")
            .join(RUN)
            .join("stage-0/\u{1b}[31mred.json"),
        "{}",
    )
    .expect("write");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(root.join("victim.tar.gz"), root.join("link.tar.gz"))
            .expect("symlink");
        std::os::unix::fs::symlink(root.join("elsewhere"), root.join("linkdir")).expect("symlink");
    }
    Work { _dir: dir, root }
}

/// Every path under `root` with what it is: a link's target, a file's bytes, or a directory.
fn tree(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in fs::read_dir(&dir).expect("read dir") {
            let entry = entry.expect("entry");
            let path = entry.path();
            let kind = entry.file_type().expect("type");
            let what = if kind.is_symlink() {
                format!("link to {}", fs::read_link(&path).expect("link").display())
            } else if kind.is_dir() {
                todo.push(path.clone());
                "dir".to_owned()
            } else {
                format!("{:?}", fs::read(&path).expect("read"))
            };
            out.insert(path.strip_prefix(root).expect("inside").to_owned(), what);
        }
    }
    out
}

/// One rule: the command line (relative to the work folder), the exit status, a phrase of what
/// it prints, and what it may write (paths relative to the work folder; everything under each).
struct Case {
    name: &'static str,
    args: &'static [&'static str],
    /// The exit status (`upgrade` of the fixture exits 1: it lists items it does not map).
    status: i32,
    says: &'static str,
    may_write: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        name: "convert_refuses_an_output_that_is_a_symlink",
        args: &["convert", "in.tar.gz", "--to", "pb", "link.tar.gz"],
        status: 2,
        says: "is a symbolic link",
        may_write: &[],
    },
    Case {
        name: "convert_refuses_an_output_folder_that_is_a_symlink",
        args: &["convert", "in.tar.gz", "--to", "pb", "linkdir"],
        status: 2,
        says: "is a symbolic link",
        may_write: &[],
    },
    Case {
        name: "convert_refuses_to_overwrite_its_input",
        args: &["convert", "in.tar.gz", "--to", "json", "in.tar.gz"],
        status: 2,
        says: "is the input",
        may_write: &[],
    },
    Case {
        name: "convert_refuses_its_input_under_another_spelling",
        args: &["convert", "in.tar.gz", "--to", "pb", "in/../in.tar.gz"],
        status: 2,
        says: "is the input",
        may_write: &[],
    },
    Case {
        name: "convert_refuses_an_output_inside_its_input",
        args: &[
            "convert",
            "in/n3-relay-flap-oldest",
            "--to",
            "pb",
            "in/n3-relay-flap-oldest/out",
        ],
        status: 2,
        says: "is inside the input",
        may_write: &[],
    },
    Case {
        name: "convert_refuses_to_overwrite_an_existing_archive",
        args: &["convert", "in.tar.gz", "--to", "pb", "victim.tar.gz"],
        status: 2,
        says: "exists; not overwritten",
        may_write: &[],
    },
    Case {
        name: "convert_refuses_a_run_directory_in_use",
        args: &["convert", "in.tar.gz", "--to", "pb", "full"],
        status: 2,
        says: "exists and is not empty",
        may_write: &[],
    },
    Case {
        name: "convert_writes_a_new_archive_and_nothing_else",
        args: &["convert", "in.tar.gz", "--to", "pb", "new.tar.gz"],
        status: 0,
        says: "wrote ",
        may_write: &["new.tar.gz"],
    },
    Case {
        name: "convert_writes_a_new_run_directory_and_nothing_else",
        args: &["convert", "in/n3-relay-flap-oldest", "--to", "pb", "out"],
        status: 0,
        says: "wrote ",
        may_write: &["out"],
    },
    Case {
        name: "convert_escapes_a_file_name_it_leaves_out",
        args: &["convert", "esc/n3-relay-flap-oldest", "--to", "pb", "out"],
        status: 1,
        says: "\\u{1b}[31mred.json: a file outside the bundle layout; left out",
        may_write: &["out"],
    },
    Case {
        name: "convert_escapes_the_output_it_names",
        args: &["convert", "in.tar.gz", "--to", "pb", "\u{1b}[31mout.tar.gz"],
        status: 0,
        says: "to \\u{1b}[31mout.tar.gz",
        may_write: &["\u{1b}[31mout.tar.gz"],
    },
    Case {
        name: "upgrade_escapes_a_file_name_it_does_not_map",
        args: &["upgrade", "sim-esc", "up"],
        status: 1,
        says: "not mapped: \\u{1b}[2Jnotes.json",
        may_write: &["up"],
    },
    Case {
        name: "upgrade_refuses_an_output_that_is_a_symlink",
        args: &["upgrade", "sim", "linkdir"],
        status: 2,
        says: "is a symbolic link",
        may_write: &[],
    },
    Case {
        name: "upgrade_refuses_to_write_into_its_input",
        args: &["upgrade", "sim", "sim"],
        status: 2,
        says: "is the input",
        may_write: &[],
    },
    Case {
        name: "upgrade_refuses_an_output_inside_its_input",
        args: &["upgrade", "sim", "sim/out"],
        status: 2,
        says: "is inside the input",
        may_write: &[],
    },
    Case {
        name: "upgrade_writes_a_new_run_directory_and_nothing_else",
        args: &["upgrade", "sim", "up"],
        status: 1,
        says: "wrote ",
        may_write: &["up"],
    },
    Case {
        name: "upgrade_writes_a_new_archive_and_nothing_else",
        args: &["upgrade", "sim", "up.tar.gz"],
        status: 1,
        says: "wrote 17 file(s) to up.tar.gz",
        may_write: &["up.tar.gz"],
    },
    Case {
        name: "upgrade_never_overwrites_an_archive",
        args: &["upgrade", "sim", "victim.tar.gz"],
        status: 2,
        says: "exists; not overwritten",
        may_write: &[],
    },
    Case {
        name: "upgrade_refuses_an_archive_that_is_a_symlink",
        args: &["upgrade", "sim", "link.tar.gz"],
        status: 2,
        says: "is a symbolic link",
        may_write: &[],
    },
];

/// Runs `args` in `dir` with [`TIMEOUT`]: (exit status, stdout and stderr).
fn run(dir: &Path, args: &[&str]) -> (i32, String) {
    let logs = tempfile::tempdir().expect("temp dir");
    let (out, err) = (logs.path().join("out"), logs.path().join("err"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_diagwire"))
        .args(args.iter().map(OsString::from))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out).expect("create"))
        .stderr(fs::File::create(&err).expect("create"))
        .spawn()
        .expect("run diagwire");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} ran past {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&fs::read(out).expect("read")),
        String::from_utf8_lossy(&fs::read(err).expect("read"))
    );
    (status.code().expect("an exit status"), printed)
}

fn check(case: &Case) -> Result<(), String> {
    let work = work();
    let before = tree(&work.root);
    let (status, printed) = run(&work.root, case.args);
    let mut failures = Vec::new();
    if status != case.status {
        failures.push(format!("exit status {status}, not {}", case.status));
    }
    if !printed.contains(case.says) {
        failures.push(format!("does not say {:?}", case.says));
    }
    if printed.contains('\u{1b}') {
        failures.push("prints a raw ESC".to_owned());
    }
    let after = tree(&work.root);
    let allowed = |p: &Path| case.may_write.iter().any(|w| p.starts_with(w));
    for (path, what) in &after {
        if before.get(path) != Some(what) && !allowed(path) {
            failures.push(format!("wrote {}", path.display()));
        }
    }
    for path in before.keys() {
        if !after.contains_key(path) {
            failures.push(format!("removed {}", path.display()));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}: {}\n--- printed:\n{printed}",
            case.name,
            failures.join("; ")
        ))
    }
}

#[cfg(unix)]
#[test]
fn the_writers_refuse_hostile_outputs_and_write_only_their_target() {
    let failures: Vec<String> = CASES.iter().filter_map(|c| check(c).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// An archive whose run directory holds, beside the bundle, files of zeros outside the layout
/// (each under the reader's per-file limit, together far larger than the archive): each is
/// reported and left out, one at a time, and the rest converts.
#[test]
fn convert_streams_an_archive_with_a_large_file_outside_the_layout() {
    let dir = tempfile::tempdir().expect("temp dir");
    let example = repo().join("examples/bundles").join(RUN);
    let (contents, _) = read_all(&example, Limits::default()).expect("opens");
    let mut files = contents.files.clone();
    let zeros = vec![0u8; 24 << 20];
    for name in ["zeros-1.bin", "zeros-2.bin", "zeros-3.bin"] {
        files.insert(name.to_owned(), Vec::new());
    }
    let archive = dir.path().join("big.tar.gz");
    let mut tar = TarGzWriter::new(RUN, fs::File::create(&archive).expect("create")).expect("tar");
    for (path, bytes) in &files {
        let bytes = if path.starts_with("zeros-") {
            &zeros
        } else {
            bytes
        };
        tar.append(path, bytes).expect("append");
    }
    tar.finish().expect("finish");
    assert!(fs::metadata(&archive).expect("meta").len() < 1 << 20);

    let (status, printed) = run(dir.path(), &["convert", "big.tar.gz", "--to", "pb", "out"]);
    assert_eq!(status, 1, "{printed}");
    for name in ["zeros-1.bin", "zeros-2.bin", "zeros-3.bin"] {
        assert!(
            printed.contains(&format!(
                "{name}: a file outside the bundle layout; left out"
            )),
            "{printed}"
        );
        assert!(!dir.path().join("out").join(RUN).join(name).exists());
    }
    let (converted, errors) =
        read_all(&dir.path().join("out").join(RUN), Limits::default()).expect("opens");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(converted.files.len(), contents.files.len());
    assert!(printed.contains("3 problem(s)"), "{printed}");
}

/// The archive `convert` writes is byte for byte what the library writes for the converted
/// bundle, and a run directory holds the same files.
#[test]
fn convert_writes_what_the_library_converts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let example = repo().join("examples/bundles").join(RUN);
    let mut reader = diagwire::bundle::read::BundleReader::open(&example, Limits::default())
        .expect("the example opens");
    let (want, problems) =
        diagwire::bundle::convert::convert(&mut reader, diagwire::layout::Encoding::Protobuf);
    assert!(problems.is_empty(), "{problems:?}");
    let mut want_tar = Vec::new();
    write_tar_gz(&want, &mut want_tar).expect("tar");

    let example = example.display().to_string();
    let (status, printed) = run(
        dir.path(),
        &["convert", &example, "--to", "pb", "out.tar.gz"],
    );
    assert_eq!(status, 0, "{printed}");
    assert_eq!(
        fs::read(dir.path().join("out.tar.gz")).expect("read"),
        want_tar
    );
    let (status, printed) = run(dir.path(), &["convert", &example, "--to", "pb", "out"]);
    assert_eq!(status, 0, "{printed}");
    let (got, errors) =
        read_all(&dir.path().join("out").join(RUN), Limits::default()).expect("the output opens");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(got, want);
    let leftovers: Vec<_> = fs::read_dir(dir.path())
        .expect("read dir")
        .map(|e| e.expect("entry").file_name())
        .filter(|n| n.to_string_lossy().contains(".partial-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
