//! The lowering: each schema file's JSON into the model's types, checking the profile's rules of
//! one file as it goes (keywords, forms, presences, bounds, tags); the rules that need every file
//! are [`crate::check`]'s, run at the end of [`lower`].
//!
//! Every problem is reported with the file and JSON pointer of the offending schema; lowering
//! collects all problems before failing, so one run shows every violation.

use std::collections::{BTreeSet, HashSet};

use diagwire_runtime::shape::escape_pointer_token;

use crate::model::{
    Def, DefKind, Facts, FileModel, Flatten, IntWidth, Model, Payload, Presence, Prop,
    ProvenanceSpec, StructDef, Ty, UnionDef, UnionStyle, Variant, variant_name,
};
use crate::ordered::J;
use crate::problem::{Problems, SchemaProblem};

/// Where problems of one file go.
struct Ctx<'a> {
    file: &'a str,
    problems: &'a mut Problems,
}

impl Ctx<'_> {
    fn err(&mut self, ptr: &str, msg: impl Into<String>) {
        self.problems.push(SchemaProblem::new(self.file, ptr, msg));
    }
}

/// Keywords allowed on a struct definition.
const STRUCT_KEYS: &[&str] = &[
    "type",
    "description",
    "required",
    "properties",
    "allOf",
    "x-flatten",
    "x-record",
    "title",
];
/// Keywords allowed on a property.
const PROP_KEYS: &[&str] = &[
    "type",
    "description",
    "format",
    "minimum",
    "maximum",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "$ref",
    "anyOf",
    "const",
    "default",
    "x-presence",
    "x-absent",
    "x-unit",
    "x-json",
    "x-provenance",
    "x-derived",
    "examples",
];

/// Validation keywords of JSON Schema that state a bound no generated type checks; none is in the
/// profile.
const UNENFORCED_KEYS: &[&str] = &[
    "maxLength",
    "minLength",
    "pattern",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "minProperties",
    "maxProperties",
    "multipleOf",
    "exclusiveMinimum",
    "exclusiveMaximum",
];

/// Lowers and checks every file. Files are `(path for messages, stem, parsed document)`.
pub(crate) fn lower(files: &[(String, String, J)]) -> Result<Model, Problems> {
    let mut problems = Problems::new();
    let mut out = Vec::new();
    for (path, stem, doc) in files {
        let mut cx = Ctx {
            file: path,
            problems: &mut problems,
        };
        if let Some(f) = lower_file(&mut cx, path, stem, doc) {
            out.push(f);
        }
    }
    let model = Model::new(out);
    crate::check::cross_check(files, &model, &mut problems);
    if problems.is_empty() {
        Ok(model)
    } else {
        Err(problems)
    }
}

fn lower_file(cx: &mut Ctx<'_>, path: &str, stem: &str, doc: &J) -> Option<FileModel> {
    let Some(entries) = doc.as_obj() else {
        cx.err("", "a schema file must be a JSON object");
        return None;
    };
    for (k, _) in entries {
        if !["$schema", "$id", "title", "description", "$defs"].contains(&k.as_str()) {
            cx.err(&format!("/{}", escape_pointer_token(k)), format!("`{k}` is not allowed at the top of a schema file (the profile allows `$schema`, `$id`, `title`, `description`, `$defs`)"));
        }
    }
    if doc.get("$schema").and_then(J::as_str)
        != Some("https://json-schema.org/draft/2020-12/schema")
    {
        cx.err(
            "/$schema",
            "`$schema` must be `https://json-schema.org/draft/2020-12/schema`",
        );
    }
    let want_id = format!("urn:diagwire:{stem}");
    if doc.get("$id").and_then(J::as_str) != Some(want_id.as_str()) {
        cx.err("/$id", format!("`$id` must be `{want_id}`"));
    }
    let title = text(cx, doc, "", "title");
    let description = text(cx, doc, "", "description");
    let mut defs = Vec::new();
    match doc.get("$defs").and_then(J::as_obj) {
        Some(entries) => {
            for (name, schema) in entries {
                let ptr = format!("/$defs/{}", escape_pointer_token(name));
                if !is_pascal(name) {
                    cx.err(
                        &ptr,
                        format!(
                            "definition name `{name}` must be PascalCase (it is the Rust type name)"
                        ),
                    );
                }
                if let Some(def) = lower_def(cx, &ptr, name, schema) {
                    defs.push(def);
                }
            }
        }
        None => cx.err("", "a schema file needs a `$defs` object"),
    }
    Some(FileModel {
        path: path.to_owned(),
        stem: stem.to_owned(),
        title,
        description,
        defs,
    })
}

