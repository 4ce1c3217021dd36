//! Rendering comparisons and reviews: Markdown for a person (a pull-request comment) and JSON for a
//! machine, with the same content.

use std::fmt::Write;

use serde_json::Value;

use crate::Comparison;
use crate::catalog::{self, Bump};
use crate::confirm::Side;
use crate::md;
use crate::output::{DiffOutput, ReviewOutput};
use crate::proto::Status;
use crate::review::Review;

/// Markdown of one comparison: a summary line, then every finding with its effects and its
/// counterexample.
///
/// Not bounded: `diff` prints every finding (the pull-request comment is [`review_md`], which is).
pub fn comparison_md(c: &Comparison, out: &mut String) {
    findings_md(c, out, false);
}

/// Like [`comparison_md`]; with `only_breaking`, the findings that need a major bump or that no
/// rule classifies are listed and the rest only counted (the older releases of a review). The
/// findings of the protobuf form follow in a section of their own, or a line says that the
/// protobuf forms did not differ or why they were not compared.
pub fn findings_md(c: &Comparison, out: &mut String, only_breaking: bool) {
    findings_within(
        c,
        out,
        only_breaking,
        &mut md::Budget::unlimited("diagwire review --format json"),
    );
}

/// [`findings_md`] listing the findings that fit in `budget`.
fn findings_within(c: &Comparison, out: &mut String, only_breaking: bool, budget: &mut md::Budget) {
    let breaking = c.breaking().count();
    let _ = writeln!(
        out,
        "**{} → {}**: {} change(s), {} breaking, needs {}.\n",
        md::text(&c.old),
        md::text(&c.new),
        c.findings.len(),
        breaking,
        bump_needed(c)
    );
    let (protobuf, json): (Vec<&crate::Checked>, Vec<&crate::Checked>) = c
        .findings
        .iter()
        .partition(|f| f.finding.rule.is_protobuf());
    if c.findings.is_empty() {
        out.push_str("No differences.\n\n");
    } else if json.is_empty() {
        out.push_str("No differences in the JSON form.\n\n");
    } else {
        section_md(c, &json, out, only_breaking, budget);
    }
    match &c.protobuf {
        Status::Skipped(why) => {
            let _ = writeln!(out, "Protobuf: not compared — {}.\n", md::fragment(why));
        }
        Status::Compared { old, new } if protobuf.is_empty() => {
            let _ = writeln!(
                out,
                "Protobuf (numbers {} → {}): no differences in the binary form.\n",
                md::code(old),
                md::code(new)
            );
        }
        Status::Compared { old, new } => {
            let _ = writeln!(
                out,
                "#### Protobuf\n\nThe binary form, numbered by {} → {}: {} change(s), {} breaking. Effects are those on protobuf readers.\n",
                md::code(old),
                md::code(new),
                protobuf.len(),
                protobuf
                    .iter()
                    .filter(|f| f.finding.rule.bump == Bump::Major)
                    .count()
            );
            section_md(c, &protobuf, out, only_breaking, budget);
        }
    }
}

/// The table and the list of some findings of a comparison.
fn section_md(
    c: &Comparison,
    findings: &[&crate::Checked],
    out: &mut String,
    only_breaking: bool,
    budget: &mut md::Budget,
) {
    let shown: Vec<&crate::Checked> = findings
        .iter()
        .copied()
        .filter(|f| !only_breaking || f.finding.rule.bump == Bump::Major)
        .collect();
    if only_breaking {
        let _ = writeln!(
            out,
            "{} compatible change(s) not listed; {} listed below.\n",
            findings.len() - shown.len(),
            shown.len()
        );
        if shown.is_empty() {
            return;
        }
    }
    // Each finding's table row and entry, as many as fit.
    let mut rows = String::new();
    let mut entries = String::new();
    let mut listed = 0;
    for f in &shown {
        let (row, entry) = finding_md(c, f);
        if !budget.take(&format!("{row}{entry}")) {
            break;
        }
        rows.push_str(&row);
        entries.push_str(&entry);
        listed += 1;
    }
    if listed > 0 {
        out.push_str("| rule | bump | where | old reader, new records | new reader, old records |\n|---|---|---|---|---|\n");
        out.push_str(&rows);
        out.push('\n');
        out.push_str(&entries);
        out.push('\n');
    }
    if listed < shown.len() {
        out.push_str(&md::omitted(
            shown.len() - listed,
            shown.len(),
            "findings",
            budget,
        ));
    }
}

