//! Absent values said in words: which absence it is — a field the writer's contract generation
//! predates, a value the writer could not ask for, a field that does not apply to the node's role
//! or host, or a value the writer could have written and did not — decided from the contract's
//! absence discriminators (the generated `*_provenance` accessors and their
//! [`diagwire::Unavailable`] reasons), the manifest's `contract_version` and the node's identity.
//! The renderers print these words wherever a value is absent, never a bare `?`.

use diagwire::v1::{HostProvider, Identity, Manifest};
use diagwire::{Provenance, Unavailable};

/// Why a value is absent.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Absent {
    /// The writer's contract generation predates the field, so it could not have written it.
    Generation {
        /// The contract version the writer wrote against (`1.0.0` for writers that declare none).
        writer: String,
        /// The contract version that added the field.
        since: &'static str,
        /// Where a reader may find the value instead, when the contract says so.
        hint: Option<String>,
    },
    /// The writer could not ask: its source field says `unavailable`, or its transport cannot
    /// report the value (an api gap). Never read as zero.
    Unavailable(String),
    /// The field does not apply to this node: its role or its host has no such value.
    NotApplicable(String),
    /// The writer could have written the value and did not; the words say what the contract makes
    /// of that.
    NotReported(String),
}

impl Absent {
    /// The kind's name in JSON: `writer_generation`, `unavailable`, `not_applicable` or
    /// `not_reported`.
    pub fn kind(&self) -> &'static str {
        match self {
            Absent::Generation { .. } => "writer_generation",
            Absent::Unavailable(_) => "unavailable",
            Absent::NotApplicable(_) => "not_applicable",
            Absent::NotReported(_) => "not_reported",
        }
    }

    /// The absence in words, for a person.
    pub fn words(&self) -> String {
        match self {
            Absent::Generation {
                writer,
                since,
                hint,
            } => {
                let mut out = format!(
                    "not reported by this writer generation (a contract {writer} writer; the field came in {since}"
                );
                if let Some(h) = hint {
                    out.push_str("; ");
                    out.push_str(h);
                }
                out.push(')');
                out
            }
            Absent::Unavailable(why) => format!("unavailable ({why})"),
            Absent::NotApplicable(why) => format!("not applicable ({why})"),
            Absent::NotReported(why) => format!("not reported ({why})"),
        }
    }

    /// The absence a provenance accessor gives, when it gives one: an api gap or an `unavailable`
    /// source is [`Absent::Unavailable`]; a value not observed is [`Absent::NotReported`] with
    /// `not_observed` as its words.
    pub fn of<T>(p: &Provenance<T>, not_observed: &str) -> Option<Absent> {
        match p {
            Provenance::Reported(_) | Provenance::Derived(_) => None,
            Provenance::Unavailable(u) => Some(Absent::from_unavailable(*u, not_observed)),
        }
    }

    /// The absence an [`Unavailable`] reason names.
    pub fn from_unavailable(u: Unavailable, not_observed: &str) -> Absent {
        match u {
            Unavailable::ApiGap(gap) => Absent::Unavailable(format!(
                "the linked transport cannot report it: api gap `{gap}`"
            )),
            Unavailable::SourceUnavailable => {
                Absent::Unavailable("the writer says it could not ask".into())
            }
            Unavailable::NotObserved => Absent::NotReported(not_observed.to_owned()),
        }
    }
}

/// A value, or why it is absent.
pub type Said = Result<String, Absent>;

/// The contract version a writer wrote against: the manifest's, or `1.0.0` when it declares none
/// (every writer older than contract 1.1.0).
pub fn writer_generation(contract_version: Option<&str>) -> String {
    contract_version.unwrap_or("1.0.0").to_owned()
}

/// Whether contract version `a` is older than `b` (both `major.minor.patch`; text that does not
/// read as one compares as `0.0.0`).
pub fn older(a: &str, b: &str) -> bool {
    fn parts(v: &str) -> (u64, u64, u64) {
        let mut it = v
            .split(['.', '-', '+'])
            .map(|p| p.parse::<u64>().unwrap_or(0));
        (
            it.next().unwrap_or(0),
            it.next().unwrap_or(0),
            it.next().unwrap_or(0),
        )
    }
    parts(a) < parts(b)
}