fn text(cx: &mut Ctx<'_>, obj: &J, ptr: &str, key: &str) -> String {
    match obj.get(key).and_then(J::as_str) {
        Some(s) if !s.trim().is_empty() => s.to_owned(),
        _ => {
            cx.err(ptr, format!("missing `{key}`"));
            String::new()
        }
    }
}

/// Why a property name cannot name a Rust field, if it cannot: the generator writes the field
/// as the JSON key itself (a raw identifier for a keyword).
fn not_a_field_name(name: &str) -> Option<&'static str> {
    let Some(first) = name.chars().next() else {
        return Some("it is empty");
    };
    if !(first.is_ascii_lowercase() || first == '_') {
        return Some("it must start with a lower-case letter or `_`");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        return Some("it holds a character other than `a`–`z`, `0`–`9` and `_`");
    }
    if matches!(name, "_" | "self" | "super" | "crate" | "extra") {
        return Some(
            "a Rust keyword that cannot be a raw identifier, or the field of unknown keys",
        );
    }
    None
}

fn is_pascal(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && s.chars().all(|c| c.is_ascii_alphanumeric())
}

fn lower_def(cx: &mut Ctx<'_>, ptr: &str, name: &str, s: &J) -> Option<Def> {
    let description = text(cx, s, ptr, "description");
    let record = s.get("x-record").and_then(J::as_str).map(str::to_owned);
    let kind = if let Some(u) = s.get("x-union") {
        DefKind::Union(lower_union(cx, ptr, s, u)?)
    } else if let Some(id) = s.get("x-id") {
        match id.as_str() {
            Some("node-id-bytes") => DefKind::NodeId,
            Some("hex64") => DefKind::NodeIdHex,
            _ => {
                cx.err(
                    &format!("{ptr}/x-id"),
                    "`x-id` must be `node-id-bytes` or `hex64`",
                );
                return None;
            }
        }
    } else if s.get("enum").is_some() || s.get("x-open-enum").is_some() {
        lower_enum(cx, ptr, s)?
    } else {
        match s.get("type").and_then(J::as_str) {
            Some("object") => DefKind::Struct(lower_struct(cx, ptr, s)?),
            Some("array") => match lower_ty(cx, ptr, s)? {
                Ty::Vec(item) => DefKind::Array(*item),
                _ => {
                    cx.err(
                        ptr,
                        "an array alias is `{\"type\": \"array\", \"items\": …}`",
                    );
                    return None;
                }
            },
            _ => {
                cx.err(ptr, "a definition must be a struct (`type: object`), a string enum (`enum` / `x-open-enum`), a union (`x-union`), an id alias (`x-id`) or an array alias");
                return None;
            }
        }
    };
    Some(Def {
        name: name.to_owned(),
        description,
        record,
        kind,
        facts: Facts::default(),
    })
}

