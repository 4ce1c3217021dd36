//! Absence discriminators: how a value was obtained, or why there is none.

/// The answer to "where does this value come from?" for a discriminated field.
///
/// A reader that goes through a `*_provenance` accessor can never mistake "could not ask" for zero
/// or for a reported "unknown".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provenance<T> {
    /// The transport or OS reported the value natively.
    Reported(T),
    /// swactor inferred the value (for example a relay status inferred from the home-relay URL).
    Derived(T),
    /// There is no value, and this is why.
    Unavailable(Unavailable),
}

/// Why a discriminated value is absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unavailable {
    /// The linked transport version does not expose the value: the record's `api_gaps` names it.
    /// Read as "could not ask", never as zero.
    ApiGap(&'static str),
    /// The producer could ask but has not observed a value (the field's `x-absent` text says what
    /// that means for this field).
    NotObserved,
    /// The paired source field says `unavailable`: the writer could not ask, so a value written
    /// beside it (a field the schema requires) is a placeholder. Read as "could not ask", never as
    /// zero.
    SourceUnavailable,
}

/// The `ValueSource` values that name a native report: the transport (`iroh`), the host
/// orchestrator, a device driver, swactor's own measurement, or the relay server's counters.
pub const REPORTED_SOURCES: &[&str] = &["iroh", "orchestrator", "driver", "measured", "relay"];

/// The `ValueSource` value that says the writer could not ask.
pub const UNAVAILABLE_SOURCE: &str = "unavailable";

impl<T> Provenance<T> {
    /// The value, whether reported or derived.
    pub fn value(&self) -> Option<&T> {
        match self {
            Provenance::Reported(v) | Provenance::Derived(v) => Some(v),
            Provenance::Unavailable(_) => None,
        }
    }

    /// True for a natively reported value.
    pub fn is_reported(&self) -> bool {
        matches!(self, Provenance::Reported(_))
    }

    /// Decides the provenance of a value from its optional source field and its optional api gap.
    ///
    /// `source` is the paired source field's value (one of [`REPORTED_SOURCES`] = reported,
    /// `unavailable` = could not ask, whatever value is written beside it; `derived` and any
    /// unrecognised source count as derived, since they are not a native report); `gap` is the gap
    /// name and whether the record's `api_gaps` declares it.
    pub fn resolve(
        value: Option<T>,
        source: Option<&str>,
        gap: Option<(&'static str, bool)>,
    ) -> Self {
        let gap_declared = gap.is_some_and(|(_, declared)| declared);
        match (value, source) {
            (_, Some(UNAVAILABLE_SOURCE)) => match gap {
                Some((name, true)) => Provenance::Unavailable(Unavailable::ApiGap(name)),
                _ => Provenance::Unavailable(Unavailable::SourceUnavailable),
            },
            (Some(v), Some(s)) if REPORTED_SOURCES.contains(&s) => Provenance::Reported(v),
            (Some(v), Some(_)) => Provenance::Derived(v),
            (Some(v), None) if gap_declared => Provenance::Derived(v),
            (Some(v), None) => Provenance::Reported(v),
            (None, _) => match gap {
                Some((name, true)) => Provenance::Unavailable(Unavailable::ApiGap(name)),
                _ => Provenance::Unavailable(Unavailable::NotObserved),
            },
        }
    }
}
