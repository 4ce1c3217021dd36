//! The profile lint: one invalid schema per rule (`tests/lint/`), each rejected with its file and
//! JSON pointer.
//!
//! Every lint schema is valid except for the one rule its name says, so loading it as the schemas
//! being edited ([`load_current`]) reports exactly one problem; each case below names the rule's
//! behaviour, its schema, and the whole message.

use std::path::Path;

use diagwire_schema::{
    SchemaFile, SchemaProblem, load, load_current, load_current_dir, read_kebab_dir,
};

const LINT_DIR: &str = "schema/tests/lint";

fn lint_files() -> Vec<SchemaFile> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lint");
    read_kebab_dir(&dir, LINT_DIR).unwrap_or_else(|e| panic!("{e:#}"))
}

fn lint_file(name: &str) -> SchemaFile {
    let display = format!("{LINT_DIR}/{name}.schema.json");
    lint_files()
        .into_iter()
        .find(|(path, _, _)| *path == display)
        .unwrap_or_else(|| panic!("{display} does not exist"))
}

/// Loads the lint schemas `names` together and checks that the only problem is `message` at
/// `pointer` of the last one.
#[track_caller]
fn check(names: &[&str], pointer: &str, message: &str) {
    let files: Vec<SchemaFile> = names.iter().map(|n| lint_file(n)).collect();
    let last = names.last().expect("OK because every case names a schema");
    let got = match load_current(&files) {
        Ok(_) => panic!("the lint accepted {names:?}"),
        Err(e) => format!("{e:#}"),
    };
    let want = format!(
        "the schemas are outside the profile (schemas/README.md):\n  {LINT_DIR}/{last}.schema.json#{pointer}: {message}"
    );
    assert_eq!(got, want);
}

#[test]
fn a_problem_is_typed_and_printed_as_file_pointer_and_message() {
    let err = load_current(&[lint_file("missing-description")]).expect_err("the lint refuses it");
    let want = SchemaProblem {
        file: format!("{LINT_DIR}/missing-description.schema.json"),
        pointer: "/$defs/Sample/properties/label".into(),
        message: "missing `description`".into(),
    };
    assert_eq!(
        err.problems[0].to_string(),
        format!(
            "{LINT_DIR}/missing-description.schema.json#/$defs/Sample/properties/label: missing `description`"
        )
    );
    assert_eq!(err.problems, [want]);
}

/// One case: the test name says the behaviour, then the schemas loaded together (the last one is
/// the offending file), the JSON pointer and the message.
macro_rules! case {
    ($test:ident, [$($name:literal),+], $pointer:literal, $message:literal) => {
        #[test]
        fn $test() {
            check(&[$($name),+], $pointer, $message);
        }
    };
}

/// The lint schemas whose one problem is a bound the typed parse does not enforce: a rule of the
/// schemas being edited only, so a frozen release written before it still loads.
const UNENFORCED_BOUNDS: &[&str] = &[
    "max-items-on-array",
    "min-items-on-array",
    "max-items-on-nested-array",
    "max-items-on-array-alias",
    "max-items-on-tuple",
    "pattern-on-hex-id",
    "node-id-without-32-items",
];

#[test]
fn a_frozen_tree_with_a_bound_the_types_do_not_enforce_still_loads() {
    for name in UNENFORCED_BOUNDS {
        if let Err(e) = load(&[lint_file(name)]) {
            panic!("{name}: {e:#}");
        }
    }
}

/// The lint schemas whose one problem is an absence discriminator a reader cannot answer "could
/// not ask" through: also a rule of the schemas being edited only (1.1.0 was frozen before it).
const DISCRIMINATORS: &[&str] = &[
    "gap-not-declared",
    "source-not-value-source-type",
    "source-not-linked",
    "provenance-value-always-present",
];

#[test]
fn a_frozen_tree_with_a_discriminator_that_cannot_say_could_not_ask_still_loads() {
    for name in DISCRIMINATORS {
        if let Err(e) = load(&[lint_file(name)]) {
            panic!("{name}: {e:#}");
        }
    }
}

