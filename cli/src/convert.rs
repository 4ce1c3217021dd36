//! `diagwire convert`: a bundle's record files re-encoded by `diagwire::bundle::convert`, streamed
//! one file at a time into a run directory or a deterministic `.tar.gz` that appears under OUT only
//! once it is complete.

use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use diagwire::bundle::convert::convert_each;
use diagwire::bundle::output::TarGzWriter;
use diagwire::bundle::read::{BundleReader, Limits};
use diagwire::bundle::target::{PendingDir, PendingFile, check_output, files_under};
use diagwire::layout::Encoding;
use diagwire::problem::{Problem, printable};

use crate::fail;

/// What was written: where, how many files, how many bytes.
struct Written {
    to: PathBuf,
    files: usize,
    bytes: u64,
}

/// `diagwire convert BUNDLE --to ENCODING OUT`.
pub fn convert(bundle: &Path, to: Encoding, out: &Path) -> ExitCode {
    if let Err(e) = check_output(bundle, out) {
        return fail(&printable(&e.to_string()));
    }
    let mut reader = match BundleReader::open(bundle, Limits::default()) {
        Ok(r) => r,
        Err(e) => return fail(&printable(&e.to_string())),
    };
    let result = if out.to_string_lossy().ends_with(".tar.gz") {
        to_tar_gz(&mut reader, to, out)
    } else {
        to_dir(&mut reader, to, out)
    };
    let (written, problems) = match result {
        Ok(r) => r,
        Err(e) => return fail(&printable(&format!("{}: {e}", out.display()))),
    };
    for p in &problems {
        println!("{}", printable(&p.to_string()));
    }
    println!(
        "wrote {} file(s), {} bytes, to {}; {} problem(s)",
        written.files,
        written.bytes,
        printable(&written.to.display().to_string()),
        problems.len()
    );
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Converts into the run directory `out/<run_id>`, written under a temporary name first.
fn to_dir(
    reader: &mut BundleReader,
    to: Encoding,
    out: &Path,
) -> io::Result<(Written, Vec<Problem>)> {
    let pending = PendingDir::create(out, reader.run_id())?;
    let (files, bytes, problems) = convert_into(reader, to, &pending)?;
    let to = pending.commit()?;
    Ok((Written { to, files, bytes }, problems))
}

/// Converts into the `.tar.gz` file `out`: the files go to a scratch directory beside it, then
/// into the archive in path order (the order that makes it deterministic), each read as it is
/// archived.
fn to_tar_gz(
    reader: &mut BundleReader,
    to: Encoding,
    out: &Path,
) -> io::Result<(Written, Vec<Problem>)> {
    let mut archive = PendingFile::create(out)?;
    let scratch = PendingDir::scratch(out)?;
    let (files, bytes, problems) = convert_into(reader, to, &scratch)?;
    {
        let mut tar = TarGzWriter::new(reader.run_id(), BufWriter::new(archive.file()))?;
        for rel in files_under(scratch.path())? {
            let full = rel
                .split('/')
                .fold(scratch.path().to_owned(), |p, c| p.join(c));
            let file = fs::File::open(full)?;
            let len = file.metadata()?.len();
            tar.append_from(&rel, len, file)?;
        }
        tar.finish()?.flush()?;
    }
    drop(scratch);
    let to = archive.commit()?;
    Ok((Written { to, files, bytes }, problems))
}

/// Streams the conversion into `dir`: (files written, bytes written, problems).
fn convert_into(
    reader: &mut BundleReader,
    to: Encoding,
    dir: &PendingDir,
) -> io::Result<(usize, u64, Vec<Problem>)> {
    let (mut files, mut bytes) = (0, 0);
    let problems = convert_each(reader, to, |path, data| {
        dir.write(path, data)?;
        files += 1;
        bytes += data.len() as u64;
        Ok(())
    })?;
    Ok((files, bytes, problems))
}