fn lower_enum(cx: &mut Ctx<'_>, ptr: &str, s: &J) -> Option<DefKind> {
    if s.get("type").and_then(J::as_str) != Some("string") {
        cx.err(ptr, "a string enum needs `type: string`");
    }
    for (k, _) in s.as_obj().unwrap_or_default() {
        if !["type", "description", "enum", "x-open-enum", "title"].contains(&k.as_str()) {
            cx.err(
                &format!("{ptr}/{}", escape_pointer_token(k)),
                format!("`{k}` is not allowed on a string enum"),
            );
        }
    }
    let (key, open) = if s.get("enum").is_some() {
        if s.get("x-open-enum").is_some() {
            cx.err(
                ptr,
                "an enum is either closed (`enum`) or open (`x-open-enum`), not both",
            );
        }
        ("enum", false)
    } else {
        ("x-open-enum", true)
    };
    let values: Vec<String> = match s.get(key).and_then(J::as_arr) {
        Some(items) if !items.is_empty() => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => {
            cx.err(
                &format!("{ptr}/{key}"),
                "an enum needs a non-empty array of strings",
            );
            return None;
        }
    };
    let mut seen = BTreeSet::new();
    for v in &values {
        if !seen.insert(variant_name(v)) {
            cx.err(
                &format!("{ptr}/{key}"),
                format!("value `{v}` maps to the same Rust variant name as another value"),
            );
        }
    }
    Some(DefKind::Enum { values, open })
}

fn lower_struct(cx: &mut Ctx<'_>, ptr: &str, s: &J) -> Option<StructDef> {
    for (k, _) in s.as_obj().unwrap_or_default() {
        if !STRUCT_KEYS.contains(&k.as_str()) {
            let hint = if k == "additionalProperties" {
                " (structs are open: unknown keys are kept, so there is no `additionalProperties`)"
            } else {
                ""
            };
            cx.err(
                &format!("{ptr}/{}", escape_pointer_token(k)),
                format!("`{k}` is not allowed on a struct{hint}"),
            );
        }
    }
    let required: Vec<String> = s
        .get("required")
        .and_then(J::as_arr)
        .unwrap_or_default()
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    // Sets, so a struct with many properties is checked in linear time.
    let required_set: HashSet<&str> = required.iter().map(String::as_str).collect();
    let mut props = Vec::new();
    let mut consts = Vec::new();
    let empty = Vec::new();
    let entries = match s.get("properties") {
        Some(J::Obj(e)) => e,
        Some(_) => {
            cx.err(
                &format!("{ptr}/properties"),
                "`properties` must be an object",
            );
            &empty
        }
        None => &empty,
    };
    for (name, p) in entries {
        let pptr = format!("{ptr}/properties/{}", escape_pointer_token(name));
        if let Some(why) = not_a_field_name(name) {
            cx.err(&pptr, format!("`{name}` is not a field name ({why}): the generator names the Rust field after the JSON key, so a key is lower-case ASCII letters, digits and `_`, starting with a letter or `_`"));
            continue;
        }
        if let Some(c) = p.get("const") {
            match c.as_str() {
                Some(v) => {
                    if !required_set.contains(name.as_str()) {
                        cx.err(&pptr, "a tag constant must be listed in `required`");
                    }
                    text(cx, p, &pptr, "description");
                    consts.push((name.clone(), v.to_owned()));
                }
                None => cx.err(&pptr, "`const` is only for string tag values"),
            }
            continue;
        }
        if let Some(prop) = lower_prop(cx, &pptr, name, p, required_set.contains(name.as_str())) {
            props.push(prop);
        }
    }
    let keys: HashSet<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
    for r in &required {
        if !keys.contains(r.as_str()) {
            cx.err(
                &format!("{ptr}/required"),
                format!("`{r}` is required but not a property"),
            );
        }
    }
    let flatten = match (s.get("allOf"), s.get("x-flatten")) {
        (None, None) => None,
        (Some(all), Some(field)) => {
            let target = all
                .as_arr()
                .filter(|a| a.len() == 1)
                .and_then(|a| a[0].get("$ref"))
                .and_then(J::as_str)
                .and_then(|r| ref_name(cx, &format!("{ptr}/allOf/0/$ref"), r));
            match (target, field.as_str()) {
                (Some(_), Some(field)) if not_a_field_name(field).is_some() => {
                    cx.err(
                        &format!("{ptr}/x-flatten"),
                        format!(
                            "`{field}` is not a field name ({})",
                            not_a_field_name(field).unwrap_or_default()
                        ),
                    );
                    None
                }
                (Some(union), Some(field)) => Some(Flatten {
                    field: field.to_owned(),
                    union,
                }),
                _ => {
                    cx.err(&format!("{ptr}/allOf"), "`allOf` must be exactly `[{\"$ref\": <union>}]` and `x-flatten` a field name");
                    None
                }
            }
        }
        _ => {
            cx.err(ptr, "`allOf` and `x-flatten` go together");
            None
        }
    };
    for p in &props {
        if let Some(prov) = &p.provenance {
            if let Some(src) = &prov.source {
                match props.iter().find(|q| &q.name == src) {
                    Some(q) if q.ty == Ty::Ref("ValueSource".into()) => {}
                    Some(_) => cx.err(
                        &format!("{ptr}/properties/{}", escape_pointer_token(src)),
                        "a provenance source must be a `ValueSource`",
                    ),
                    None => cx.err(
                        &format!(
                            "{ptr}/properties/{}/x-provenance",
                            escape_pointer_token(&p.name)
                        ),
                        format!("source `{src}` is not a property of this struct"),
                    ),
                }
            }
        }
    }
    Some(StructDef {
        props,
        consts,
        flatten,
    })
}

