//! Gzip data inflated on a thread of its own, handed to the tar reader in bounded chunks, and the
//! tagging of errors so that a reader of the stream knows which layer failed (file, gzip, tar).
//!
//! Inflating is `flate2`'s `MultiGzDecoder` (its zlib-rs backend, about twice as fast as its default
//! miniz_oxide); the thread and its channel are the standard library's.

use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::sync::mpsc;

use super::ReadErrorKind;

/// An error message tagged with the layer it came from, carried inside an `io::Error`.
#[derive(Debug, Clone)]
pub(super) struct Tagged {
    kind: ReadErrorKind,
    message: String,
}

impl fmt::Display for Tagged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Tagged {}

/// Tags the errors of the reader it wraps (errors tagged further down keep their tag).
struct TagReader<R> {
    inner: R,
    kind: ReadErrorKind,
}

impl<R: Read> Read for TagReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| {
            if e.get_ref().is_some_and(|i| i.is::<Tagged>()) {
                e
            } else {
                io::Error::other(Tagged {
                    kind: self.kind,
                    message: e.to_string(),
                })
            }
        })
    }
}

/// A failure while walking an archive: its kind and message (located by the caller).
pub(super) type Fail = (ReadErrorKind, String);

pub(super) fn classify(e: io::Error) -> Fail {
    match e.get_ref().and_then(|i| i.downcast_ref::<Tagged>()) {
        Some(Tagged {
            kind: ReadErrorKind::Gzip,
            message,
        }) => (
            ReadErrorKind::Gzip,
            format!("corrupt or truncated gzip data ({message})"),
        ),
        Some(t) => (t.kind, t.message.clone()),
        None => (ReadErrorKind::Tar, e.to_string()),
    }
}

/// The uncompressed tar stream of an archive, read from its start. Gzip data is inflated on a
/// thread of its own (see [`Inflater`]); the members of a multi-member gzip file are read, in
/// order, as one stream. The archive is read at positions of its own ([`At`]) through another
/// handle of `archive`, so passes over it never move each other's place, nor the place of a
/// caller that hands the same open file on.
pub(super) fn stream_of(archive: &File, gzip: bool) -> io::Result<Box<dyn Read>> {
    let file = TagReader {
        inner: At {
            file: archive.try_clone()?,
            pos: 0,
        },
        kind: ReadErrorKind::Io,
    };
    let buffered = BufReader::with_capacity(64 * 1024, file);
    Ok(if gzip {
        let inflate = TagReader {
            inner: flate2::bufread::MultiGzDecoder::new(buffered),
            kind: ReadErrorKind::Gzip,
        };
        Box::new(Inflater::spawn(inflate)?)
    } else {
        Box::new(buffered)
    })
}

/// Reads from `file` at `pos` (`pread`), not at the file's shared offset.
pub(super) fn read_at(file: &File, buf: &mut [u8], pos: u64) -> io::Result<usize> {
    #[cfg(unix)]
    return std::os::unix::fs::FileExt::read_at(file, buf, pos);
    #[cfg(windows)]
    return std::os::windows::fs::FileExt::seek_read(file, buf, pos);
}

/// A file (owned or borrowed) read from a position of its own ([`read_at`]).
pub(super) struct At<F> {
    pub(super) file: F,
    pub(super) pos: u64,
}

