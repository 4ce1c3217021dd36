//! The generated `.proto` files compile (with protox, a protobuf compiler in Rust) and say what the
//! codec does: every message of a descriptor exists with the same field numbers, names, types and wire
//! types, every enum value has its number, a union's variants are the members of its `oneof`, and
//! the reserved numbers are the ones the number table retired. One check, run on the current
//! `v1.proto` and on every release's file; doctored copies of `v1.proto` show that it fails when the
//! file and the descriptor disagree.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use diagwire_codegen::proto::snake;
use diagwire_proto::DESCRIPTORS;
use protox::file::{File, FileResolver};
use protox::prost_reflect::{DescriptorPool, FieldDescriptor, Kind, MessageDescriptor};
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The `.proto` file beside the descriptor of `version`, relative to `generated/proto/`.
fn proto_file(version: &str) -> String {
    if version == "current" {
        "diagwire/v1.proto".to_owned()
    } else {
        format!("diagwire/releases/v{}.proto", version.replace('.', "_"))
    }
}

/// The number table the `.proto` of `version` was rendered from: a release's frozen numbers, or
/// the table of every number ever handed out for the current schemas.
fn numbers_of(version: &str) -> Value {
    let path = if version == "current" {
        root().join("schemas/proto-numbers.json")
    } else {
        root().join(format!("schemas/releases/{version}/proto-numbers.json"))
    };
    serde_json::from_slice(&fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap()
}

/// Serves one file from memory, under the name it is opened by.
struct InMemory {
    name: String,
    source: String,
}

impl FileResolver for InMemory {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        if name == self.name {
            File::from_source(name, &self.source)
        } else {
            Err(protox::Error::file_not_found(name))
        }
    }
}

/// Compiles one `.proto` text into a descriptor pool.
fn compile(name: &str, source: &str) -> Result<DescriptorPool, protox::Error> {
    let mut c = protox::Compiler::with_file_resolver(InMemory {
        name: name.to_owned(),
        source: source.to_owned(),
    });
    c.open_file(name)?;
    Ok(c.descriptor_pool())
}

/// A descriptor type as protobuf sees it: repeated or not, and the element kind by name
/// (`uint32`, `sint64`, `bytes`, `message Foo`, `enum Bar`, …).
fn expected_kind(ty: &Value) -> (bool, String) {
    if let Some(inner) = ty.get("list") {
        let (nested, k) = expected_kind(inner);
        assert!(!nested, "a list in a list is wrapped in a message");
        return (true, k);
    }
    if let Some(e) = ty.get("enum").and_then(Value::as_str) {
        return (false, format!("enum {e}"));
    }
    if let Some(m) = ty.get("message").and_then(Value::as_str) {
        return (false, format!("message {m}"));
    }
    let k = match ty.as_str().unwrap_or_default() {
        "string" => "string",
        "u8" | "u16" | "u32" => "uint32",
        "u64" => "uint64",
        "i32" => "sint32",
        "i64" => "sint64",
        "f64" => "double",
        "bool" => "bool",
        "node_id" | "hex_id" | "json" => "bytes",
        other => panic!("descriptor scalar `{other}`"),
    };
    (false, k.to_owned())
}

/// The wire type the codec writes a descriptor type's elements with.
fn codec_wire(kind: &str) -> prost::encoding::WireType {
    use prost::encoding::WireType;
    match kind {
        "double" => WireType::SixtyFourBit,
        "uint32" | "uint64" | "sint32" | "sint64" | "bool" => WireType::Varint,
        k if k.starts_with("enum ") => WireType::Varint,
        _ => WireType::LengthDelimited,
    }
}

fn kind_name(k: &Kind) -> String {
    match k {
        Kind::Message(m) => format!("message {}", m.name()),
        Kind::Enum(e) => format!("enum {}", e.name()),
        Kind::Double => "double".into(),
        Kind::Float => "float".into(),
        Kind::Int32 => "int32".into(),
        Kind::Int64 => "int64".into(),
        Kind::Uint32 => "uint32".into(),
        Kind::Uint64 => "uint64".into(),
        Kind::Sint32 => "sint32".into(),
        Kind::Sint64 => "sint64".into(),
        Kind::Fixed32 => "fixed32".into(),
        Kind::Fixed64 => "fixed64".into(),
        Kind::Sfixed32 => "sfixed32".into(),
        Kind::Sfixed64 => "sfixed64".into(),
        Kind::Bool => "bool".into(),
        Kind::String => "string".into(),
        Kind::Bytes => "bytes".into(),
    }
}

