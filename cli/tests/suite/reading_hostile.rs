//! Every command that reads a bundle, on every hostile bundle: one table. Each case is the shipped
//! example bundle with one thing broken (or an archive attack); each command runs on it as the
//! binary, under a virtual memory limit and a time limit, and must end with a documented exit
//! status (never a signal, never a panic), say where the problem is, and never print a raw
//! control character from the bundle.
//!
//! The commands share one reading path (`diagwire::bundle::records`), so what this table guards is
//! that every one of them is on it, and stays there.

use crate::common;

use common::{copy_tree, repo};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A reading command: its arguments around the bundle (`{b}`) and the exit status it must end
/// with on a bundle that has a problem (`None`: any documented status, 0, 1 or 2).
struct Reader {
    name: &'static str,
    args: &'static [&'static str],
    exit_on_problem: Option<i32>,
    /// Whether it must name the file that has the problem.
    locates: bool,
}

const READERS: &[Reader] = &[
    Reader {
        name: "validate",
        args: &["validate", "{b}"],
        exit_on_problem: Some(1),
        locates: true,
    },
    Reader {
        name: "summary",
        args: &["summary", "{b}"],
        exit_on_problem: Some(1),
        locates: true,
    },
    Reader {
        name: "summary json",
        args: &["summary", "{b}", "--format", "json"],
        exit_on_problem: Some(1),
        locates: true,
    },
    Reader {
        name: "summary html",
        args: &["summary", "{b}", "--format", "html"],
        exit_on_problem: Some(1),
        locates: true,
    },
    Reader {
        name: "reachability",
        args: &["summary", "{b}", "--format", "tsv"],
        exit_on_problem: Some(1),
        locates: true,
    },
    Reader {
        name: "timeline",
        args: &["summary", "{b}", "--format", "tsv", "--view", "timeline"],
        exit_on_problem: Some(1),
        locates: true,
    },
    Reader {
        name: "check",
        args: &["check", "{b}"],
        exit_on_problem: Some(1),
        locates: true,
    },
    Reader {
        name: "coverage",
        args: &["check", "{b}", "--coverage"],
        exit_on_problem: Some(1),
        locates: true,
    },
    Reader {
        name: "compare",
        args: &["compare", "{b}", "{b}"],
        exit_on_problem: None,
        locates: false,
    },
    Reader {
        name: "parity",
        args: &["parity", "{b}", "{b}"],
        exit_on_problem: None,
        locates: false,
    },
];

impl Reader {
    /// The command's arguments on `bundle`.
    fn on(&self, bundle: &Path) -> Vec<String> {
        self.args
            .iter()
            .map(|a| a.replace("{b}", bundle.to_str().expect("UTF-8 path")))
            .collect()
    }
}

/// One hostile bundle: how it is made from a copy of the example, and the file the problem is in
/// (empty when the bundle reads without a problem and only the output's escaping is checked).
struct Case {
    name: &'static str,
    make: fn(&Path) -> PathBuf,
    at: &'static str,
}

const EVENTS: &str = "stage-0/events/events-000001.json";

fn example_copy(scratch: &Path) -> PathBuf {
    let to = scratch.join("n3-relay-flap");
    copy_tree(&repo().join("examples/bundles/n3-relay-flap"), &to);
    to
}

fn with_events(scratch: &Path, bytes: &[u8]) -> PathBuf {
    let b = example_copy(scratch);
    std::fs::write(b.join(EVENTS), bytes).expect("write");
    b
}

fn tar_gz(dir: &Path, out: &Path) {
    let status = Command::new("tar")
        .arg("-czf")
        .arg(out)
        .arg("-C")
        .arg(dir.parent().expect("parent"))
        .arg(dir.file_name().expect("name"))
        .status()
        .expect("tar");
    assert!(status.success());
}