#[test]
fn the_frozen_1_1_0_schemas_break_the_discriminator_rules_the_current_ones_keep() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas/releases/1.1.0");
    let err = match load_current_dir(&dir, "schemas/releases/1.1.0") {
        Ok(_) => panic!("1.1.0 passes the current rules, so they would not have caught its gaps"),
        Err(e) => format!("{e:#}"),
    };
    for want in [
        "event.schema.json#/$defs/HandshakeStarted/properties/cipher_suite_offered/x-provenance/gap: gap `Handshake.cipher_suite_offered` is not declared",
        "iroh.schema.json#/$defs/FlowState/properties/cwnd_packets/x-provenance: `cwnd_packets` is always present",
    ] {
        assert!(err.contains(want), "missing `{want}` in:\n{err}");
    }
}

#[test]
fn the_current_schemas_state_only_bounds_the_typed_parse_enforces() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas");
    if let Err(e) = load_current_dir(&dir, "schemas") {
        panic!("{e:#}");
    }
}

/// Schemas in `tests/lint/` that are loaded beside a rule's schema rather than on their own.
const COMPANIONS: &[&str] = &["duplicate-type-name-first"];

#[test]
fn every_lint_schema_has_a_case() {
    let this = include_str!("lint.rs");
    for (path, _, _) in lint_files() {
        let name = path
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .trim_end_matches(".schema.json");
        let quoted = format!("\"{name}\"");
        assert!(
            this.contains(&format!("[{quoted}]"))
                || this.contains(&format!(", {quoted}]"))
                || COMPANIONS.contains(&name),
            "{path} has no case"
        );
    }
}

case!(
    a_property_without_description_is_rejected,
    ["missing-description"],
    "/$defs/Sample/properties/label",
    "missing `description`"
);

case!(
    a_required_property_with_presence_is_rejected,
    ["required-with-presence"],
    "/$defs/Sample/properties/name",
    "a required property has no `x-presence`"
);

case!(
    an_optional_property_without_presence_is_rejected,
    ["optional-without-presence"],
    "/$defs/Sample/properties/label",
    "a property that is not required needs `x-presence`: `nullable`, `omittable`, `default` or `skip-default`"
);

case!(
    an_optional_property_without_absent_is_rejected,
    ["optional-without-absent"],
    "/$defs/Sample/properties/label",
    "a property that is not required needs `x-absent` saying what its absence means"
);

case!(
    a_nullable_property_that_rejects_null_is_rejected,
    ["nullable-without-null"],
    "/$defs/Sample/properties/label",
    "a `nullable` or `omittable` property must accept `null` (add `\"null\"` to `type`, or use `anyOf: [{$ref}, {type: null}]`)"
);

case!(
    an_integer_without_format_is_rejected,
    ["integer-without-format"],
    "/$defs/Sample/properties/count",
    "an integer needs `format`: uint8, uint16, uint32, uint64, int32 or int64"
);

case!(
    integer_bounds_that_do_not_match_the_format_are_rejected,
    ["integer-bounds-mismatch"],
    "/$defs/Sample/properties/count",
    "a `uint32` integer needs `minimum: 0` and `maximum: 4294967295` so schema and parser accept the same values"
);

case!(
    a_number_without_format_double_is_rejected,
    ["number-without-double"],
    "/$defs/Sample/properties/ratio",
    "a number needs `format: double`"
);

case!(
    an_integer_without_unit_is_rejected,
    ["integer-without-unit"],
    "/$defs/Sample/properties/count",
    "an integer or number property needs `x-unit`"
);

case!(
    an_inline_object_is_rejected,
    ["inline-object"],
    "/$defs/Sample/properties/origin",
    "inline objects are not allowed: name the type in `$defs`"
);

case!(
    an_inline_enum_is_rejected,
    ["inline-enum"],
    "/$defs/Sample/properties/levels/items",
    "inline enums are not allowed: name the enum in `$defs`"
);

