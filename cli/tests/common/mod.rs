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
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} ran past {limit:?} after its reader went away");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
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
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} ran past {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    Capped {
        code: status.code(),
        printed: format!(
            "{}{}",
            text(&std::fs::read(out.path()).expect("read")),
            text(&std::fs::read(err.path()).expect("read"))
        ),
    }
}