/// A finding's table row and its entry in the list below the table.
fn finding_md(c: &Comparison, f: &crate::Checked) -> (String, String) {
    let r = f.finding.rule;
    let at = md::code(&f.finding.at.to_string());
    let mut row = String::new();
    let _ = writeln!(
        row,
        "| `{}` | {} | {} | {} | {} |",
        r.id,
        r.bump,
        at,
        r.old_reader.as_str(),
        r.new_reader.as_str()
    );
    let mut out = String::new();
    let _ = writeln!(
        out,
        "- **`{}`** ({}) {}: {}. {}.",
        r.id,
        r.bump,
        at,
        md::fragment(&f.finding.detail),
        sentence(r.why)
    );
    let Some(x) = &f.counterexample else {
        return (row, out);
    };
    if x.record.is_null() && x.verdicts.is_empty() {
        // A finding whose record could not be built (a recursive definition): why.
        let _ = writeln!(out, "  - no counterexample: {}", md::fragment(&x.note));
        return (row, out);
    }
    let side = match x.written_by {
        Side::Old => &c.old,
        Side::New => &c.new,
    };
    let _ = writeln!(
        out,
        "  - counterexample ({}): a {} record written by {}: {}",
        if x.confirmed {
            "confirmed"
        } else {
            "not confirmed"
        },
        md::code(&x.kind),
        md::text(side),
        md::code(&compact(&x.record))
    );
    for v in &x.verdicts {
        let _ = writeln!(
            out,
            "    - {}: {} — {}",
            md::fragment(&v.reader),
            if v.accepts { "accepts" } else { "refuses" },
            md::fragment(&v.detail)
        );
    }
    let _ = writeln!(out, "    - {}", md::fragment(&x.note));
    (row, out)
}

/// "a **minor** bump", or "no bump" when nothing changed.
fn bump_needed(c: &Comparison) -> String {
    if c.is_empty() {
        "no bump".to_owned()
    } else {
        format!("a **{}** bump", c.required())
    }
}

/// A record on one line, cut to a length a comment can hold.
fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.len() <= 600 {
        return s;
    }
    let mut cut = 600;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &s[..cut])
}

/// JSON of one comparison (`diagwire diff --format json`; [`DiffOutput`] is its type and the source
/// of its JSON Schema). Keys are in sorted order, as a JSON value holds them.
pub fn comparison_json(c: &Comparison) -> Value {
    serde_json::to_value(DiffOutput::new(c)).expect("OK because the output types always serialize")
}

/// The pull-request comment of a review: the verdict, the counts of each comparison, why it fails,
/// then each comparison's findings.
///
/// Bounded to [`md::MAX_CHARS`] characters (see [`crate::md`]): past them, the reasons and
/// findings that do not fit are counted in a line instead of listed; the verdict and the counts
/// are always there.
pub fn review_md(r: &Review) -> String {
    let everything = "diagwire review --format json";
    let full = review_within(r, &mut md::Budget::unlimited(everything));
    if full.chars().count() <= md::MAX_CHARS {
        return full;
    }
    let skeleton = review_within(r, &mut md::Budget::new(0, everything));
    let room = md::MAX_CHARS.saturating_sub(skeleton.chars().count());
    let bounded = review_within(r, &mut md::Budget::new(room, everything));
    md::cut_lines(&bounded, md::MAX_CHARS).to_owned()
}

