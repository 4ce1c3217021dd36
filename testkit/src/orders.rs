//! One bundle archived with its members in different orders, for the tests and the benchmark that
//! check a bundle reads the same, and as fast, whatever order its archive holds it in.
//!
//! [`MemberOrder::Name`] is the order the collector and `write_tar_gz` write; [`MemberOrder::Directory`]
//! is what `tar czf` of the run directory gives: a directory before what it holds, each directory's
//! entries in the order the file system lists them, which follows no name (here a fixed scramble
//! stands in for it, so the archive is the same on every machine); [`MemberOrder::Reverse`] is the
//! name order backwards, the manifest last.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use diagwire::bundle::read::{BundleReader, Limits};
use flate2::Compression;

/// The order of an archive's members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberOrder {
    /// Sorted by path, each directory before its contents.
    Name,
    /// A directory before its contents, each directory's entries scrambled (`tar czf`).
    Directory,
    /// The name order backwards: contents before their directory, the manifest last.
    Reverse,
}

impl MemberOrder {
    /// Every order, name order first.
    pub const ALL: [MemberOrder; 3] = [
        MemberOrder::Name,
        MemberOrder::Directory,
        MemberOrder::Reverse,
    ];

    /// A short name for tables and messages.
    pub fn name(self) -> &'static str {
        match self {
            MemberOrder::Name => "name order",
            MemberOrder::Directory => "`tar czf` order",
            MemberOrder::Reverse => "reverse order",
        }
    }
}

/// One member: its path relative to the run directory (`""` for the run directory itself).
struct Member {
    rel: String,
    dir: bool,
}

/// Where the file system would list `name` among its siblings: an FNV-1a hash of it.
fn scramble(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// The members under `dir` (`rel` its path in the run directory), depth first, each directory's
/// entries scrambled.
fn walk(dir: &Path, rel: &str, out: &mut Vec<Member>) -> io::Result<()> {
    out.push(Member {
        rel: rel.to_owned(),
        dir: true,
    });
    let mut names: Vec<(String, bool)> = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().into_string().map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidData, "a file name that is not UTF-8")
        })?;
        names.push((name, entry.file_type()?.is_dir()));
    }
    names.sort_by_key(|(name, _)| scramble(name));
    for (name, is_dir) in names {
        let path = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if is_dir {
            walk(&dir.join(&name), &path, out)?;
        } else {
            out.push(Member {
                rel: path,
                dir: false,
            });
        }
    }
    Ok(())
}

/// Archives the run directory `run_dir` as a gzip'd tar of `<run_id>/…` at `out`, its members in
/// `order`. Files are streamed, never held whole.
pub fn write_tar_gz_in_order(
    run_dir: &Path,
    run_id: &str,
    order: MemberOrder,
    out: &Path,
) -> io::Result<()> {
    let mut members = Vec::new();
    walk(run_dir, "", &mut members)?;
    match order {
        MemberOrder::Directory => {}
        MemberOrder::Name => members.sort_by(|a, b| a.rel.cmp(&b.rel)),
        MemberOrder::Reverse => {
            members.sort_by(|a, b| a.rel.cmp(&b.rel));
            members.reverse();
        }
    }
    let gzip = flate2::GzBuilder::new()
        .mtime(0)
        .write(BufWriter::new(File::create(out)?), Compression::new(6));
    let mut tar = tar::Builder::new(gzip);
    for member in &members {
        let name = if member.rel.is_empty() {
            format!("{run_id}/")
        } else if member.dir {
            format!("{run_id}/{}/", member.rel)
        } else {
            format!("{run_id}/{}", member.rel)
        };
        let mut header = tar::Header::new_gnu();
        header.set_mtime(0);
        if member.dir {
            header.set_entry_type(tar::EntryType::Directory);
            header.set_mode(0o755);
            header.set_size(0);
            tar.append_data(&mut header, name, io::empty())?;
        } else {
            let file = File::open(run_dir.join(&member.rel))?;
            header.set_entry_type(tar::EntryType::Regular);
            header.set_mode(0o644);
            header.set_size(file.metadata()?.len());
            tar.append_data(&mut header, name, file)?;
        }
    }
    tar.into_inner()?.finish()?.flush()
}

/// Writes the files of the bundle at `bundle` (a directory or an archive) into `into/<run id>`,
/// one at a time, and returns that directory.
pub fn unpack(bundle: &Path, into: &Path) -> io::Result<PathBuf> {
    let mut reader = BundleReader::open(bundle, Limits::default()).map_err(io::Error::other)?;
    let run_dir = into.join(reader.run_id());
    for file in reader.files() {
        let file = file.map_err(io::Error::other)?;
        let path = run_dir.join(&file.path);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(path, &file.bytes)?;
    }
    Ok(run_dir)
}
