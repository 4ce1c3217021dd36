//! Durations and sizes as a command line writes them (`5s`, `1m 30s`, `4GiB`, `500MB`), with
//! the one error message every command gives for them (feature `units`; `humantime` and
//! `bytesize` read them).

use std::time::Duration;

/// Reads a duration: `500ms`, `5s`, `1m 30s`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim())
        .map_err(|e| format!("{text:?}: {e} (write a duration like 5s, 500ms or 1m 30s)"))
}

/// Reads a size in bytes: `4GiB`, `500MB`, `1048576`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    text.trim()
        .parse::<bytesize::ByteSize>()
        .map(|s| s.as_u64())
        .map_err(|e| format!("{text:?}: {e} (write a size like 4GiB, 500MB or 1048576)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_written() {
        let cases: &[(&str, Option<u64>)] = &[
            ("5s", Some(5_000)),
            ("500ms", Some(500)),
            ("2m", Some(120_000)),
            ("1h", Some(3_600_000)),
            ("0s", Some(0)),
            ("1m 30s", Some(90_000)),
            (" 3s ", Some(3_000)),
            ("5", None),
            ("s", None),
            ("5 parsecs", None),
            ("-1s", None),
            ("99999999999999999999s", None),
        ];
        for (text, want) in cases {
            let got = parse_duration(text).ok().map(|d| d.as_millis() as u64);
            assert_eq!(got, *want, "{text}");
        }
    }

    #[test]
    fn sizes_read_as_written() {
        let cases: &[(&str, Option<u64>)] = &[
            ("4GiB", Some(4 << 30)),
            ("500MB", Some(500_000_000)),
            ("16MiB", Some(16 << 20)),
            ("1048576", Some(1 << 20)),
            ("lots", None),
            ("-1GiB", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_size(text).ok(), *want, "{text}");
        }
    }

    #[test]
    fn a_refused_value_is_named_with_what_to_write() {
        let e = parse_duration("5").unwrap_err();
        assert!(
            e.starts_with("\"5\": ") && e.contains("write a duration like"),
            "{e}"
        );
        let e = parse_size("lots").unwrap_err();
        assert!(
            e.starts_with("\"lots\": ") && e.contains("write a size like"),
            "{e}"
        );
    }
}