fn lower_prop(cx: &mut Ctx<'_>, ptr: &str, name: &str, p: &J, required: bool) -> Option<Prop> {
    for (k, _) in p.as_obj().unwrap_or_default() {
        if !PROP_KEYS.contains(&k.as_str()) {
            let hint = if UNENFORCED_KEYS.contains(&k.as_str()) {
                " (the typed parse does not enforce it, so the schema would refuse records the types accept: state the bound in `description`)"
            } else {
                ""
            };
            cx.err(
                &format!("{ptr}/{}", escape_pointer_token(k)),
                format!("`{k}` is not allowed on a property{hint}"),
            );
        }
    }
    let description = text(cx, p, ptr, "description");
    let presence = match (required, p.get("x-presence").map(|v| v.as_str())) {
        (true, None) => Presence::Required,
        (true, Some(_)) => {
            cx.err(ptr, "a required property has no `x-presence`");
            Presence::Required
        }
        (false, Some(Some("nullable"))) => Presence::Nullable,
        (false, Some(Some("omittable"))) => Presence::Omittable,
        (false, Some(Some("default"))) => Presence::Default,
        (false, Some(Some("skip-default"))) => Presence::SkipDefault,
        (false, _) => {
            cx.err(ptr, "a property that is not required needs `x-presence`: `nullable`, `omittable`, `default` or `skip-default`");
            return None;
        }
    };
    let absent = p.get("x-absent").and_then(J::as_str).map(str::to_owned);
    if presence != Presence::Required && absent.as_deref().is_none_or(|a| a.trim().is_empty()) {
        cx.err(
            ptr,
            "a property that is not required needs `x-absent` saying what its absence means",
        );
    }
    // Split off the nullable wrapper.
    let nullable_schema = matches!(presence, Presence::Nullable | Presence::Omittable);
    let (inner, had_null) = strip_null(cx, ptr, p);
    let any_json = p.get("x-json") == Some(&J::Bool(true));
    if nullable_schema && !had_null && !any_json {
        cx.err(ptr, "a `nullable` or `omittable` property must accept `null` (add `\"null\"` to `type`, or use `anyOf: [{$ref}, {type: null}]`)");
    }
    if !nullable_schema && had_null {
        cx.err(
            ptr,
            "only `nullable` and `omittable` properties accept `null`",
        );
    }
    let ty = lower_ty(cx, ptr, &inner)?;
    let default = p.get("default").cloned();
    match presence {
        Presence::Default | Presence::SkipDefault => {
            let zero = match &ty {
                Ty::Int(_) => default.as_ref().and_then(J::as_i128) == Some(0),
                Ty::Bool => default == Some(J::Bool(false)),
                Ty::Vec(_) => default == Some(J::Arr(vec![])),
                Ty::Str => default == Some(J::Str(String::new())),
                _ => false,
            };
            if !zero {
                cx.err(ptr, "`default` and `skip-default` properties need `default` set to the type's zero (0, false, [] or \"\")");
            }
        }
        _ => {
            if default.is_some() {
                cx.err(
                    &format!("{ptr}/default"),
                    "`default` is only for `default` and `skip-default` properties",
                );
            }
        }
    }
    let unit = p.get("x-unit").and_then(J::as_str).map(str::to_owned);
    let numeric = matches!(ty, Ty::Int(_) | Ty::F64);
    if numeric && unit.is_none() {
        cx.err(ptr, "an integer or number property needs `x-unit`");
    }
    let provenance = p.get("x-provenance").map(|pv| {
        let source = pv.get("source").and_then(J::as_str).map(str::to_owned);
        let gap = pv.get("gap").and_then(J::as_str).map(str::to_owned);
        if source.is_none() && gap.is_none() {
            cx.err(
                &format!("{ptr}/x-provenance"),
                "`x-provenance` needs `source` and/or `gap`",
            );
        }
        ProvenanceSpec { source, gap }
    });
    let derived = p.get("x-derived").and_then(J::as_str).map(str::to_owned);
    Some(Prop {
        name: name.to_owned(),
        pointer: ptr.to_owned(),
        ty,
        presence,
        description,
        unit,
        absent,
        provenance,
        derived,
        default,
    })
}