case!(
    any_of_other_than_a_nullable_reference_is_rejected,
    ["anyof-misuse"],
    "/$defs/Sample/properties/code/anyOf",
    "`anyOf` is only allowed as `[{\"$ref\": …}, {\"type\": \"null\"}]`"
);

case!(
    additional_properties_on_a_struct_is_rejected,
    ["additional-properties-on-struct"],
    "/$defs/Sample/additionalProperties",
    "`additionalProperties` is not allowed on a struct (structs are open: unknown keys are kept, so there is no `additionalProperties`)"
);

case!(
    an_unknown_keyword_is_rejected,
    ["unknown-keyword"],
    "/$defs/Sample/properties/name/x-since",
    "`x-since` is not allowed on a property"
);

case!(
    a_ref_that_is_not_a_profile_reference_is_rejected,
    ["bad-ref"],
    "/$defs/Sample/properties/peer/$ref",
    "`common.schema.json#/$defs/NodeId` is not a profile reference (`#/$defs/<Name>` or `urn:diagwire:<stem>#/$defs/<Name>`)"
);

case!(
    a_ref_to_an_unknown_definition_is_rejected,
    ["unknown-ref-target"],
    "/$defs/Sample/properties/peer",
    "reference to unknown definition `Missing`"
);

case!(
    an_internal_catch_all_that_does_not_list_exactly_the_known_tags_is_rejected,
    ["internal-catch-all-tags"],
    "/$defs/Animal/oneOf/2",
    "the catch-all must exclude exactly the known tags; missing [\"dog\"], extra [\"bird\"]"
);

case!(
    an_adjacent_catch_all_that_does_not_list_exactly_the_known_tags_is_rejected,
    ["adjacent-catch-all-tags"],
    "/$defs/Signal/oneOf/2",
    "the catch-all must exclude exactly the known tags [\"Stop\", \"Move\"], it excludes [\"Stop\"]"
);

case!(
    an_adjacent_union_used_as_a_property_type_must_be_closed,
    ["adjacent-union-open-as-property"],
    "/$defs/Signal",
    "an adjacent union used as a property type must be a closed object (`additionalProperties: false` on every branch)"
);

case!(
    a_flattened_adjacent_union_must_be_open,
    ["flattened-adjacent-closed"],
    "/$defs/Sample/allOf",
    "a flattened adjacent union must be open (no `additionalProperties: false`), because this struct's keys sit beside it"
);

case!(
    a_provenance_source_that_is_not_a_property_is_rejected,
    ["provenance-source-missing"],
    "/$defs/Sample/properties/latency_ms/x-provenance",
    "source `latency_source` is not a property of this struct"
);

case!(
    a_provenance_source_that_is_not_a_value_source_is_rejected,
    ["provenance-source-not-value-source"],
    "/$defs/Sample/properties/latency_source",
    "a provenance source must be a `ValueSource`"
);

case!(
    a_tuple_without_items_false_is_rejected,
    ["tuple-without-items-false"],
    "/$defs/Sample/properties/pair",
    "a tuple needs `items: false` and `minItems` equal to the number of `prefixItems`"
);

case!(
    a_default_presence_without_a_zero_default_is_rejected,
    ["default-without-zero"],
    "/$defs/Sample/properties/retries",
    "`default` and `skip-default` properties need `default` set to the type's zero (0, false, [] or \"\")"
);

case!(
    an_id_that_does_not_follow_the_file_name_is_rejected,
    ["id-mismatch"],
    "/$id",
    "`$id` must be `urn:diagwire:id_mismatch`"
);

case!(
    a_definition_name_that_is_not_pascal_case_is_rejected,
    ["def-name-not-pascal"],
    "/$defs/sample_info",
    "definition name `sample_info` must be PascalCase (it is the Rust type name)"
);

case!(
    a_record_kind_declared_twice_is_rejected,
    ["record-kind-twice"],
    "/$defs/Second",
    "record kind `sample` is also declared by `First`"
);

