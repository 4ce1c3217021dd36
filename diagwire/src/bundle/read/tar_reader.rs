//! A minimal tar reader over the uncompressed stream: headers with their checksum, GNU long names
//! and PAX extensions applied and bounded, entry data read or skipped, and entry names normalized
//! or refused as unsafe.
//!
//! Written here instead of using `tar::Archive` (only the crate's header type is used): `Archive`
//! buffers GNU long names and PAX headers whole however large they are, and gives up on a bad
//! header without saying which entry it belongs to or how far the stream got, which the caps and
//! the located errors need.

use std::io::{self, Read};

use super::inflate::{Fail, classify};
use super::{Limits, ReadErrorKind};

const BLOCK: u64 = 512;
/// The longest entry name accepted (Linux `PATH_MAX`).
const MAX_NAME_BYTES: usize = 4096;
/// The largest PAX extended header accepted.
const MAX_PAX_BYTES: u64 = 64 * 1024;
/// The bytes [`Walker::copy_data`] hands over at a time.
const COPY_BYTES: usize = 64 * 1024;

/// One logical archive entry: extension headers (GNU long names, PAX) already applied.
pub(super) struct RawEntry {
    pub(super) name: Vec<u8>,
    /// Why the name cannot be used, when an extension header was unusable.
    pub(super) name_problem: Option<String>,
    pub(super) link: Option<Vec<u8>>,
    pub(super) kind: tar::EntryType,
    pub(super) size: u64,
    pub(super) data_pos: u64,
    /// Why the header cannot be used (its size is not a number): nothing after it can be read.
    pub(super) problem: Option<Fail>,
}

/// The value of a tar header's size field: octal digits (between optional spaces, ended by a
/// space or NUL), or GNU base-256 (a first byte of `0x80`, then a big-endian number); `None` when
/// it is neither. A base-256 size beyond `u64` comes out as `u64::MAX`.
fn parse_size(field: &[u8]) -> Option<u64> {
    if field.first() == Some(&0x80) {
        return Some(field[1..].iter().fold(0u64, |n, &b| {
            n.checked_mul(256)
                .and_then(|n| n.checked_add(u64::from(b)))
                .unwrap_or(u64::MAX)
        }));
    }
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    let text = std::str::from_utf8(&field[..end]).ok()?.trim_matches(' ');
    if text.is_empty() || !text.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        return None;
    }
    u64::from_str_radix(text, 8).ok()
}

/// A minimal tar reader over an uncompressed stream that never buffers more than it was asked
/// for, bounds extension headers, and keeps count of the bytes read.
pub(super) struct Walker {
    r: Box<dyn Read>,
    /// Bytes of the stream read so far.
    pub(super) pos: u64,
    /// Bytes of the current entry (data and padding) not read yet.
    pub(super) skip: u64,
    max_total: u64,
    /// The buffer [`Walker::copy_data`] reads through.
    copy_buf: Vec<u8>,
}

impl Walker {
    pub(super) fn new(r: Box<dyn Read>, limits: Limits) -> Self {
        Walker {
            r,
            pos: 0,
            skip: 0,
            max_total: limits.max_total_bytes,
            copy_buf: Vec::new(),
        }
    }

    fn check_total(&self, n: u64) -> Result<(), Fail> {
        if self.pos.saturating_add(n) > self.max_total {
            Err((
                ReadErrorKind::TooLarge,
                format!(
                    "the archive expands to more than {} bytes (the total limit); reading stopped here",
                    self.max_total
                ),
            ))
        } else {
            Ok(())
        }
    }