const CASES: &[Case] = &[
    Case {
        name: "an events file of 4 MiB of zeros in an array",
        make: |s| {
            let mut bytes = b"[0".to_vec();
            bytes.extend(std::iter::repeat_n(b",0".as_slice(), 2 << 20).flatten());
            bytes.push(b']');
            with_events(s, &bytes)
        },
        at: EVENTS,
    },
    Case {
        name: "a record nested 100000 levels deep",
        make: |s| {
            let mut bytes = vec![b'['; 100_000];
            bytes.extend(vec![b']'; 100_000]);
            with_events(s, &bytes)
        },
        at: EVENTS,
    },
    Case {
        name: "a record that is not UTF-8",
        make: |s| with_events(s, b"[{\"type\": \"\xff\xfe\"}]"),
        at: EVENTS,
    },
    Case {
        name: "an events file that is empty",
        make: |s| with_events(s, b""),
        at: EVENTS,
    },
    Case {
        name: "an events file cut inside a string",
        make: |s| with_events(s, b"[{\"type\": \"SwimTransition"),
        at: EVENTS,
    },
    Case {
        name: "terminal escapes in a manifest label and in an event",
        make: |s| {
            let b = example_copy(s);
            let m = std::fs::read_to_string(b.join("MANIFEST.json")).expect("manifest");
            let m = m.replacen("\"relay\"", "\"relay\\u001b[8m\\u001b]0;owned\\u0007\"", 1);
            std::fs::write(b.join("MANIFEST.json"), m).expect("write");
            let e = std::fs::read_to_string(b.join(EVENTS)).expect("events");
            let e = e.replacen("\"type\"", "\"\\u001b[2J\": 1, \"type\"", 1);
            std::fs::write(b.join(EVENTS), e).expect("write");
            b
        },
        // Not a reading problem (validation reports the label that names no directory): only
        // the escaping is checked.
        at: "",
    },
    Case {
        name: "an events file that is a symbolic link out of the bundle",
        make: |s| {
            let b = example_copy(s);
            std::fs::remove_file(b.join(EVENTS)).expect("rm");
            std::os::unix::fs::symlink("/etc/passwd", b.join(EVENTS)).expect("symlink");
            b
        },
        at: EVENTS,
    },
    Case {
        name: "an events file that is a FIFO",
        make: |s| {
            let b = example_copy(s);
            std::fs::remove_file(b.join(EVENTS)).expect("rm");
            let ok = Command::new("mkfifo")
                .arg(b.join(EVENTS))
                .status()
                .expect("mkfifo");
            assert!(ok.success());
            b
        },
        at: EVENTS,
    },
    Case {
        name: "a gzip'd archive cut in half",
        make: |s| {
            let b = example_copy(s);
            let out = s.join("cut.tar.gz");
            tar_gz(&b, &out);
            let bytes = std::fs::read(&out).expect("read");
            std::fs::write(&out, &bytes[..bytes.len() / 2]).expect("write");
            std::fs::remove_dir_all(&b).expect("rm");
            out
        },
        at: "cut.tar.gz",
    },
];

/// What a run printed and how it ended.
struct Ran {
    code: Option<i32>,
    out: Vec<u8>,
}

/// Runs the binary under a 2 GiB address-space limit, killed after 120 s.
fn run(args: &[String], cwd: &Path) -> Ran {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 2097152; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_diagwire"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out_thread = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stdout.read_to_end(&mut v);
        v
    });
    let err_thread = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stderr.read_to_end(&mut v);
        v
    });
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`diagwire {}` did not end within 120 s", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut out = out_thread.join().expect("stdout thread");
    out.extend(err_thread.join().expect("stderr thread"));
    Ran {
        code: status.code(),
        out,
    }
}

/// Runs `reader` on `case`; what is wrong, if anything.
fn check(case: &Case, reader: &Reader) -> Result<(), String> {
    let scratch = tempfile::tempdir().expect("temp dir");
    let bundle = (case.make)(scratch.path());
    let ran = run(&reader.on(&bundle), scratch.path());
    let text = String::from_utf8_lossy(&ran.out);
    let what = format!("{} on {}", reader.name, case.name);
    let Some(code) = ran.code else {
        return Err(format!("{what}: ended by a signal\n{text}"));
    };
    if ![0, 1, 2].contains(&code) {
        return Err(format!(
            "{what}: exit status {code} (101 is a panic)\n{text}"
        ));
    }
    if !case.at.is_empty() && reader.exit_on_problem.is_some_and(|e| e != code) {
        return Err(format!("{what}: exit status {code}\n{text}"));
    }
    if reader.locates && !text.contains(case.at) {
        return Err(format!(
            "{what}: the problem is not located at {}\n{text}",
            case.at
        ));
    }
    if ran.out.iter().any(|b| *b == 0x1b || *b == 0x07) {
        return Err(format!(
            "{what}: a raw control character reached the output"
        ));
    }
    Ok(())
}

#[test]
fn every_reading_command_survives_every_hostile_bundle_with_a_located_problem() {
    // Two commands at a time; every failure is collected, then all are said at once.
    let runs: Vec<(&Case, &Reader)> = CASES
        .iter()
        .flat_map(|c| READERS.iter().map(move |r| (c, r)))
        .collect();
    let failures: Vec<String> = std::thread::scope(|scope| {
        let halves: Vec<_> = runs
            .chunks(runs.len().div_ceil(2))
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .filter_map(|(c, r)| check(c, r).err())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        halves
            .into_iter()
            .flat_map(|h| h.join().expect("runner"))
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The bundle's own example reads clean through every command (the table's baseline: a hostile
/// case fails for its problem, not for the command).
#[test]
fn every_reading_command_reads_the_example_clean() {
    let scratch = tempfile::tempdir().expect("temp dir");
    let bundle = example_copy(scratch.path());
    for reader in READERS {
        let ran = run(&reader.on(&bundle), scratch.path());
        let text = String::from_utf8_lossy(&ran.out);
        let allowed: &[i32] = match reader.name {
            // The example is an incident: the behavioural rules find what went wrong in it.
            "check" | "coverage" => &[0, 1],
            _ => &[0],
        };
        assert!(
            ran.code.is_some_and(|c| allowed.contains(&c)),
            "{} on the example: {:?}\n{text}",
            reader.name,
            ran.code
        );
    }
    let _ = std::io::stdout().flush();
}