/// Why the run-level values the manifest carries are absent, by their JSON name
/// (`finalize_received`, `contract_version`, `writer`): all three without a manifest, the last two
/// for a writer older than contract 1.1.0, which added them.
pub fn run_fields(manifest: Option<&Manifest>) -> Vec<(&'static str, Absent)> {
    let Some(m) = manifest else {
        let none = || Absent::NotReported("the bundle has no manifest".into());
        return vec![
            ("finalize_received", none()),
            ("contract_version", none()),
            ("writer", none()),
        ];
    };
    let generation = writer_generation(m.contract_version.as_deref());
    let mut out = Vec::new();
    if m.contract_version.is_none() {
        out.push((
            "contract_version",
            Absent::Generation {
                writer: generation.clone(),
                since: "1.1.0",
                hint: Some("read the bundle as contract 1.0.0".into()),
            },
        ));
    }
    if m.writer.is_none() {
        out.push((
            "writer",
            Absent::Generation {
                writer: generation,
                since: "1.1.0",
                hint: Some("in practice the swactor collector".into()),
            },
        ));
    }
    out
}

/// The names of the host fields, in the order the summary prints them.
pub const HOST_FIELDS: [&str; 9] = [
    "rental",
    "ip",
    "dc",
    "country",
    "container",
    "hostname",
    "relay",
    "iroh",
    "git",
];

/// A node's host fields (in [`HOST_FIELDS`] order) from its boot record, each a value or why it
/// is absent. `generation` is the contract version the bundle's writer wrote against.
pub fn host_fields(b: &Identity, generation: &str) -> [Said; 9] {
    let local = matches!(
        b.host_provider_provenance().value(),
        Some(HostProvider::Local)
    );
    let provider_metadata = || -> Absent {
        if local {
            Absent::NotApplicable("a `local` host has no cloud provider metadata".into())
        } else {
            Absent::NotReported("not provided by the host's provider, or not forwarded".into())
        }
    };
    let rental = b
        .vastai_contract_id
        .clone()
        .or_else(|| {
            b.provider_contract_id_provenance()
                .value()
                .map(|v| (*v).clone())
        })
        .ok_or_else(|| {
            let p = b.provider_contract_id_provenance();
            if matches!(p, Provenance::Unavailable(Unavailable::SourceUnavailable)) {
                Absent::Unavailable("the writer could not ask the orchestrator for it".into())
            } else if local {
                Absent::NotApplicable("a `local` host has no provider rental".into())
            } else if older(generation, "1.1.0") {
                Absent::Generation {
                    writer: generation.to_owned(),
                    since: "1.1.0",
                    hint: b.container_id.as_ref().map(|_| {
                        "on vast.ai such writers left the rental id in the container id".to_owned()
                    }),
                }
            } else {
                Absent::NotReported("the orchestrator did not forward one".into())
            }
        });
    let said = |v: &Option<String>, absent: Absent| v.clone().ok_or(absent);
    [
        rental,
        said(&b.host_ip_public, provider_metadata()),
        said(&b.datacenter_id, provider_metadata()),
        said(&b.host_country, provider_metadata()),
        said(
            &b.container_id,
            Absent::NotReported("`$CONTAINER_ID` was not set; not in a container".into()),
        ),
        said(
            &b.hostname,
            Absent::NotReported("`$HOSTNAME` was not set".into()),
        ),
        said(
            &b.home_relay_url_at_boot,
            if b.role == "relay" {
                Absent::NotApplicable("a relay server has no home relay of its own".into())
            } else {
                Absent::NotReported("iroh had not picked a home relay at boot".into())
            },
        ),
        said(
            &b.iroh_version,
            Absent::NotReported(
                "the binary does not link iroh or did not record its version".into(),
            ),
        ),
        said(
            &b.git_sha,
            Absent::NotReported("not provided at build or launch time".into()),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_by_number_not_by_text() {
        assert!(older("1.0.0", "1.1.0"));
        assert!(older("1.9.0", "1.10.0"));
        assert!(!older("1.2.1", "1.1.0"));
        assert!(!older("1.1.0", "1.1.0"));
    }
}