/// Removes the `null` alternative of a property schema, returning the inner schema.
fn strip_null(cx: &mut Ctx<'_>, ptr: &str, p: &J) -> (J, bool) {
    if let Some(any) = p.get("anyOf") {
        let items = any.as_arr().unwrap_or_default();
        let is_null = |j: &J| j.get("type").and_then(J::as_str) == Some("null");
        if items.len() == 2 && is_null(&items[1]) && items[0].get("$ref").is_some() {
            return (items[0].clone(), true);
        }
        cx.err(
            &format!("{ptr}/anyOf"),
            "`anyOf` is only allowed as `[{\"$ref\": …}, {\"type\": \"null\"}]`",
        );
        return (p.clone(), false);
    }
    if let Some(J::Arr(types)) = p.get("type") {
        let non_null: Vec<&J> = types
            .iter()
            .filter(|t| t.as_str() != Some("null"))
            .collect();
        let had_null = non_null.len() != types.len();
        if non_null.len() != 1 {
            cx.err(
                &format!("{ptr}/type"),
                "`type` may list one type and optionally `\"null\"`",
            );
            return (p.clone(), had_null);
        }
        let mut entries = p.as_obj().unwrap_or_default().to_vec();
        for (k, v) in entries.iter_mut() {
            if k == "type" {
                *v = non_null[0].clone();
            }
        }
        return (J::Obj(entries), had_null);
    }
    (p.clone(), false)
}

fn ref_name(cx: &mut Ctx<'_>, ptr: &str, r: &str) -> Option<String> {
    let tail = if let Some(rest) = r.strip_prefix("#/$defs/") {
        rest
    } else if let Some(rest) = r.strip_prefix("urn:diagwire:") {
        match rest.split_once("#/$defs/") {
            Some((_, name)) => name,
            None => {
                cx.err(
                    ptr,
                    format!(
                        "`{r}` must point at a definition: `urn:diagwire:<stem>#/$defs/<Name>`"
                    ),
                );
                return None;
            }
        }
    } else {
        cx.err(ptr, format!("`{r}` is not a profile reference (`#/$defs/<Name>` or `urn:diagwire:<stem>#/$defs/<Name>`)"));
        return None;
    };
    Some(tail.to_owned())
}