/// [`review_md`] listing the reasons and findings that fit in `budget`.
fn review_within(r: &Review, budget: &mut md::Budget) -> String {
    let failures = r.failures();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## Schema review {}\n",
        if failures.is_empty() {
            "✅ passes"
        } else {
            "❌ fails"
        }
    );
    out.push_str("| comparison | changes | breaking | unclassified | required bump | declared bump | version |\n|---|---|---|---|---|---|---|\n");
    for s in &r.steps {
        let c = &s.comparison;
        let _ = writeln!(
            out,
            "| {} → {} | {} | {} | {} | {} | {} | {} |",
            md::text(&c.old),
            md::text(&c.new),
            c.findings.len(),
            c.breaking().count(),
            c.unclassified().count(),
            if c.is_empty() {
                "none".to_owned()
            } else {
                c.required().to_string()
            },
            s.declared.map_or("none".into(), |d| format!(
                "{d} ({} → {})",
                c.old_version
                    .as_ref()
                    .map_or("?".into(), ToString::to_string),
                r.version
            )),
            if !s.binding {
                "shown".to_owned()
            } else if s.version_ok() {
                "ok".to_owned()
            } else {
                "**too small**".to_owned()
            },
        );
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "- `schemas/VERSION`: {}\n- CHANGELOG.md: {}\n- generated/: {}\n",
        r.version,
        if !r.schemas_changed {
            "no schema change"
        } else if r.changelog_ok {
            "updated"
        } else {
            "**not updated**"
        },
        if r.stale_generated.is_empty() {
            "up to date".to_owned()
        } else {
            format!(
                "**stale** ({} files; run `cargo codegen`)",
                r.stale_generated.len()
            )
        },
    );
    if !failures.is_empty() {
        out.push_str("### Why it fails\n\n");
        let mut listed = 0;
        for f in &failures {
            let line = format!("- {}\n", md::fragment(f));
            if !budget.take(&line) {
                break;
            }
            out.push_str(&line);
            listed += 1;
        }
        out.push('\n');
        if listed < failures.len() {
            out.push_str(&md::omitted(
                failures.len() - listed,
                failures.len(),
                "reasons",
                budget,
            ));
        }
    }
    // The pull request's own changes in full: against the base, or the newest release without one.
    let full = r
        .steps
        .iter()
        .position(|s| !s.binding)
        .unwrap_or(r.steps.len().saturating_sub(1));
    for (i, s) in r.steps.iter().enumerate() {
        let _ = writeln!(
            out,
            "### {} → {}\n",
            md::text(&s.comparison.old),
            md::text(&s.comparison.new)
        );
        findings_within(&s.comparison, &mut out, i != full, budget);
        let order: Vec<&str> = s.rollout.order.iter().map(|r| r.as_str()).collect();
        let _ = writeln!(
            out,
            "Rollout order: {} — {}.\n",
            if order.is_empty() {
                "any".to_owned()
            } else {
                order.join(" → ")
            },
            s.rollout.why
        );
    }
    out
}

/// The JSON of a review ([`ReviewOutput`] is its type and the source of its JSON Schema).
pub fn review_json(r: &Review) -> Value {
    serde_json::to_value(ReviewOutput::new(r))
        .expect("OK because the output types always serialize")
}

/// The catalog as a Markdown page (`docs/review-rules.md`): the rules of the JSON form, then those
/// of the protobuf form with where each side's number table is found.
pub fn catalog_md() -> String {
    let mut out = String::from(
        "# Schema review rules\n\nEvery change `diagwire diff` and `diagwire review` find is classified under one of these rules. The ids are stable. \"Old reader\" is a reader built before the change given records written after it; \"new reader\" the reverse — bundles are kept, so new readers meet old records as long as the bundles exist. A change no rule classifies is `UNCLASSIFIED` and fails the review. Each rule has a fixture pair under `review/tests/rules/<ID>/`.\n\nThis page is generated: `cargo diagwire review --catalog > docs/review-rules.md`.\n\n",
    );
    let table = |out: &mut String, protobuf: bool| {
        out.push_str("| id | change | bump | old reader, new records | new reader, old records | why |\n|---|---|---|---|---|---|\n");
        for r in catalog::ALL.iter().filter(|r| r.is_protobuf() == protobuf) {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {} | {} |",
                r.id,
                r.title,
                r.bump,
                r.old_reader.as_str(),
                r.new_reader.as_str(),
                r.why
            );
        }
    };
    table(&mut out, false);
    out.push_str(PROTOBUF_MD);
    table(&mut out, true);
    out.push_str(GATE_MD);
    out
}

/// The last part of the rules page: how the review treats the trees it is given.
const GATE_MD: &str = "
## The review as a gate

`diff`, `review` and `changelog` run on schema trees written by whoever opened a pull request, and the comment they print is trusted, so they read those trees the way bundles are read and write what comes from them through one escaping function:

* **Reading.** Schema folders, `VERSION`, number tables, `CHANGELOG.md` and `generated/` are read as regular files only: a FIFO, device or socket is refused from its metadata before anything opens it, and a symbolic link is never followed anywhere (`generated/` included) but reported with its path. A schema file holds at most 2 MiB, a folder's schema files 16 MiB together, a number table or changelog 16 MiB, `VERSION` 1 KiB; more is refused, located. Duplicate keys are found in linear time. The schemas at a git revision (`--base`) are read with the same caps, and a link or submodule there is refused.
* **Failing closed.** Every input that cannot be read or parsed (a schema file, a reference that does not resolve, a number table, a release, `VERSION`, `CHANGELOG.md`) fails the command with its file and JSON pointer and exit status 2; nothing is skipped silently.
* **Bounded.** A counterexample is built from at most 20,000 values, and a comparison builds at most 100 (each later breaking finding says it has none and why); a definition that holds itself in a required place has no finite record, and its finding says `recursive: … no counterexample is needed` instead. A refusal lists at most 100 profile problems and counts the rest.
* **Escaping.** Names, values, descriptions, record kinds and paths from a tree reach the Markdown as code spans fenced longer than any run of backticks inside, or as text with Markdown and HTML syntax escaped; in both, `|` cannot end a table cell and line breaks and control characters are written as `\\u{…}`. On a terminal, control characters are escaped as well, and in `--format json` every character a terminal would interpret (the C1 controls such as U+009B, DEL, the line separators, the bidirectional controls) is written as `\\uXXXX`.
* **Size.** The review's Markdown holds at most 60,000 characters, under GitHub's 65,536 for a comment, so it is never refused or cut by something else: the verdict, the counts and the headings are always there, the reasons and findings are listed in order while they fit (cut between two findings), and a line says how many are not shown and that `diagwire review --format json` prints them all (`diff`, printed on a terminal, lists every finding).
* **Arguments.** `review --base` takes a revision, never an option: a leading `-`, a `:`, spaces or control characters are refused, and git gets it after `--end-of-options`. `changelog --date` takes a real date written `YYYY-MM-DD`. `diff` says what is wrong with a path (missing, a file, a link).
";

/// The protobuf part of the rules page, before its table.
const PROTOBUF_MD: &str = "
## Protobuf rules

Every record also has a protobuf form ([`protobuf.md`](protobuf.md)), whose readers care about what the JSON does not show: the number of each struct field, union variant and enum value, the wire type and encoding of each value, and which members sit in a union's `oneof`. `diff` and `review` render each side's protobuf descriptor from its schemas and its number table, as `cargo codegen` renders `generated/proto/`, and compare the two descriptors; the rules below classify what differs, in a section of their own in the report (`#### Protobuf`). Their effects are those on protobuf readers (`diagwire-proto`, and readers generated from the `.proto`), and each breaking finding's counterexample is a record one side writes, encoded with its descriptor and decoded with the other side's by the codec. The JSON rules still classify the same change for JSON readers, so a type change is usually a finding of both kinds.

A plain addition under a fresh number is no protobuf finding, to an open union or a closed one alike: a protobuf reader keeps a number it does not know as an unknown field, and the JSON rules say what the addition does. A change between an unsigned and a signed (zigzag) integer keeps the varint wire type, so no reader notices anything: it is `PROTO_ENCODING_CHANGED`, a silent misread, not `PROTO_WIRE_TYPE_CHANGED`. A wider integer of the same encoding (`uint32` to `uint64`, or `u8` to `u16`, which the `.proto` both call `uint32` but the codec range-checks) is `PROTO_INTEGER_WIDENED`: an old reader reads every value of the old width as before and refuses a wider one.

### Where the numbers come from

| tree | its number table |
|---|---|
| a folder holding `proto-numbers.json` (a rule fixture, a pull request's schemas copied elsewhere) | that file |
| a release, `schemas/releases/<v>/` | its `proto-numbers.json`, frozen when the release was cut |
| a repository's `schemas/` (`current`, the working tree of `review`) | `schemas/proto-numbers.json` |
| the schemas at a git revision (`review --base REV`) | `schemas/proto-numbers.json` at that revision |

`proto-numbers.json` has the form of `schemas/proto-numbers.json` (`messages` and `enums`, each table with its `numbers` and `reserved` names) and must number every field, variant and value of the folder's schemas. A number the older side's table reserves and the newer side gives to another name is `PROTO_NUMBER_REUSED` as well. When a side has no table at all, the protobuf rules are skipped for that comparison and the report says why (`Protobuf: not compared — …`); the JSON rules run either way. A table that is there but cannot be read (a link, a FIFO, past the size cap, not UTF-8), is not a number table, or does not number every member fails the comparison with its reason and exit status 2: a malformed table must not turn a break into \"not compared\".

";

/// `text` with its first letter in upper case, to stand as a sentence of its own.
fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
