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
}

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
    /// `source` is the paired source field's value (`iroh` = reported, `derived` = derived; an
    /// unrecognised source counts as derived, since it is not a native report); `gap` is the gap
    /// name and whether the record's `api_gaps` declares it.
    pub fn resolve(
        value: Option<T>,
        source: Option<&str>,
        gap: Option<(&'static str, bool)>,
    ) -> Self {
        let gap_declared = gap.is_some_and(|(_, declared)| declared);
        match (value, source) {
            (Some(v), Some("iroh")) => Provenance::Reported(v),
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