fn lower_ty(cx: &mut Ctx<'_>, ptr: &str, s: &J) -> Option<Ty> {
    if let Some(r) = s.get("$ref").and_then(J::as_str) {
        return ref_name(cx, &format!("{ptr}/$ref"), r).map(Ty::Ref);
    }
    if s.get("x-json") == Some(&J::Bool(true)) {
        return Some(Ty::Json);
    }
    if s.get("enum").is_some() || s.get("x-open-enum").is_some() {
        cx.err(
            ptr,
            "inline enums are not allowed: name the enum in `$defs`",
        );
        return None;
    }
    match s.get("type").and_then(J::as_str) {
        Some("string") => Some(Ty::Str),
        Some("boolean") => Some(Ty::Bool),
        Some("number") => {
            if s.get("format").and_then(J::as_str) != Some("double") {
                cx.err(ptr, "a number needs `format: double`");
            }
            Some(Ty::F64)
        }
        Some("integer") => {
            let Some(fmt) = s
                .get("format")
                .and_then(J::as_str)
                .and_then(IntWidth::from_name)
            else {
                cx.err(
                    ptr,
                    "an integer needs `format`: uint8, uint16, uint32, uint64, int32 or int64",
                );
                return None;
            };
            let (lo, hi) = fmt.bounds();
            let min = s.get("minimum").and_then(J::as_i128);
            let max = s.get("maximum").and_then(J::as_i128);
            if min != Some(lo) || max != Some(hi) {
                cx.err(ptr, format!("a `{}` integer needs `minimum: {lo}` and `maximum: {hi}` so schema and parser accept the same values", fmt.name()));
            }
            Some(Ty::Int(fmt))
        }
        Some("array") => {
            if let Some(prefix) = s.get("prefixItems") {
                let items = prefix.as_arr().unwrap_or_default();
                if s.get("items") != Some(&J::Bool(false))
                    || s.get("minItems").and_then(J::as_i128) != Some(items.len() as i128)
                {
                    cx.err(ptr, "a tuple needs `items: false` and `minItems` equal to the number of `prefixItems`");
                }
                let tys: Option<Vec<Ty>> = items
                    .iter()
                    .enumerate()
                    .map(|(i, it)| lower_ty(cx, &format!("{ptr}/prefixItems/{i}"), it))
                    .collect();
                return tys.map(Ty::Tuple);
            }
            let Some(items) = s.get("items") else {
                cx.err(ptr, "an array needs `items`");
                return None;
            };
            if items.get("type").and_then(J::as_str) == Some("object") {
                cx.err(
                    &format!("{ptr}/items"),
                    "inline objects are not allowed: name the item type in `$defs`",
                );
                return None;
            }
            let inner = lower_ty(cx, &format!("{ptr}/items"), items)?;
            if inner == Ty::F64 {
                cx.err(
                    &format!("{ptr}/items"),
                    "arrays of numbers are outside the profile",
                );
            }
            Some(Ty::Vec(Box::new(inner)))
        }
        Some("object") => {
            cx.err(
                ptr,
                "inline objects are not allowed: name the type in `$defs`",
            );
            None
        }
        _ => {
            cx.err(ptr, "not a profile property form (string, integer, number, boolean, $ref, array, tuple, x-json)");
            None
        }
    }
}

