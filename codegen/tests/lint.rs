//! The profile lint: one invalid schema per rule (`tests/lint/`), each rejected with its file and JSON pointer.
//!
//! Every lint schema is valid except for the one rule its name says, so lowering it reports exactly
//! one problem; the tests assert that whole message.

use diagwire_codegen::{lower, ordered::J, read_features, read_kebab_schemas, workspace_root};

const LINT_DIR: &str = "codegen/tests/lint";

/// Every lint schema, by file name without `.schema.json`; each has its test below.
const RULES: &[&str] = &[
    "additional-properties-on-struct",
    "adjacent-catch-all-tags",
    "adjacent-union-open-as-property",
    "anyof-misuse",
    "bad-ref",
    "def-name-not-pascal",
    "default-without-zero",
    "duplicate-type-name",
    "flattened-adjacent-closed",
    "id-mismatch",
    "inline-enum",
    "inline-object",
    "integer-bounds-mismatch",
    "integer-without-format",
    "integer-without-unit",
    "internal-catch-all-tags",
    "missing-description",
    "nullable-without-null",
    "number-without-double",
    "optional-without-absent",
    "optional-without-presence",
    "provenance-source-missing",
    "provenance-source-not-value-source",
    "record-kind-twice",
    "required-with-presence",
    "tuple-without-items-false",
    "unknown-keyword",
    "unknown-keyword-in-items",
    "unknown-ref-target",
];

fn lint_file(name: &str) -> (String, String, J) {
    let display = format!("{LINT_DIR}/{name}.schema.json");
    read_kebab_schemas(&workspace_root(), LINT_DIR)
        .unwrap_or_else(|e| panic!("{e:#}"))
        .into_iter()
        .find(|(path, _, _)| *path == display)
        .unwrap_or_else(|| panic!("{display} does not exist"))
}

/// Lowers `files` and returns the whole error message; fails the test when lowering succeeds.
fn rejection(files: &[(String, String, J)]) -> String {
    match lower(files) {
        Ok(_) => panic!(
            "the lint accepted {:?}",
            files.iter().map(|f| &f.0).collect::<Vec<_>>()
        ),
        Err(e) => format!("{e:#}"),
    }
}

/// Lowers the lint schema `name` on its own.
fn lint(name: &str) -> String {
    rejection(&[lint_file(name)])
}

/// The message for one problem at `pointer` of the lint schema `name`.
fn problem(name: &str, pointer: &str, message: &str) -> String {
    format!(
        "the schemas are outside the profile (schemas/README.md):\n  {LINT_DIR}/{name}.schema.json#{pointer}: {message}"
    )
}

#[test]
fn every_lint_schema_has_a_test() {
    let files = read_kebab_schemas(&workspace_root(), LINT_DIR).unwrap_or_else(|e| panic!("{e:#}"));
    let on_disk: Vec<String> = files
        .iter()
        .map(|(path, _, _)| {
            let file = path.rsplit('/').next().unwrap_or_default();
            file.trim_end_matches(".schema.json").to_owned()
        })
        .collect();
    assert_eq!(on_disk, RULES);
}

#[test]
fn a_property_without_description_is_rejected() {
    assert_eq!(
        lint("missing-description"),
        problem(
            "missing-description",
            "/$defs/Sample/properties/label",
            "missing `description`"
        )
    );
}

#[test]
fn a_required_property_with_presence_is_rejected() {
    assert_eq!(
        lint("required-with-presence"),
        problem(
            "required-with-presence",
            "/$defs/Sample/properties/name",
            "a required property has no `x-presence`"
        )
    );
}

#[test]
fn an_optional_property_without_presence_is_rejected() {
    assert_eq!(
        lint("optional-without-presence"),
        problem(
            "optional-without-presence",
            "/$defs/Sample/properties/label",
            "a property that is not required needs `x-presence`: `nullable`, `omittable`, `default` or `skip-default`"
        )
    );
}

#[test]
fn an_optional_property_without_absent_is_rejected() {
    assert_eq!(
        lint("optional-without-absent"),
        problem(
            "optional-without-absent",
            "/$defs/Sample/properties/label",
            "a property that is not required needs `x-absent` saying what its absence means"
        )
    );
}