case!(
    a_keyword_inside_array_items_outside_the_grammar_is_rejected_by_the_meta_schema,
    ["unknown-keyword-in-items"],
    "/$defs/Sample/properties/names/items",
    "Additional properties are not allowed ('pattern' was unexpected) (profile grammar)"
);

case!(
    a_type_name_defined_in_two_files_is_rejected,
    ["duplicate-type-name-first", "duplicate-type-name"],
    "/$defs/PresenceProbe",
    "the name `PresenceProbe` is also defined in schema/tests/lint/duplicate-type-name-first.schema.json; type names are one namespace"
);

case!(
    a_max_items_on_an_array_is_rejected,
    ["max-items-on-array"],
    "/$defs/Sample/properties/recent/maxItems",
    "`maxItems` is not enforced by the typed parse (an array of any length reads), so the schema would refuse records the types accept: state the writer's bound in `description`"
);

case!(
    a_min_items_on_an_array_is_rejected,
    ["min-items-on-array"],
    "/$defs/Sample/properties/names/minItems",
    "`minItems` is not enforced by the typed parse (an array of any length reads), so the schema would refuse records the types accept: state the writer's bound in `description`"
);

case!(
    a_max_items_on_a_nested_array_is_rejected,
    ["max-items-on-nested-array"],
    "/$defs/Sample/properties/grid/items/maxItems",
    "`maxItems` is not enforced by the typed parse (an array of any length reads), so the schema would refuse records the types accept: state the writer's bound in `description`"
);

case!(
    a_max_items_on_an_array_alias_is_rejected,
    ["max-items-on-array-alias"],
    "/$defs/SampleBatch/maxItems",
    "`maxItems` is not enforced by the typed parse (an array of any length reads), so the schema would refuse records the types accept: state the writer's bound in `description`"
);

case!(
    a_max_items_on_a_tuple_is_rejected,
    ["max-items-on-tuple"],
    "/$defs/Sample/properties/pair/maxItems",
    "`maxItems` is not allowed on a tuple: `prefixItems` with `items: false` fixes its length, which the typed parse enforces"
);

case!(
    a_pattern_on_a_hex_id_is_rejected,
    ["pattern-on-hex-id"],
    "/$defs/NodeIdHex/pattern",
    "`pattern` is not enforced by the typed parse (a `hex64` id reads any string), so the schema would refuse records the types accept: say the expected form in `description`"
);

case!(
    a_node_id_not_bounded_to_32_integers_is_rejected,
    ["node-id-without-32-items"],
    "/$defs/NodeId",
    "a `node-id-bytes` alias needs `minItems: 32` and `maxItems: 32`: the typed parse reads exactly 32 integers"
);

case!(
    a_max_length_on_a_string_is_rejected,
    ["max-length-on-string"],
    "/$defs/Sample/properties/label/maxLength",
    "`maxLength` is not allowed on a property (the typed parse does not enforce it, so the schema would refuse records the types accept: state the bound in `description`)"
);

case!(
    a_gap_no_gap_list_can_name_is_rejected,
    ["gap-not-declared"],
    "/$defs/Sample/properties/latency_ms/x-provenance/gap",
    "gap `Sample.jitter_ms` is not declared: it is not a value of the item type of any `api_gaps` list, so no record can say the value could not be asked for"
);

case!(
    a_source_property_that_is_not_a_value_source_is_rejected,
    ["source-not-value-source-type"],
    "/$defs/Sample/properties/latency_source",
    "`latency_source` is named as a provenance source but is not the shared `ValueSource`: use `ValueSource` (optional), or give the property another name"
);

case!(
    a_value_source_no_discriminator_names_is_rejected,
    ["source-not-linked"],
    "/$defs/Sample/properties/latency_source",
    "`latency_source` is a `ValueSource` that no property's `x-provenance.source` names, so no accessor reads it: link the value it describes"
);

case!(
    an_always_present_discriminated_value_without_a_source_is_rejected,
    ["provenance-value-always-present"],
    "/$defs/Sample/properties/count/x-provenance",
    "`count` is always present, so without a source that can say `unavailable` its accessor never answers \"could not ask\": make it optional, or name a `ValueSource` source (with the value `unavailable`)"
);