fn lower_union(cx: &mut Ctx<'_>, ptr: &str, s: &J, u: &J) -> Option<UnionDef> {
    let uptr = format!("{ptr}/x-union");
    let style = match u.get("style").and_then(J::as_str) {
        Some("internal") => UnionStyle::Internal,
        Some("adjacent") => UnionStyle::Adjacent,
        Some("external") => UnionStyle::External,
        _ => {
            cx.err(
                &uptr,
                "`style` must be `internal`, `adjacent` or `external`",
            );
            return None;
        }
    };
    let tag = u
        .get("tag")
        .and_then(J::as_str)
        .unwrap_or_default()
        .to_owned();
    let content = u.get("content").and_then(J::as_str).map(str::to_owned);
    let open = u.get("open") == Some(&J::Bool(true));
    if style != UnionStyle::External && tag.is_empty() {
        cx.err(&uptr, "internal and adjacent unions need `tag`");
    }
    if (style == UnionStyle::Adjacent) != content.is_some() {
        cx.err(
            &uptr,
            "`content` is required for adjacent unions and only for them",
        );
    }
    if style == UnionStyle::External && open {
        cx.err(&uptr, "external unions are closed");
    }
    for (k, _) in s.as_obj().unwrap_or_default() {
        let ok = ["x-union", "description", "oneOf", "x-record", "title"].contains(&k.as_str())
            || (style == UnionStyle::Internal
                && ["type", "properties", "required"].contains(&k.as_str()));
        if !ok {
            cx.err(
                &format!("{ptr}/{}", escape_pointer_token(k)),
                format!("`{k}` is not allowed on a union"),
            );
        }
    }
    let mut consts = Vec::new();
    if let Some(J::Obj(props)) = s.get("properties") {
        for (k, v) in props {
            match v.get("const").and_then(J::as_str) {
                Some(c) => consts.push((k.clone(), c.to_owned())),
                None => cx.err(
                    &format!("{ptr}/properties/{}", escape_pointer_token(k)),
                    "a union declares only the outer tag constant of a nested union",
                ),
            }
        }
    }
    let branches = s.get("oneOf").and_then(J::as_arr).unwrap_or_default();
    if branches.is_empty() {
        cx.err(ptr, "a union needs `oneOf`");
        return None;
    }
    let (known, catch_all) = if open {
        (&branches[..branches.len() - 1], branches.last())
    } else {
        (branches, None)
    };
    let mut variants = Vec::new();
    let mut closed_object = None;
    let other_content_required = match (&content, catch_all) {
        (Some(c), Some(branch)) => branch
            .get("required")
            .and_then(J::as_arr)
            .is_some_and(|r| r.iter().any(|v| v.as_str() == Some(c.as_str()))),
        _ => false,
    };
    for (i, b) in known.iter().enumerate() {
        let bptr = format!("{ptr}/oneOf/{i}");
        match style {
            UnionStyle::Internal => {
                let Some(r) = b.get("$ref").and_then(J::as_str) else {
                    cx.err(
                        &bptr,
                        "an internal union branch is a `$ref` to a variant definition",
                    );
                    continue;
                };
                if let Some(name) = ref_name(cx, &format!("{bptr}/$ref"), r) {
                    // The tag value is filled in by the cross-check from the target's const.
                    variants.push(Variant {
                        tag: String::new(),
                        rust: String::new(),
                        payload: Payload::Def(name),
                        description: String::new(),
                    });
                }
            }
            UnionStyle::Adjacent => {
                let closed = b.get("additionalProperties") == Some(&J::Bool(false));
                if *closed_object.get_or_insert(closed) != closed {
                    cx.err(&bptr, "either every branch of an adjacent union is closed (`additionalProperties: false`) or none is");
                }
                let props = b.get("properties");
                let tag_value = props
                    .and_then(|p| p.get(&tag))
                    .and_then(|t| t.get("const"))
                    .and_then(J::as_str);
                let Some(tag_value) = tag_value else {
                    cx.err(
                        &bptr,
                        format!("an adjacent branch needs `properties.{tag}.const`"),
                    );
                    continue;
                };
                let content_key = content.clone().unwrap_or_default();
                let payload = match props.and_then(|p| p.get(&content_key)) {
                    Some(c) => {
                        match lower_ty(
                            cx,
                            &format!("{bptr}/properties/{}", escape_pointer_token(&content_key)),
                            c,
                        ) {
                            Some(t) => Payload::Ty(t),
                            None => continue,
                        }
                    }
                    None => Payload::Unit,
                };
                let description = props
                    .and_then(|p| p.get(&content_key))
                    .and_then(|c| c.get("description"))
                    .or_else(|| {
                        props
                            .and_then(|p| p.get(&tag))
                            .and_then(|t| t.get("description"))
                    })
                    .and_then(J::as_str)
                    .unwrap_or_default()
                    .to_owned();
                variants.push(Variant {
                    tag: tag_value.to_owned(),
                    rust: variant_name(tag_value),
                    payload,
                    description,
                });
            }
            UnionStyle::External => {
                if let Some(values) = b.get("enum").and_then(J::as_arr) {
                    for v in values.iter().filter_map(J::as_str) {
                        variants.push(Variant {
                            tag: v.to_owned(),
                            rust: variant_name(v),
                            payload: Payload::Unit,
                            description: b
                                .get("description")
                                .and_then(J::as_str)
                                .unwrap_or_default()
                                .to_owned(),
                        });
                    }
                } else if let Some(J::Obj(props)) = b.get("properties") {
                    if props.len() != 1 || b.get("additionalProperties") != Some(&J::Bool(false)) {
                        cx.err(
                            &bptr,
                            "an external data branch is a closed object with exactly one property",
                        );
                        continue;
                    }
                    let (k, v) = &props[0];
                    if let Some(t) = lower_ty(
                        cx,
                        &format!("{bptr}/properties/{}", escape_pointer_token(k)),
                        v,
                    ) {
                        variants.push(Variant {
                            tag: k.clone(),
                            rust: variant_name(k),
                            payload: Payload::Ty(t),
                            description: v
                                .get("description")
                                .and_then(J::as_str)
                                .unwrap_or_default()
                                .to_owned(),
                        });
                    }
                } else {
                    cx.err(
                        &bptr,
                        "an external branch is a string `enum` or a closed one-property object",
                    );
                }
            }
        }
    }
    let mut excluded = None;
    if let Some(c) = catch_all {
        let cptr = format!("{ptr}/oneOf/{}", branches.len() - 1);
        let listed: Option<Vec<String>> = c
            .get("properties")
            .and_then(|p| p.get(&tag))
            .and_then(|t| t.get("not"))
            .and_then(|n| n.get("enum"))
            .and_then(J::as_arr)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            });
        match listed {
            None => cx.err(&cptr, format!("an open union ends with a catch-all branch whose `properties.{tag}` is `{{\"type\": \"string\", \"not\": {{\"enum\": [<known tags>]}}}}`")),
            Some(listed) => {
                // Internal tags are known only once every file is lowered: `resolve` checks those.
                if style == UnionStyle::Adjacent {
                    let known: Vec<String> = variants.iter().map(|v| v.tag.clone()).collect();
                    if sorted(&listed) != sorted(&known) {
                        cx.err(&cptr, format!("the catch-all must exclude exactly the known tags {known:?}, it excludes {listed:?}"));
                    }
                    let closed = c.get("additionalProperties") == Some(&J::Bool(false));
                    if closed_object.is_some_and(|co| co != closed) {
                        cx.err(&cptr, "the catch-all must be closed exactly when the other branches are");
                    }
                }
                excluded = Some(listed);
            }
        }
    }
    Some(UnionDef {
        style,
        tag,
        content,
        open,
        closed_object: closed_object.unwrap_or(false),
        variants,
        consts,
        other_content_required,
        excluded,
    })
}

pub(crate) fn sorted(v: &[String]) -> Vec<String> {
    let mut v = v.to_vec();
    v.sort();
    v
}