#[test]
fn a_nullable_property_that_rejects_null_is_rejected() {
    assert_eq!(
        lint("nullable-without-null"),
        problem(
            "nullable-without-null",
            "/$defs/Sample/properties/label",
            "a `nullable` or `omittable` property must accept `null` (add `\"null\"` to `type`, or use `anyOf: [{$ref}, {type: null}]`)"
        )
    );
}

#[test]
fn an_integer_without_format_is_rejected() {
    assert_eq!(
        lint("integer-without-format"),
        problem(
            "integer-without-format",
            "/$defs/Sample/properties/count",
            "an integer needs `format`: uint8, uint16, uint32, uint64, int32 or int64"
        )
    );
}

#[test]
fn integer_bounds_that_do_not_match_the_format_are_rejected() {
    assert_eq!(
        lint("integer-bounds-mismatch"),
        problem(
            "integer-bounds-mismatch",
            "/$defs/Sample/properties/count",
            "a `uint32` integer needs `minimum: 0` and `maximum: 4294967295` so schema and parser accept the same values"
        )
    );
}

#[test]
fn a_number_without_format_double_is_rejected() {
    assert_eq!(
        lint("number-without-double"),
        problem(
            "number-without-double",
            "/$defs/Sample/properties/ratio",
            "a number needs `format: double`"
        )
    );
}

#[test]
fn an_integer_without_unit_is_rejected() {
    assert_eq!(
        lint("integer-without-unit"),
        problem(
            "integer-without-unit",
            "/$defs/Sample/properties/count",
            "an integer or number property needs `x-unit`"
        )
    );
}

#[test]
fn an_inline_object_is_rejected() {
    assert_eq!(
        lint("inline-object"),
        problem(
            "inline-object",
            "/$defs/Sample/properties/origin",
            "inline objects are not allowed: name the type in `$defs`"
        )
    );
}

#[test]
fn an_inline_enum_is_rejected() {
    assert_eq!(
        lint("inline-enum"),
        problem(
            "inline-enum",
            "/$defs/Sample/properties/levels/items",
            "inline enums are not allowed: name the enum in `$defs`"
        )
    );
}

#[test]
fn any_of_other_than_a_nullable_reference_is_rejected() {
    assert_eq!(
        lint("anyof-misuse"),
        problem(
            "anyof-misuse",
            "/$defs/Sample/properties/code/anyOf",
            "`anyOf` is only allowed as `[{\"$ref\": …}, {\"type\": \"null\"}]`"
        )
    );
}

#[test]
fn additional_properties_on_a_struct_is_rejected() {
    assert_eq!(
        lint("additional-properties-on-struct"),
        problem(
            "additional-properties-on-struct",
            "/$defs/Sample/additionalProperties",
            "`additionalProperties` is not allowed on a struct (structs are open: unknown keys are kept, so there is no `additionalProperties`)"
        )
    );
}

#[test]
fn an_unknown_keyword_is_rejected() {
    assert_eq!(
        lint("unknown-keyword"),
        problem(
            "unknown-keyword",
            "/$defs/Sample/properties/name/x-since",
            "`x-since` is not allowed on a property"
        )
    );
}

#[test]
fn a_ref_that_is_not_a_profile_reference_is_rejected() {
    assert_eq!(
        lint("bad-ref"),
        problem(
            "bad-ref",
            "/$defs/Sample/properties/peer/$ref",
            "`common.schema.json#/$defs/NodeId` is not a profile reference (`#/$defs/<Name>` or `urn:diagwire:<stem>#/$defs/<Name>`)"
        )
    );
}

#[test]
fn a_ref_to_an_unknown_definition_is_rejected() {
    assert_eq!(
        lint("unknown-ref-target"),
        problem(
            "unknown-ref-target",
            "/$defs/Sample/properties/peer",
            "reference to unknown definition `Missing`"
        )
    );
}

#[test]
fn a_type_name_defined_in_two_files_is_rejected() {
    let features = read_features(&workspace_root()).unwrap_or_else(|e| panic!("{e:#}"));
    let other = features
        .into_iter()
        .find(|(_, stem, _)| stem == "struct_presence")
        .expect("the struct-presence feature defines `PresenceProbe`");
    assert_eq!(
        rejection(&[other, lint_file("duplicate-type-name")]),
        problem(
            "duplicate-type-name",
            "/$defs/PresenceProbe",
            "the name `PresenceProbe` is also defined in codegen/tests/features/struct-presence.schema.json; type names are one namespace"
        )
    );
}