impl<F: std::borrow::Borrow<File>> Read for At<F> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = read_at(self.file.borrow(), buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// The bytes the inflating thread hands over at a time.
const CHUNK_BYTES: usize = 256 * 1024;
/// The chunks that may wait between the inflating thread and the reader: with the one being filled
/// and the one being read, at most `CHUNK_SLOTS + 2` chunks exist at once.
const CHUNK_SLOTS: usize = 4;

/// A reader whose bytes come from another reader running on a thread of its own, so that
/// inflating overlaps with what the consumer does with the bytes. The thread sends chunks of
/// [`CHUNK_BYTES`] through a bounded channel (it blocks while [`CHUNK_SLOTS`] chunks wait), and the
/// reader hands emptied chunks back to be filled again, so memory stays bounded. An error ends the
/// stream: it is forwarded with its tag and message, and every later read returns it again.
/// Dropping the reader closes the channel, so the thread's next send fails and it ends; the drop
/// waits for that (at most one chunk's work).
struct Inflater {
    chunks: Option<mpsc::Receiver<io::Result<Vec<u8>>>>,
    spare: mpsc::SyncSender<Vec<u8>>,
    thread: Option<std::thread::JoinHandle<()>>,
    current: Vec<u8>,
    at: usize,
    /// The error that ended the stream, to return again.
    failed: Option<(io::ErrorKind, Option<Tagged>, String)>,
}

impl Inflater {
    fn spawn(mut inner: impl Read + Send + 'static) -> io::Result<Inflater> {
        let (chunk_tx, chunks) = mpsc::sync_channel::<io::Result<Vec<u8>>>(CHUNK_SLOTS);
        let (spare, spare_rx) = mpsc::sync_channel::<Vec<u8>>(CHUNK_SLOTS + 2);
        let work = move || {
            loop {
                let mut chunk = spare_rx.try_recv().unwrap_or_default();
                chunk.resize(CHUNK_BYTES, 0);
                let mut filled = 0;
                let mut failure = None;
                while filled < CHUNK_BYTES {
                    match inner.read(&mut chunk[filled..]) {
                        Ok(0) => break,
                        Ok(n) => filled += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            failure = Some(e);
                            break;
                        }
                    }
                }
                let end = failure.is_some() || filled < CHUNK_BYTES;
                chunk.truncate(filled);
                // A failed send means the reader is gone: stop.
                if filled > 0 && chunk_tx.send(Ok(chunk)).is_err() {
                    return;
                }
                if let Some(e) = failure {
                    let _ = chunk_tx.send(Err(e));
                }
                if end {
                    return;
                }
            }
        };
        let thread = std::thread::Builder::new()
            .name("diagwire-inflate".to_owned())
            .spawn(work)?;
        Ok(Inflater {
            chunks: Some(chunks),
            spare,
            thread: Some(thread),
            current: Vec::new(),
            at: 0,
            failed: None,
        })
    }

    fn again(&self) -> Option<io::Error> {
        let (kind, tagged, message) = self.failed.as_ref()?;
        Some(match tagged {
            Some(t) => io::Error::other(t.clone()),
            None => io::Error::new(*kind, message.clone()),
        })
    }

    /// Waits for the next chunk; `false` at the end of the stream.
    fn next_chunk(&mut self) -> io::Result<bool> {
        if let Some(e) = self.again() {
            return Err(e);
        }
        let Some(chunks) = &self.chunks else {
            return Ok(false);
        };
        match chunks.recv() {
            Ok(Ok(chunk)) => {
                let done = std::mem::replace(&mut self.current, chunk);
                // The thread may be gone or have enough spares: then the chunk is just freed.
                let _ = self.spare.try_send(done);
                self.at = 0;
                Ok(true)
            }
            Ok(Err(e)) => {
                let tagged = e
                    .get_ref()
                    .and_then(|i| i.downcast_ref::<Tagged>())
                    .cloned();
                self.failed = Some((e.kind(), tagged, e.to_string()));
                Err(e)
            }
            Err(mpsc::RecvError) => {
                self.chunks = None;
                let panicked = self.thread.take().is_some_and(|t| t.join().is_err());
                if panicked {
                    self.failed = Some((
                        io::ErrorKind::Other,
                        Some(Tagged {
                            kind: ReadErrorKind::Gzip,
                            message: "the inflating thread failed".to_owned(),
                        }),
                        String::new(),
                    ));
                    return Err(self.again().expect("OK because it was just set"));
                }
                Ok(false)
            }
        }
    }
}

impl Read for Inflater {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.current.len() {
            if buf.is_empty() || !self.next_chunk()? {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.current.len() - self.at);
        buf[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

impl Drop for Inflater {
    fn drop(&mut self) {
        // Closing the channel makes the thread's next send fail.
        self.chunks = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Yields `good` bytes, then fails with a tagged error.
    struct FailsAfter {
        good: usize,
    }

    impl Read for FailsAfter {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.good == 0 {
                return Err(io::Error::other(Tagged {
                    kind: ReadErrorKind::Gzip,
                    message: "bad block".to_owned(),
                }));
            }
            let n = buf.len().min(self.good);
            buf[..n].fill(7);
            self.good -= n;
            Ok(n)
        }
    }

    #[test]
    fn inflater_hands_over_every_byte_in_order() {
        let data: Vec<u8> = (0..3 * CHUNK_BYTES + 123)
            .map(|i| (i % 251) as u8)
            .collect();
        let mut got = Vec::new();
        Inflater::spawn(io::Cursor::new(data.clone()))
            .unwrap()
            .read_to_end(&mut got)
            .unwrap();
        assert_eq!(got, data);
    }

    #[test]
    fn inflater_forwards_an_error_after_the_bytes_before_it_and_repeats_it() {
        let mut r = Inflater::spawn(FailsAfter {
            good: CHUNK_BYTES + 10,
        })
        .unwrap();
        let mut got = Vec::new();
        let e = r.read_to_end(&mut got).unwrap_err();
        assert_eq!(got.len(), CHUNK_BYTES + 10);
        assert_eq!(
            classify(e),
            (
                ReadErrorKind::Gzip,
                "corrupt or truncated gzip data (bad block)".to_owned()
            )
        );
        let again = r.read(&mut [0; 16]).unwrap_err();
        assert_eq!(
            classify(again).1,
            "corrupt or truncated gzip data (bad block)"
        );
    }

    /// The source never ends, so only a failed send stops the thread: dropping the reader returns
    /// only once the thread has ended.
    #[test]
    fn dropping_the_inflater_stops_its_thread() {
        let mut r = Inflater::spawn(io::repeat(1)).unwrap();
        let mut buf = [0; 1000];
        r.read_exact(&mut buf).unwrap();
        let thread = r.thread.take().unwrap();
        drop(r);
        thread.join().unwrap();
    }
}
