//! What the CLI's integration tests share: where the repository is, how to run the binary (within
//! a time limit), the order a collector publishes a bundle's files in, and (feature `serve`) a
//! collector to post them to as nodes do.
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

/// Copies the directory tree `from` to `to`.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

/// Waits for `child` at most `limit`; past it, kills it and panics saying `what` overran.
fn wait_within(
    child: &mut std::process::Child,
    limit: std::time::Duration,
    what: &str,
) -> std::process::ExitStatus {
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} ran past {limit:?} and was killed");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// How `diagwire` ended when the reader of its standard output went away.
#[cfg(target_os = "linux")]
pub struct ClosedPipe {
    /// How the process ended.
    pub status: std::process::ExitStatus,
    /// What it wrote to standard error.
    pub stderr: String,
}

/// Runs `diagwire` with `args` in `dir`, its standard output a pipe of one page (4 KiB, so that
/// any output longer than that is still being written when the reader goes away), reads the
/// first 10 bytes, closes the pipe and waits (at most `limit`, then kills it and panics).
#[cfg(target_os = "linux")]
pub fn run_into_closed_pipe(
    dir: &Path,
    args: &[String],
    limit: std::time::Duration,
) -> Result<ClosedPipe, String> {
    use std::io::Read;
    use std::process::Stdio;
    // Close-on-exec, or the child would hold the read end open itself.
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).expect("pipe");
    rustix::pipe::fcntl_setpipe_size(&write, 4096).expect("a pipe of one page");
    let err = tempfile::NamedTempFile::new().expect("temp file");
    let mut child = {
        // Dropped once spawned, so that the child holds the only write end.
        let mut command = Command::new(env!("CARGO_BIN_EXE_diagwire"));
        command
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(write))
            .stderr(err.reopen().expect("reopen"));
        command.spawn().expect("run diagwire")
    };
    let mut reader = std::fs::File::from(read);
    let mut first = [0u8; 10];
    let read_first = reader.read_exact(&mut first);
    drop(reader);
    let status = wait_within(
        &mut child,
        limit,
        &format!("{args:?}, after its reader went away,"),
    );
    let stderr = text(&std::fs::read(err.path()).expect("read"));
    match read_first {
        Ok(()) => Ok(ClosedPipe { status, stderr }),
        Err(e) => Err(format!(
            "printed fewer than 10 bytes ({e}); ended with {status}: {stderr}"
        )),
    }
}

/// How a run under a memory cap ended.
pub struct Capped {
    /// The exit status; `None` when a signal ended it (an abort).
    pub code: Option<i32>,
    /// Standard output, then standard error.
    pub printed: String,
}

/// Runs `diagwire` with `args` in `dir` under a 2 GiB address-space cap (`ulimit -v 2097152`),
/// waiting at most `limit` (then kills it and panics).
pub fn run_with_memory_cap(dir: &Path, args: &[String], limit: std::time::Duration) -> Capped {
    use std::process::Stdio;
    let out = tempfile::NamedTempFile::new().expect("temp file");
    let err = tempfile::NamedTempFile::new().expect("temp file");
    let mut child = Command::new("bash")
        .arg("-c")
        .arg("ulimit -v 2097152; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_diagwire"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out.reopen().expect("reopen"))
        .stderr(err.reopen().expect("reopen"))
        .spawn()
        .expect("run diagwire");
    let status = wait_within(&mut child, limit, &format!("{args:?}"));
    Capped {
        code: status.code(),
        printed: format!(
            "{}{}",
            text(&std::fs::read(out.path()).expect("read")),
            text(&std::fs::read(err.path()).expect("read"))
        ),
    }
}