#[test]
fn an_internal_catch_all_that_does_not_list_exactly_the_known_tags_is_rejected() {
    assert_eq!(
        lint("internal-catch-all-tags"),
        problem(
            "internal-catch-all-tags",
            "/$defs/Animal/oneOf/2",
            "the catch-all must exclude exactly the known tags; missing [\"dog\"], extra [\"bird\"]"
        )
    );
}

#[test]
fn an_adjacent_catch_all_that_does_not_list_exactly_the_known_tags_is_rejected() {
    assert_eq!(
        lint("adjacent-catch-all-tags"),
        problem(
            "adjacent-catch-all-tags",
            "/$defs/Signal/oneOf/2",
            "the catch-all must exclude exactly the known tags [\"Stop\", \"Move\"], it excludes [\"Stop\"]"
        )
    );
}

#[test]
fn an_adjacent_union_used_as_a_property_type_must_be_closed() {
    assert_eq!(
        lint("adjacent-union-open-as-property"),
        problem(
            "adjacent-union-open-as-property",
            "/$defs/Signal",
            "an adjacent union used as a property type must be a closed object (`additionalProperties: false` on every branch)"
        )
    );
}

#[test]
fn a_flattened_adjacent_union_must_be_open() {
    assert_eq!(
        lint("flattened-adjacent-closed"),
        problem(
            "flattened-adjacent-closed",
            "/$defs/Sample/allOf",
            "a flattened adjacent union must be open (no `additionalProperties: false`), because this struct's keys sit beside it"
        )
    );
}

#[test]
fn a_provenance_source_that_is_not_a_property_is_rejected() {
    assert_eq!(
        lint("provenance-source-missing"),
        problem(
            "provenance-source-missing",
            "/$defs/Sample/properties/latency_ms/x-provenance",
            "source `latency_source` is not a property of this struct"
        )
    );
}

#[test]
fn a_provenance_source_that_is_not_a_value_source_is_rejected() {
    assert_eq!(
        lint("provenance-source-not-value-source"),
        problem(
            "provenance-source-not-value-source",
            "/$defs/Sample/properties/latency_source",
            "a provenance source must be a `ValueSource`"
        )
    );
}

#[test]
fn a_tuple_without_items_false_is_rejected() {
    assert_eq!(
        lint("tuple-without-items-false"),
        problem(
            "tuple-without-items-false",
            "/$defs/Sample/properties/pair",
            "a tuple needs `items: false` and `minItems` equal to the number of `prefixItems`"
        )
    );
}

#[test]
fn a_default_presence_without_a_zero_default_is_rejected() {
    assert_eq!(
        lint("default-without-zero"),
        problem(
            "default-without-zero",
            "/$defs/Sample/properties/retries",
            "`default` and `skip-default` properties need `default` set to the type's zero (0, false, [] or \"\")"
        )
    );
}

#[test]
fn an_id_that_does_not_follow_the_file_name_is_rejected() {
    assert_eq!(
        lint("id-mismatch"),
        problem(
            "id-mismatch",
            "/$id",
            "`$id` must be `urn:diagwire:id_mismatch`"
        )
    );
}

#[test]
fn a_definition_name_that_is_not_pascal_case_is_rejected() {
    assert_eq!(
        lint("def-name-not-pascal"),
        problem(
            "def-name-not-pascal",
            "/$defs/sample_info",
            "definition name `sample_info` must be PascalCase (it is the Rust type name)"
        )
    );
}

#[test]
fn a_record_kind_declared_twice_is_rejected() {
    assert_eq!(
        lint("record-kind-twice"),
        problem(
            "record-kind-twice",
            "/$defs/Second",
            "record kind `sample` is also declared by `First`"
        )
    );
}

#[test]
fn a_keyword_inside_array_items_outside_the_grammar_is_rejected_by_the_meta_schema() {
    assert_eq!(
        lint("unknown-keyword-in-items"),
        problem(
            "unknown-keyword-in-items",
            "/$defs/Sample/properties/names/items",
            "Additional properties are not allowed ('pattern' was unexpected) (profile grammar)"
        )
    );
}