    /// Fills `buf` as far as the stream goes; returns how much was read.
    fn fill(&mut self, buf: &mut [u8]) -> Result<usize, Fail> {
        self.check_total(buf.len() as u64)?;
        let mut done = 0;
        while done < buf.len() {
            match self.r.read(&mut buf[done..]) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(classify(e)),
            }
        }
        self.pos += done as u64;
        Ok(done)
    }

    pub(super) fn discard(&mut self, n: u64) -> Result<(), Fail> {
        if n == 0 {
            return Ok(());
        }
        self.check_total(n)?;
        let got = io::copy(&mut (&mut self.r).take(n), &mut io::sink()).map_err(classify)?;
        self.pos += got;
        if got < n {
            return Err(truncated());
        }
        Ok(())
    }

    fn read_vec(&mut self, n: u64) -> Result<Vec<u8>, Fail> {
        self.check_total(n)?;
        let len = usize::try_from(n).map_err(|_| truncated())?;
        let mut bytes = vec![0u8; len];
        if self.fill(&mut bytes)? < len {
            return Err(truncated());
        }
        Ok(bytes)
    }

    /// The next logical entry, `None` at the end-of-archive marker. Skips what is left of the
    /// previous entry.
    pub(super) fn next_entry(&mut self) -> Result<Option<RawEntry>, Fail> {
        let left = std::mem::take(&mut self.skip);
        self.discard(left)?;
        let mut long_name: Option<Vec<u8>> = None;
        let mut long_link: Option<Vec<u8>> = None;
        let mut pax: Option<Vec<u8>> = None;
        let mut name_problem = None;
        let mut pending = false;
        loop {
            let header_pos = self.pos;
            let mut header = tar::Header::new_old();
            let got = self.fill(header.as_mut_bytes())?;
            if got == 0 {
                return Err((
                    ReadErrorKind::Tar,
                    if pending {
                        "the archive ends after an extension header, without its entry (truncated)"
                            .to_owned()
                    } else {
                        "the archive ends without the end-of-archive marker (truncated)".to_owned()
                    },
                ));
            }
            if got < BLOCK as usize {
                return Err((
                    ReadErrorKind::Tar,
                    "the archive ends inside a header (truncated)".to_owned(),
                ));
            }
            let bytes = header.as_bytes();
            if bytes.iter().all(|&b| b == 0) {
                if pending {
                    return Err((
                        ReadErrorKind::Tar,
                        "an extension header is not followed by its entry".to_owned(),
                    ));
                }
                return Ok(None);
            }
            let sum: u32 = bytes[..148]
                .iter()
                .chain(&bytes[156..])
                .map(|&b| u32::from(b))
                .sum::<u32>()
                + 8 * u32::from(b' ');
            if header.cksum().ok() != Some(sum) {
                return Err((
                    ReadErrorKind::Tar,
                    format!("the header at byte {header_pos} is corrupt (checksum mismatch)"),
                ));
            }
            let size_field = parse_size(&header.as_old().size);
            let kind = header.entry_type();
            let padded = |size: u64| size.checked_add(BLOCK - 1).map(|s| s & !(BLOCK - 1));
            let extension = match kind {
                tar::EntryType::GNULongName => Some((&mut long_name, MAX_NAME_BYTES as u64 + 1)),
                tar::EntryType::GNULongLink => Some((&mut long_link, MAX_NAME_BYTES as u64 + 1)),
                tar::EntryType::XHeader => Some((&mut pax, MAX_PAX_BYTES)),
                _ => None,
            };
            let extension_size = || {
                let what = match kind {
                    tar::EntryType::XHeader => "PAX extended header",
                    tar::EntryType::XGlobalHeader => "PAX global header",
                    tar::EntryType::GNULongLink => "GNU long link name header",
                    _ => "GNU long name header",
                };
                let size = size_field.ok_or_else(|| {
                    (
                        ReadErrorKind::Tar,
                        format!(
                            "the size field of the {what} at byte {header_pos} is not a number; \
                             the header is corrupt"
                        ),
                    )
                })?;
                let total = padded(size).ok_or_else(|| {
                    (
                        ReadErrorKind::Tar,
                        format!(
                            "the {what} at byte {header_pos} declares {size} bytes, more than \
                             any archive holds; the header is corrupt"
                        ),
                    )
                })?;
                Ok::<_, Fail>((size, total))
            };
            if let Some((slot, max)) = extension {
                pending = true;
                let (size, total) = extension_size()?;
                if slot.is_some() {
                    name_problem =
                        Some("two extension headers of the same kind for one entry".to_owned());
                    self.discard(total)?;
                } else if size > max {
                    let what = match kind {
                        tar::EntryType::XHeader => "a PAX extended header",
                        tar::EntryType::GNULongLink => "a GNU long link name",
                        _ => "a GNU long name",
                    };
                    name_problem = Some(format!(
                        "{what} of {size} bytes, over the limit of {max} bytes"
                    ));
                    self.discard(total)?;
                } else {
                    let mut data = self.read_vec(size)?;
                    self.discard(total - size)?;
                    if kind != tar::EntryType::XHeader {
                        while data.last() == Some(&0) {
                            data.pop();
                        }
                    }
                    *slot = Some(data);
                }
                continue;
            }
            if kind == tar::EntryType::XGlobalHeader {
                let (_, total) = extension_size()?;
                self.discard(total)?;
                continue;
            }
            let mut problem = None;
            let mut size = size_field.unwrap_or_else(|| {
                problem = Some(
                    "the entry header's size field is not a number; the header is \
                                corrupt, so the rest of the archive cannot be read"
                        .to_owned(),
                );
                0
            });
            let mut name = long_name.unwrap_or_else(|| header.path_bytes().into_owned());
            let mut link = long_link.or_else(|| header.link_name_bytes().map(|l| l.into_owned()));
            if let Some(pax) = &pax {
                for ext in tar::PaxExtensions::new(pax) {
                    let Ok(ext) = ext else {
                        name_problem = Some("a malformed PAX extended header".to_owned());
                        break;
                    };
                    match ext.key_bytes() {
                        b"path" => name = ext.value_bytes().to_vec(),
                        b"linkpath" => link = Some(ext.value_bytes().to_vec()),
                        b"size" => match ext.value().ok().and_then(|v| v.parse::<u64>().ok()) {
                            Some(s) => size = s,
                            None => {
                                problem = problem.or_else(|| {
                                    Some(
                                        "the size in the entry's PAX extended header is not a \
                                         number; the header is corrupt, so the rest of the \
                                         archive cannot be read"
                                            .to_owned(),
                                    )
                                });
                                size = 0;
                            }
                        },
                        _ => {}
                    }
                }
            }
            if name.len() > MAX_NAME_BYTES {
                name_problem = Some(format!(
                    "the entry name is longer than {MAX_NAME_BYTES} bytes"
                ));
                name.truncate(MAX_NAME_BYTES);
            }
            if problem.is_none() {
                match padded(size) {
                    Some(total) => self.skip = total,
                    None => {
                        problem = Some(format!(
                            "the entry header declares {size} bytes of data, more than any \
                             archive holds; the header is corrupt, so the rest of the archive \
                             cannot be read"
                        ));
                    }
                }
            }
            if problem.is_some() {
                size = 0;
            }
            return Ok(Some(RawEntry {
                name,
                name_problem,
                link,
                kind,
                size,
                data_pos: self.pos,
                problem: problem.map(|message| (ReadErrorKind::Tar, message)),
            }));
        }
    }

    /// The data of the entry just returned by [`Walker::next_entry`].
    pub(super) fn read_data(&mut self, size: u64) -> Result<Vec<u8>, Fail> {
        let data = self.read_vec(size)?;
        self.skip -= size;
        Ok(data)
    }

    /// Hands the data of the entry just returned by [`Walker::next_entry`] to `sink` piece by
    /// piece, so that memory never holds it whole.
    pub(super) fn copy_data(&mut self, size: u64, sink: &mut dyn FnMut(&[u8])) -> Result<(), Fail> {
        self.check_total(size)?;
        let mut buf = std::mem::take(&mut self.copy_buf);
        buf.resize(COPY_BYTES, 0);
        let mut left = size;
        let mut result = Ok(());
        while left > 0 {
            let want = left.min(COPY_BYTES as u64) as usize;
            match self.fill(&mut buf[..want]) {
                Ok(got) => {
                    sink(&buf[..got]);
                    left -= got as u64;
                    self.skip -= got as u64;
                    if got < want {
                        result = Err(truncated());
                        break;
                    }
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.copy_buf = buf;
        result
    }

    /// Reads what follows the end-of-archive marker, so that the gzip trailer is checked.
    pub(super) fn drain(&mut self) -> Result<(), Fail> {
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            let room = self.max_total.saturating_sub(self.pos);
            let want = (buf.len() as u64).min(room.saturating_add(1)) as usize;
            if want == 0 {
                return Ok(());
            }
            match self.r.read(&mut buf[..want]) {
                Ok(0) => return Ok(()),
                Ok(n) => {
                    self.pos += n as u64;
                    self.check_total(0)?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(classify(e)),
            }
        }
    }
}

fn truncated() -> Fail {
    (
        ReadErrorKind::Tar,
        "the archive ends inside an entry (truncated)".to_owned(),
    )
}

/// Normalizes an archive entry name to a `/`-separated relative path without `.` or empty
/// components, or says why the name is unsafe.
pub(super) fn normalize_entry_name(raw: &[u8]) -> Result<String, &'static str> {
    let name = std::str::from_utf8(raw).map_err(|_| "the entry name is not valid UTF-8")?;
    if name.starts_with('/') {
        return Err("the entry name is an absolute path");
    }
    if name.contains('\\') {
        return Err("the entry name contains a backslash");
    }
    if name.contains('\0') {
        return Err("the entry name contains a NUL byte");
    }
    let mut parts = Vec::new();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("the entry name contains a `..` component"),
            part => parts.push(part),
        }
    }
    if let Some(first) = parts.first() {
        let b = first.as_bytes();
        if b.len() == 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
            return Err("the entry name starts with a drive letter");
        }
    }
    Ok(parts.join("/"))
}

/// Whether an archive entry makes a directory when extracted.
pub(super) fn is_directory(entry: &RawEntry) -> bool {
    match entry.kind {
        tar::EntryType::Directory => true,
        // An old-style directory entry.
        tar::EntryType::Regular | tar::EntryType::Continuous => {
            entry.name.ends_with(b"/") && entry.size == 0
        }
        _ => false,
    }
}