case!(
    a_unit_outside_the_unit_list_is_rejected,
    ["unit-not-listed"],
    "/$defs/Sample/properties/size/x-unit",
    "unit `kilobytes` is not in the profile's unit list (schemas/README.md): use a listed unit, or add this one there and to `schema/src/units.rs`"
);

case!(
    a_retired_unit_spelling_is_rejected_naming_its_replacement,
    ["unit-retired"],
    "/$defs/Sample/properties/exit_signal/x-unit",
    "unit `signal-number` is a retired spelling: write `signal`"
);

case!(
    one_field_name_in_two_units_is_rejected_at_the_second,
    ["unit-differs-by-name"],
    "/$defs/Listed/properties/pid/x-unit",
    "`pid` is in `id` here but in `pid` at schema/tests/lint/unit-differs-by-name.schema.json#/$defs/Spawned/properties/pid: one field name is one quantity across the contract"
);

/// The unit rules are rules of the schemas being edited: a frozen tree spelled before them loads.
#[test]
fn a_frozen_tree_with_units_spelled_before_the_unit_list_still_loads() {
    for name in ["unit-not-listed", "unit-retired", "unit-differs-by-name"] {
        if let Err(e) = load(&[lint_file(name)]) {
            panic!("{name}: {e:#}");
        }
    }
}

/// The profile's page lists every unit of the vocabulary with its meaning, and no other.
#[test]
fn the_profile_lists_exactly_the_units_of_the_vocabulary() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas/README.md"))
            .expect("README");
    let listed: Vec<(String, String)> = readme
        .lines()
        .skip_while(|l| *l != "| unit | a number in it is |")
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            let (unit, rest) = l.strip_prefix("| `")?.split_once("` | ")?;
            Some((unit.to_owned(), rest.strip_suffix(" |")?.to_owned()))
        })
        .collect();
    let want: Vec<(String, String)> = diagwire_schema::units::UNITS
        .iter()
        .map(|(u, m)| ((*u).to_owned(), (*m).to_owned()))
        .collect();
    assert_eq!(listed, want, "schemas/README.md's unit table");
}

case!(
    a_property_name_that_cannot_name_a_rust_field_is_rejected,
    ["property-name-not-identifier"],
    "/$defs/Sample/properties/exit-code",
    "`exit-code` is not a field name (it holds a character other than `a`–`z`, `0`–`9` and `_`): the generator names the Rust field after the JSON key, so a key is lower-case ASCII letters, digits and `_`, starting with a letter or `_`"
);

case!(
    a_reference_to_a_schema_file_that_is_not_in_the_tree_is_rejected,
    ["ref-to-missing-file"],
    "/$defs/Sample/properties/mood/$ref",
    "`urn:diagwire:nowhere#/$defs/Mood` names the schema file `nowhere`, which is not in this tree"
);

case!(
    a_local_reference_to_a_definition_of_another_file_is_rejected,
    ["duplicate-type-name-first", "ref-to-other-def"],
    "/$defs/Sample/properties/probe/$ref",
    "`#/$defs/PresenceProbe` does not resolve: `PresenceProbe` is defined in `duplicate_type_name_first`, so the reference is `urn:diagwire:duplicate_type_name_first#/$defs/PresenceProbe`"
);

/// Duplicate keys are found with a set per object: a file of a quarter of a million keys is
/// checked in linear time, and the duplicate is named.
#[test]
fn duplicate_keys_are_found_in_linear_time() {
    let mut text = String::from("{");
    for i in 0..250_000 {
        text.push_str(&format!("\"k{i}\":0,"));
    }
    text.push_str("\"k7\":1}");
    let start = std::time::Instant::now();
    let err =
        diagwire_schema::parse_file("big.schema.json", "big", &text).expect_err("a duplicate key");
    assert!(format!("{err:#}").contains("duplicate key `k7`"), "{err:#}");
    assert!(start.elapsed() < std::time::Duration::from_secs(10));
}