/// What one field of the descriptor says: its number, name, element kind, whether it repeats, whether
/// it is a proto3 `optional`, and the `oneof` it belongs to.
struct Want<'a> {
    number: u32,
    name: String,
    json_key: Option<&'a str>,
    repeated: bool,
    kind: String,
    optional: bool,
    oneof: Option<&'a str>,
}

/// The fields of `m`'s descriptor against `want`; no field may be missing or extra.
fn check_fields(at: &str, m: &MessageDescriptor, want: &[Want<'_>], problems: &mut Vec<String>) {
    let wanted: BTreeSet<u32> = want.iter().map(|w| w.number).collect();
    for f in m.fields() {
        if !wanted.contains(&f.number()) {
            problems.push(format!(
                "{at}: field {} = {} is not in the descriptor",
                f.name(),
                f.number()
            ));
        }
    }
    for w in want {
        let Some(f) = m.get_field(w.number) else {
            problems.push(format!("{at}: no field number {} (`{}`)", w.number, w.name));
            continue;
        };
        check_field(at, &f, w, problems);
    }
}

fn check_field(at: &str, f: &FieldDescriptor, w: &Want<'_>, problems: &mut Vec<String>) {
    let at = format!("{at}.{} = {}", w.name, w.number);
    if f.name() != w.name {
        problems.push(format!("{at}: named `{}`", f.name()));
    }
    if let Some(key) = w.json_key {
        if f.name() != key && f.json_name() != key {
            problems.push(format!(
                "{at}: JSON key `{key}`, but json_name `{}`",
                f.json_name()
            ));
        }
    }
    let kind = f.kind();
    let got = kind_name(&kind);
    if got != w.kind {
        problems.push(format!("{at}: type {got}, the descriptor says {}", w.kind));
    }
    if kind.wire_type() != codec_wire(&w.kind) {
        problems.push(format!(
            "{at}: wire type {:?}, the codec writes {:?}",
            kind.wire_type(),
            codec_wire(&w.kind)
        ));
    }
    if f.is_list() != w.repeated {
        problems.push(format!(
            "{at}: repeated {}, the descriptor says {}",
            f.is_list(),
            w.repeated
        ));
    }
    let packable = codec_wire(&w.kind) != prost::encoding::WireType::LengthDelimited;
    if f.is_list() && packable && !f.is_packed() {
        problems.push(format!("{at}: not packed, the codec packs it"));
    }
    let optional = f.field_descriptor_proto().proto3_optional();
    if optional != w.optional {
        problems.push(format!(
            "{at}: optional {optional}, the descriptor's presence says {}",
            w.optional
        ));
    }
    let oneof = f
        .containing_oneof()
        .filter(|o| !o.is_synthetic())
        .map(|o| o.name().to_owned());
    if oneof.as_deref() != w.oneof {
        problems.push(format!(
            "{at}: in oneof {oneof:?}, the descriptor says {:?}",
            w.oneof
        ));
    }
}

/// The reserved numbers and names of a number table (`{"numbers": …, "reserved": {name: n}}`).
fn reserved_of(table: Option<&Value>) -> (BTreeSet<u32>, BTreeSet<String>) {
    let mut nums = BTreeSet::new();
    let mut names = BTreeSet::new();
    if let Some(r) = table
        .and_then(|t| t.get("reserved"))
        .and_then(Value::as_object)
    {
        for (name, n) in r {
            nums.insert(n.as_u64().unwrap() as u32);
            names.insert(snake(name.split('#').next().unwrap_or(name)));
        }
    }
    (nums, names)
}

fn ranges_to_set(ranges: impl Iterator<Item = std::ops::Range<u32>>) -> BTreeSet<u32> {
    ranges.flat_map(|r| r.start..r.end).collect()
}

/// Every disagreement between the compiled `.proto` (`pool`) and `descriptor` (the descriptor JSON the
/// codec reads), with `numbers` the number table the file was rendered from.
fn disagreements(pool: &DescriptorPool, descriptor: &Value, numbers: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let package = descriptor["package"].as_str().unwrap();
    let absent_keys = descriptor["absent_keys"].as_u64().unwrap() as u32;
    let unknown_json = descriptor["unknown_json"].as_u64().unwrap() as u32;
    let messages = descriptor["messages"].as_object().unwrap();
    let enums = descriptor["enums"].as_object().unwrap();
    let full = |n: &str| format!("{package}.{n}");

    for m in pool.all_messages() {
        if m.name() != "Unit" && !messages.contains_key(m.name()) {
            problems.push(format!("message {} is not in the descriptor", m.name()));
        }
    }
    for e in pool.all_enums() {
        if !enums.contains_key(e.name()) {
            problems.push(format!("enum {} is not in the descriptor", e.name()));
        }
    }
    match pool.get_message_by_name(&full("Unit")) {
        Some(u) if u.fields().len() == 0 => {}
        _ => problems.push("no empty message `Unit` for unit variants".to_owned()),
    }
    for (kind, msg) in descriptor["records"].as_object().unwrap() {
        if pool
            .get_message_by_name(&full(msg.as_str().unwrap()))
            .is_none()
        {
            problems.push(format!("record kind `{kind}`: no message {msg}"));
        }
    }

    for (name, shape) in messages {
        let Some(m) = pool.get_message_by_name(&full(name)) else {
            problems.push(format!("message {name} of the descriptor is missing"));
            continue;
        };
        let table = numbers["messages"].get(name.as_str());
        let (reserved, reserved_names) = reserved_of(table);
        let mut want = Vec::new();
        if let Some(st) = shape.get("struct") {
            for f in st["fields"].as_array().unwrap() {
                let key = f["key"].as_str().unwrap();
                let flatten = f.get("flatten").and_then(Value::as_bool).unwrap_or(false);
                let presence = f["presence"].as_str().unwrap();
                let (repeated, kind) = expected_kind(&f["ty"]);
                let scalar_like = !repeated && !kind.starts_with("message ");
                want.push(Want {
                    number: f["number"].as_u64().unwrap() as u32,
                    name: if flatten {
                        snake(&key[1..])
                    } else {
                        snake(key)
                    },
                    json_key: (!flatten).then_some(key),
                    repeated,
                    optional: scalar_like && matches!(presence, "nullable" | "omittable"),
                    kind,
                    oneof: None,
                });
            }
            for (number, name, repeated, kind) in [
                (absent_keys, "absent_keys", true, "string"),
                (unknown_json, "unknown_json", false, "bytes"),
            ] {
                want.push(Want {
                    number,
                    name: name.to_owned(),
                    json_key: None,
                    repeated,
                    kind: kind.to_owned(),
                    optional: false,
                    oneof: None,
                });
            }
        } else if let Some(u) = shape.get("union") {
            let mut variants: Vec<&Value> = u["variants"].as_array().unwrap().iter().collect();
            variants.sort_by_key(|v| v["number"].as_u64());
            let mut used: Vec<String> = Vec::new();
            for v in variants {
                let number = v["number"].as_u64().unwrap() as u32;
                let mut member = snake(v["tag"].as_str().unwrap());
                if used.contains(&member) {
                    member = format!("{member}_{number}");
                }
                used.push(member.clone());
                let (repeated, kind) = if v["ty"].is_null() {
                    (false, "message Unit".to_owned())
                } else {
                    expected_kind(&v["ty"])
                };
                want.push(Want {
                    number,
                    name: member,
                    json_key: None,
                    repeated,
                    kind,
                    optional: false,
                    oneof: Some("variant"),
                });
            }
            want.push(Want {
                number: unknown_json,
                name: "unknown_json".to_owned(),
                json_key: None,
                repeated: false,
                kind: "bytes".to_owned(),
                optional: false,
                oneof: Some("variant"),
            });
            let oneofs: Vec<String> = m
                .oneofs()
                .filter(|o| !o.is_synthetic())
                .map(|o| o.name().to_owned())
                .collect();
            if oneofs != ["variant"] {
                problems.push(format!("{name}: oneofs {oneofs:?}, a union has `variant`"));
            }
        } else if let Some(w) = shape.get("wrapper") {
            let (repeated, kind) = expected_kind(w);
            want.push(Want {
                number: 1,
                name: "items".to_owned(),
                json_key: None,
                repeated,
                kind,
                optional: false,
                oneof: None,
            });
        } else if let Some(t) = shape.get("tuple").and_then(Value::as_array) {
            for (i, ty) in t.iter().enumerate() {
                let (repeated, kind) = expected_kind(ty);
                want.push(Want {
                    number: i as u32 + 1,
                    name: format!("item{i}"),
                    json_key: None,
                    repeated,
                    kind,
                    optional: false,
                    oneof: None,
                });
            }
        } else {
            problems.push(format!("{name}: a descriptor message of no known shape"));
            continue;
        }
        check_fields(name, &m, &want, &mut problems);
        let got = ranges_to_set(m.reserved_ranges());
        if got != reserved {
            problems.push(format!(
                "{name}: reserved numbers {got:?}, the number table retired {reserved:?}"
            ));
        }
        let got: BTreeSet<String> = m.reserved_names().map(str::to_owned).collect();
        if got != reserved_names {
            problems.push(format!(
                "{name}: reserved names {got:?}, the number table retired {reserved_names:?}"
            ));
        }
    }

    for (name, values) in enums {
        let Some(e) = pool.get_enum_by_name(&full(name)) else {
            problems.push(format!("enum {name} of the descriptor is missing"));
            continue;
        };
        let prefix = snake(name).to_uppercase();
        let mut want: Vec<(u32, &str)> = values
            .as_object()
            .unwrap()
            .iter()
            .map(|(v, n)| (n.as_u64().unwrap() as u32, v.as_str()))
            .collect();
        want.sort();
        let mut expected: BTreeMap<i32, String> = BTreeMap::new();
        expected.insert(0, format!("{prefix}_UNSPECIFIED"));
        let mut used: Vec<String> = Vec::new();
        for (n, v) in want {
            let mut value = format!("{prefix}_{}", snake(v).to_uppercase());
            if used.contains(&value) {
                value = format!("{value}_{n}");
            }
            used.push(value.clone());
            if expected.insert(n as i32, value).is_some() {
                problems.push(format!("enum {name}: number {n} twice in the descriptor"));
            }
        }
        let got: BTreeMap<i32, String> = e
            .values()
            .map(|v| (v.number(), v.name().to_owned()))
            .collect();
        for (n, v) in &expected {
            match got.get(n) {
                Some(g) if g == v => {}
                Some(g) => {
                    problems.push(format!("enum {name}: {n} is {g}, the descriptor says {v}"))
                }
                None => problems.push(format!("enum {name}: no value {n} ({v})")),
            }
        }
        for (n, g) in &got {
            if !expected.contains_key(n) {
                problems.push(format!(
                    "enum {name}: value {g} = {n} is not in the descriptor"
                ));
            }
        }
        let (reserved, _) = reserved_of(numbers["enums"].get(name.as_str()));
        let got: BTreeSet<u32> = e
            .enum_descriptor_proto()
            .reserved_range
            .iter()
            // An enum's reserved range is inclusive.
            .flat_map(|r| r.start() as u32..=r.end() as u32)
            .collect();
        if got != reserved {
            problems.push(format!(
                "enum {name}: reserved numbers {got:?}, the number table retired {reserved:?}"
            ));
        }
    }
    problems
}

/// The descriptor of `version` the codec reads, as JSON.
fn descriptor_json(version: &str) -> Value {
    DESCRIPTORS
        .iter()
        .find(|(v, _)| *v == version)
        .map(|(_, d)| d.to_json())
        .unwrap_or_else(|| panic!("no descriptor {version}"))
}

/// Compiles the `.proto` of `version` (its text, or `doctored` instead) and lists where it and the
/// descriptor disagree.
fn check(version: &str, doctored: Option<&str>) -> Vec<String> {
    let name = proto_file(version);
    let path = root().join("generated/proto").join(&name);
    let text = match doctored {
        Some(t) => t.to_owned(),
        None => fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    };
    let pool = compile(&name, &text).unwrap_or_else(|e| panic!("{name} does not compile: {e:?}"));
    let descriptor = descriptor_json(version);
    disagreements(&pool, &descriptor, &numbers_of(version))
}

#[test]
fn every_generated_proto_compiles_and_agrees_with_its_descriptor() {
    let mut failed = Vec::new();
    for (version, _) in DESCRIPTORS {
        let problems = check(version, None);
        let descriptor = descriptor_json(version);
        println!(
            "{}: {} messages, {} enums, {} disagreement(s)",
            proto_file(version),
            descriptor["messages"].as_object().unwrap().len(),
            descriptor["enums"].as_object().unwrap().len(),
            problems.len()
        );
        if !problems.is_empty() {
            failed.push(format!(
                "{}:\n  {}",
                proto_file(version),
                problems.join("\n  ")
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn every_proto_file_has_a_descriptor() {
    let dir = root().join("generated/proto");
    let mut on_disk = BTreeSet::new();
    for sub in ["diagwire", "diagwire/releases"] {
        for e in fs::read_dir(dir.join(sub)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "proto") {
                on_disk.insert(format!(
                    "{sub}/{}",
                    p.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    let with_descriptor: BTreeSet<String> =
        DESCRIPTORS.iter().map(|(v, _)| proto_file(v)).collect();
    assert_eq!(on_disk, with_descriptor);
    assert!(
        with_descriptor.len() >= 3,
        "the current file and the releases"
    );
}

/// `v1.proto` with the first line that `pick` accepts replaced by `edit` of it.
fn doctor(pick: impl Fn(&str) -> bool, edit: impl Fn(&str) -> String) -> String {
    let text = fs::read_to_string(root().join("generated/proto/diagwire/v1.proto")).unwrap();
    let mut done = false;
    let out: Vec<String> = text
        .lines()
        .map(|l| {
            if !done && pick(l) {
                done = true;
                edit(l)
            } else {
                l.to_owned()
            }
        })
        .collect();
    assert!(done, "no line to doctor");
    out.join("\n") + "\n"
}

#[track_caller]
fn assert_caught(what: &str, doctored: &str, expect: &str) {
    let problems = check("current", Some(doctored));
    assert!(
        problems.iter().any(|p| p.contains(expect)),
        "{what}: expected a disagreement mentioning `{expect}`, got {problems:?}"
    );
}

/// A field line of a message (not of a `oneof`): `  [optional] type name = N;`.
fn field_line(l: &str) -> bool {
    l.starts_with("  ") && !l.starts_with("   ") && l.trim_end().ends_with(';') && l.contains(" = ")
}

#[test]
fn a_proto_that_disagrees_with_the_descriptor_is_caught() {
    // A renumbered field.
    let t = doctor(
        |l| field_line(l) && l.contains("uint64 ") && !l.contains("2046") && !l.contains("2047"),
        |l| {
            let (head, _) = l.rsplit_once(" = ").unwrap();
            format!("{head} = 1999;")
        },
    );
    assert_caught("renumbered field", &t, "1999 is not in the descriptor");
    // A zigzag integer declared as a plain one (same wire type, other values).
    let t = doctor(
        |l| field_line(l) && l.contains(" sint32 "),
        |l| l.replacen(" sint32 ", " int32 ", 1),
    );
    assert_caught(
        "sint32 as int32",
        &t,
        "type int32, the descriptor says sint32",
    );
    // A double declared as a float (another wire type).
    let t = doctor(
        |l| field_line(l) && l.contains(" double "),
        |l| l.replacen(" double ", " float ", 1),
    );
    assert_caught("double as float", &t, "wire type ThirtyTwoBit");
    // An optional scalar that lost its presence.
    let t = doctor(
        |l| field_line(l) && l.trim_start().starts_with("optional "),
        |l| l.replacen("optional ", "", 1),
    );
    assert_caught("optional dropped", &t, "optional false");
    // A renamed field.
    let t = doctor(
        |l| field_line(l) && l.contains(" absent_keys = "),
        |l| l.replacen(" absent_keys = ", " absent = ", 1),
    );
    assert_caught("renamed field", &t, "named `absent`");
    // An enum value with another number.
    let t = doctor(
        |l| {
            let t = l.trim();
            l.starts_with("  ")
                && !t.contains("UNSPECIFIED")
                && t.ends_with(" = 1;")
                && t.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        },
        |l| l.replacen(" = 1;", " = 99;", 1),
    );
    assert_caught("renumbered enum value", &t, "= 99 is not in the descriptor");
    // A union variant moved out of its oneof (the closing brace moved above it).
    let text = fs::read_to_string(root().join("generated/proto/diagwire/v1.proto")).unwrap();
    let start = text.find("  oneof variant {\n").unwrap();
    let close = start + text[start..].find("\n  }\n").unwrap();
    let last_member = text[start..close]
        .rfind("\n    bytes unknown_json")
        .unwrap()
        + start;
    let t = format!(
        "{}\n  }}\n  {}{}",
        &text[..last_member],
        text[last_member + 1..close].trim_start(),
        &text[close + 4..]
    );
    assert_caught("member outside the oneof", &t, "in oneof None");
    // A number reserved that the table never retired.
    let t = doctor(
        |l| l.trim() == "repeated string absent_keys = 2046;",
        |l| format!("  reserved 1500;\n{l}"),
    );
    assert_caught("stray reserved number", &t, "reserved numbers {1500}");
    // The unmodified file agrees.
    assert_eq!(check("current", None), Vec::<String>::new());
}

#[test]
fn a_proto_with_a_syntax_error_does_not_compile() {
    let t = doctor(
        |l| l.trim() == "repeated string absent_keys = 2046;",
        |l| l.replacen(';', "", 1),
    );
    assert!(compile("diagwire/v1.proto", &t).is_err());
}