/// A child process killed (SIGKILL) and reaped when dropped, so a failing test leaves none behind.
pub struct Reaped(pub std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `diagwire` with `args`, killing it if it has not ended within `limit`: its output, or a
/// panic naming the command that overran.
pub fn diagwire_within(args: &[&std::ffi::OsStr], limit: std::time::Duration) -> Output {
    use std::io::Read;
    use std::process::Stdio;
    let child = Command::new(env!("CARGO_BIN_EXE_diagwire"))
        .args(args)
        .current_dir(repo())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run diagwire");
    let mut child = Reaped(child);
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = r.read_to_end(&mut b);
            b
        })
    };
    let out = drain(Box::new(child.0.stdout.take().unwrap()));
    let err = drain(Box::new(child.0.stderr.take().unwrap()));
    let shown: Vec<_> = args.iter().map(|a| a.to_string_lossy()).collect();
    let status = wait_within(
        &mut child.0,
        limit,
        &format!("`diagwire {}`", shown.join(" ")),
    );
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// Every file of the bundle at `dir`, in the order a collector would publish them: boot records,
/// then the numbered files round by round (a node's n-th events and snapshot files in round n),
/// then finalize records, then the manifest.
pub fn publishing_order(dir: &Path) -> Vec<PathBuf> {
    let mut rounds: std::collections::BTreeMap<(u8, String, String), PathBuf> =
        std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let digits: String = name.chars().filter(char::is_ascii_digit).collect();
            let phase = if name.starts_with("boot") {
                0
            } else if name.starts_with("finalize") {
                2
            } else if name == "MANIFEST.json" {
                3
            } else {
                1
            };
            rounds.insert((phase, format!("{digits:0>12}"), rel), p);
        }
    }
    rounds.into_values().collect()
}

/// A collector (`diagwire serve`) and the HTTP it is spoken to with, as nodes speak it.
#[cfg(feature = "serve")]
pub mod collector {
    use super::*;
    use serde_json::Value;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::process::Stdio;
    use std::time::Duration;

    /// The longest a post may wait for its answer.
    const ANSWER: Duration = Duration::from_secs(60);

    /// Starts `diagwire serve` on a free loopback port over `root`; returns it and its address.
    pub fn serve(root: &Path) -> (Reaped, String) {
        serve_on(root, "127.0.0.1:0")
    }

    /// Starts `diagwire serve --listen LISTEN` over `root`; returns it and the address it says
    /// it listens on.
    pub fn serve_on(root: &Path, listen: &str) -> (Reaped, String) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_diagwire"))
            .args([
                "serve",
                "--listen",
                listen,
                "--finalize-wait",
                "100ms",
                "--root",
            ])
            .arg(root)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("the collector did not say where it listens: {line:?}"))
            .to_owned();
        (Reaped(child), addr)
    }

    /// Posts `body` to `route` as node `node` of run `run`; returns the status line.
    pub fn post(addr: &str, route: &str, run: &str, node: &str, body: &[u8]) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(ANSWER)).unwrap();
        let head = format!(
            "POST {route} HTTP/1.1\r\nhost: t\r\nconnection: close\r\ncontent-type: application/json\r\nx-run-id: {run}\r\nx-node-id: {node}\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(body).unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        reply.lines().next().unwrap_or("").to_owned()
    }

    /// One post a node makes: its route, the node's id, the file whose bytes it posts.
    pub type Post = (&'static str, String, PathBuf);

    /// The posts of the bundle at `source` as its nodes make them, in publishing order (boot
    /// records first, finalize last).
    pub fn posts(source: &Path) -> Vec<Post> {
        let node_of = |label: &str| -> String {
            let boot: Value = serde_json::from_slice(
                &std::fs::read(source.join(label).join("boot.json")).unwrap(),
            )
            .unwrap();
            boot["node_id_hex"].as_str().unwrap().to_owned()
        };
        let mut out = Vec::new();
        for file in publishing_order(source) {
            let rel = file
                .strip_prefix(source)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let Some((label, rest)) = rel.split_once('/') else {
                continue;
            };
            let route = match rest.split('/').next().unwrap() {
                r if r.starts_with("boot") => "/diag/boot",
                r if r.starts_with("events") => "/diag/events",
                r if r.starts_with("snapshot") => "/diag/snapshot",
                r if r.starts_with("finalize") => "/diag/finalize",
                _ => continue,
            };
            out.push((route, node_of(label), file));
        }
        out
    }

    /// Makes one post of `posts(…)` to run `run`, which must be acknowledged.
    pub fn make(addr: &str, run: &str, (route, node, file): &Post) {
        let status = post(addr, route, run, node, &std::fs::read(file).unwrap());
        assert!(status.contains("200"), "{}: {status}", file.display());
    }

    /// The served bundle of `run` (the collector's canonical tarball, written at the finalize).
    pub fn served(root: &Path, run: &str) -> PathBuf {
        root.join("bundles").join(format!("{run}.tar.gz"))
    }
}
