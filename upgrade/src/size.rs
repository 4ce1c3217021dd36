//! The size of a value as pretty JSON, counted without writing it: how the upgrade splits an
//! events file so that every file it writes stays within the reader's per-file limit.

use serde_json::Value;

/// The size of a value written as pretty JSON on its own (without a final newline).
pub(crate) fn pretty_size(value: &Value) -> Counter {
    let mut counter = Counter::default();
    serde_json::to_writer_pretty(&mut counter, value).expect("OK because a counter never fails");
    counter
}

/// Counts bytes and newlines written.
#[derive(Default)]
pub(crate) struct Counter {
    pub(crate) bytes: u64,
    pub(crate) newlines: u64,
}

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes += buf.len() as u64;
        self.newlines += buf.iter().filter(|&&b| b == b'\n').count() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
