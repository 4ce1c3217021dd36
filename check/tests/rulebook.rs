//! The rule file: it loads against the contract, refuses what the contract does not have, and
//! every rule and statistic is documented.

mod common;

use diagwire_check::parity::Config;
use diagwire_check::rulebook::{BUILTIN_RULES, Check, Rulebook};

#[track_caller]
fn refused(text: &str, why: &str) {
    let err = Rulebook::from_json(text).expect_err("the rule file should be refused");
    assert!(err.0.contains(why), "{err}");
}

#[test]
fn the_shipped_rule_file_loads_with_stable_dotted_ids() {
    let c = Rulebook::builtin();
    assert!(c.rules.len() >= 17);
    for r in &c.rules {
        assert!(
            r.id.split('.').count() == 2
                && r.id
                    .chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch == '.' || ch == '_'),
            "{}",
            r.id
        );
        assert!(r.description.len() > 40, "{} needs a description", r.id);
        assert!(!r.scope.is_empty() && !r.title.is_empty());
    }
    assert!(matches!(
        c.get("run.one_terminal_outcome").unwrap().check,
        Check::Count(_)
    ));
}

#[test]
fn a_rule_naming_an_event_type_the_contract_lacks_is_refused() {
    refused(
        &BUILTIN_RULES.replace(
            r#""event": "prompt_injected""#,
            r#""event": "prompt_injection""#,
        ),
        "`prompt_injection` is not an event type",
    );
}

#[test]
fn a_rule_matching_on_a_field_the_event_lacks_is_refused() {
    refused(
        &BUILTIN_RULES.replace(
            r#""match": ["run_id"] }],
        "completes": []"#,
            r#""match": ["stage_index"] }],
        "completes": []"#,
        ),
        "has no field `stage_index`",
    );
}

#[test]
fn duplicate_ids_unknown_checks_and_stray_params_are_refused() {
    refused(
        &BUILTIN_RULES.replace(r#""id": "seq.monotonic""#, r#""id": "bundle.readable""#),
        "appears twice",
    );
    refused(
        &BUILTIN_RULES.replace(r#""check": "monotonic""#, r#""check": "monotone""#),
        "unknown check `monotone`",
    );
    refused(
        &BUILTIN_RULES.replace(
            r#""check": "readable",
      "params": {}"#,
            r#""check": "readable",
      "params": { "strict": true }"#,
        ),
        "takes no params",
    );
    refused(
        &BUILTIN_RULES.replace(r#""level": "violation""#, r#""level": "fatal""#),
        "not a rule file",
    );
    refused(
        &BUILTIN_RULES.replace(r#""must_be": "unknown""#, r#""must_be": "unsure""#),
        "`unsure` is not a value of `RelaySessionStatus`",
    );
    refused(
        &BUILTIN_RULES.replace(
            r#""types": ["FaultReason", "FaultComponent"]"#,
            r#""types": ["FaultCause"]"#,
        ),
        "`FaultCause` is not a string enum",
    );
}

#[test]
fn every_gap_block_of_the_contract_has_a_typed_path() {
    assert!(diagwire_check::evaluate::typed_blocks_cover_contract());
    let keys: Vec<&str> = diagwire_check::blocks::gap_blocks()
        .iter()
        .map(|b| b.key)
        .collect();
    assert!(keys.contains(&"iroh"), "{keys:?}");
}

#[test]
fn the_behaviour_page_documents_every_rule_group_and_threshold() {
    let page = std::fs::read_to_string(common::repo().join("docs/behaviour.md"))
        .expect("docs/behaviour.md");
    for r in &Rulebook::builtin().rules {
        assert!(
            page.contains(&format!("`{}`", r.id)),
            "docs/behaviour.md lacks rule `{}`",
            r.id
        );
    }
    for g in &Config::builtin().groups {
        assert!(
            page.contains(&format!("`{}`", g.id)),
            "docs/behaviour.md lacks group `{}`",
            g.id
        );
    }
    for t in [
        "alpha",
        "min_n",
        "large_n",
        "closed_form_min_n",
        "permutations",
        "w1_over_sd",
        "tvd",
        "rate_ratio",
    ] {
        assert!(
            page.contains(&format!("`{t}`")),
            "docs/behaviour.md lacks threshold `{t}`"
        );
    }
}
