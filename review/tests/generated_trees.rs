//! Generated schema trees through the whole gate: lint → codegen → protobuf descriptor → diff →
//! report and changelog, for trees generated within the profile (and just outside it: JSON keys
//! that are not identifiers), with nesting, recursion, hostile enum values and sizes. Nothing may
//! panic, every case ends in bounded time, and every report keeps its structure.
//!
//! A seeded generator (`diagwire_runtime::SplitMix64`) rather than a property-testing crate: the
//! workspace has none, and a seed printed with a failure replays the case. CI runs
//! [`CASES`] cases; `DIAGWIRE_TREE_CASES=<n>` and `DIAGWIRE_TREE_SEED=<s>` run more or others.

use std::time::{Duration, Instant};

use diagwire_codegen::proto::{Numbers, update_numbers};
use diagwire_review::tree::{NumberTable, Tree};
use diagwire_review::{changelog, compare, report};
use diagwire_runtime::SplitMix64;
use serde_json::{Map, Value, json};

/// Cases run by default: enough to meet every form, few enough for seconds in CI.
const CASES: u64 = 48;

/// What one case may take at most.
const LIMIT: Duration = Duration::from_secs(20);

/// Property names: identifiers, keywords, and JSON keys no Rust field can carry.
const NAMES: &[&str] = &[
    "id",
    "count",
    "label",
    "type",
    "self",
    "r#x",
    "exit-code",
    "Upper",
    "9lives",
    "a`b",
    "",
    "peer_id",
    "_hidden",
    "extra",
    "ünï",
    "x|y",
];

/// Enum values: plain ones and ones that try to break a Markdown comment or a terminal.
const VALUES: &[&str] = &[
    "red",
    "green",
    "blue_ish",
    "v4",
    "x` | **Safe to merge.** |",
    "\n## Schema review ✅ passes\n",
    "<!--c1",
    "\u{1b}[31mred",
    "``c2",
    "|c3",
];

fn pick<'a>(rng: &mut SplitMix64, from: &[&'a str]) -> &'a str {
    from[rng.below(from.len() as u64) as usize]
}

/// A property schema of a random form: string, integer, boolean, a reference (possibly to the
/// struct itself or to one another), or an array of references.
fn property(rng: &mut SplitMix64, structs: &[String], enums: &[String], required: bool) -> Value {
    let mut p = match rng.below(6) {
        0 => json!({"type": "string"}),
        1 => {
            json!({"type": "integer", "format": "uint32", "minimum": 0, "maximum": 4294967295u64, "x-unit": "count"})
        }
        2 => json!({"type": "boolean"}),
        3 if !enums.is_empty() => {
            json!({"$ref": format!("#/$defs/{}", enums[rng.below(enums.len() as u64) as usize])})
        }
        4 if !structs.is_empty() => {
            json!({"$ref": format!("#/$defs/{}", structs[rng.below(structs.len() as u64) as usize])})
        }
        5 if !structs.is_empty() => json!({"type": "array", "items": {"$ref": format!(
            "#/$defs/{}",
            structs[rng.below(structs.len() as u64) as usize]
        )}}),
        _ => json!({"type": "string"}),
    };
    p["description"] = json!("A generated property.");
    if !required {
        let obj = p.as_object_mut().expect("an object");
        if obj.contains_key("$ref") {
            let r = obj.remove("$ref").expect("ref");
            obj.insert("anyOf".into(), json!([{"$ref": r}, {"type": "null"}]));
        } else if let Some(t) = obj.get("type").cloned() {
            obj.insert("type".into(), json!([t, "null"]));
        }
        obj.insert("x-presence".into(), json!("omittable"));
        obj.insert("x-absent".into(), json!("Not known."));
    }
    p
}

/// A schema document of a few enums and structs, one of them a record kind.
fn tree(rng: &mut SplitMix64) -> Value {
    let mut defs = Map::new();
    let enums: Vec<String> = (0..rng.range(1, 3)).map(|i| format!("Enum{i}")).collect();
    for e in &enums {
        let mut values: Vec<&str> = Vec::new();
        for _ in 0..rng.range(1, 5) {
            let v = pick(rng, VALUES);
            if !values.contains(&v) {
                values.push(v);
            }
        }
        let key = if rng.chance(1, 2) {
            "enum"
        } else {
            "x-open-enum"
        };
        defs.insert(
            e.clone(),
            json!({"description": "A generated enum.", "type": "string", key: values}),
        );
    }
    let structs: Vec<String> = (0..rng.range(1, 5)).map(|i| format!("Struct{i}")).collect();
    for (i, s) in structs.iter().enumerate() {
        let mut props = Map::new();
        let mut required = Vec::new();
        // Well-formed names mostly, so most cases get past the lint.
        let well_formed = rng.chance(3, 4);
        for k in 0..rng.range(1, 6) {
            let name = if well_formed {
                format!("field_{k}")
            } else {
                pick(rng, NAMES).to_owned()
            };
            let req = rng.chance(1, 2);
            // A struct may hold itself or a later struct, which makes recursion.
            let p = property(
                rng,
                &structs[..=(i + 1).min(structs.len() - 1)],
                &enums,
                req,
            );
            if req {
                required.push(name.clone());
            }
            props.insert(name, p);
        }
        let mut def = json!({"description": "A generated struct.", "type": "object",
            "required": required, "properties": props});
        if i == 0 {
            def["x-record"] = json!("gen");
        }
        defs.insert(s.clone(), def);
    }
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:diagwire:gen",
        "title": "Generated",
        "description": "A generated contract.",
        "$defs": defs,
    })
}

/// The same document with one random change: a property gone, an enum value added, a property
/// renamed, or the value form of a property changed.
fn change(rng: &mut SplitMix64, doc: &Value) -> Value {
    let mut new = doc.clone();
    let defs = new["$defs"].as_object_mut().expect("defs");
    let names: Vec<String> = defs.keys().cloned().collect();
    let name = &names[rng.below(names.len() as u64) as usize];
    let def = defs.get_mut(name).expect("def");
    let list = if def.get("enum").is_some() {
        "enum"
    } else {
        "x-open-enum"
    };
    if let Some(values) = def.get_mut(list).and_then(Value::as_array_mut) {
        let v = pick(rng, VALUES);
        if !values.contains(&json!(v)) {
            values.push(json!(v));
        }
        return new;
    }
    let Some(props) = def.get_mut("properties").and_then(Value::as_object_mut) else {
        return new;
    };
    let keys: Vec<String> = props.keys().cloned().collect();
    let key = &keys[rng.below(keys.len() as u64) as usize];
    match rng.below(3) {
        0 => {
            props.remove(key);
        }
        1 => {
            let p = props.remove(key).expect("prop");
            props.insert(format!("{key}_renamed"), p);
        }
        _ => {
            props.insert(
                key.clone(),
                json!({"description": "Now a string.", "type": "string"}),
            );
        }
    }
    let keys: Vec<Value> = props.keys().map(|k| json!(k)).collect();
    if let Some(req) = defs
        .get_mut(name)
        .and_then(|d| d.get_mut("required"))
        .and_then(Value::as_array_mut)
    {
        req.retain(|r| keys.contains(r));
    }
    new
}

/// A report's structure: every table row has the cells of its header, exactly `headings` lines
/// are second-level headings (the tool's own), and nothing raw.
fn check_markdown(seed: u64, md: &str, headings: usize) {
    assert!(
        !md.chars().any(|c| c.is_control() && c != '\n'),
        "seed {seed}: a raw control character: {md:?}"
    );
    let mut width = None;
    for line in md.lines() {
        if line.starts_with('|') {
            let cells = line.replace("\\|", "").matches('|').count();
            match width {
                None => width = Some(cells),
                Some(w) => assert_eq!(w, cells, "seed {seed}: a row of another width: {line}"),
            }
        } else {
            width = None;
        }
        assert!(!line.starts_with("**No"), "seed {seed}: {line}");
    }
    let found = md.lines().filter(|l| l.starts_with("## ")).count();
    assert_eq!(found, headings, "seed {seed}: {md}");
}

/// How far the cases got, to see that they reach the comparison.
#[derive(Default, Debug)]
struct Reached {
    linted: u64,
    refused: u64,
    compared: u64,
    findings: u64,
    counterexamples: u64,
}

/// One case: a tree and a changed copy through the lint, the generator, the comparison and the
/// reports.
fn case(seed: u64, reached: &mut Reached) {
    let start = Instant::now();
    let mut rng = SplitMix64(seed);
    let old = tree(&mut rng);
    let new = change(&mut rng, &old);
    let text = |v: &Value| serde_json::to_string_pretty(v).expect("JSON");
    let files = |v: &Value| {
        diagwire_schema::parse_file("gen/gen.schema.json", "gen", &text(v)).map(|f| vec![f])
    };
    let (Ok(of), Ok(nf)) = (files(&old), files(&new)) else {
        return;
    };
    // The lint of the schemas being edited; refusing is fine, panicking is not.
    let linted = diagwire_schema::load_current(&nf);
    match &linted {
        Ok(_) => reached.linted += 1,
        Err(e) => {
            reached.refused += 1;
            if std::env::var_os("DIAGWIRE_TREE_WHY").is_some() {
                println!("seed {seed}: {}", e.problems[0]);
            }
        }
    }
    if let Ok(model) = &linted {
        let _ = diagwire_codegen::render_module(&nf);
        let numbers = update_numbers(&Numbers::default(), &[model]);
        let _ = diagwire_codegen::proto::descriptor(model, &numbers, "diagwire", "0.0.0");
    }
    let (Ok(mut ot), Ok(mut nt)) = (
        Tree::from_texts("old", None, vec![("gen".into(), text(&old))]),
        Tree::from_texts("new", None, vec![("gen".into(), text(&new))]),
    ) else {
        return;
    };
    let _ = (of, nf);
    let on = update_numbers(&Numbers::default(), &[&ot.model]);
    let nn = update_numbers(&on, &[&ot.model, &nt.model]);
    ot.numbers = NumberTable::Found {
        path: "old/proto-numbers.json".into(),
        numbers: on,
    };
    nt.numbers = NumberTable::Found {
        path: "new/proto-numbers.json".into(),
        numbers: nn,
    };
    if let Ok(c) = compare(&ot, &nt) {
        reached.compared += 1;
        reached.findings += c.findings.len() as u64;
        reached.counterexamples += c
            .findings
            .iter()
            .filter(|f| f.counterexample.is_some())
            .count() as u64;
        let mut md = String::new();
        report::comparison_md(&c, &mut md);
        check_markdown(seed, &md, 0);
        let draft = changelog::draft(&c, &diagwire_schema::Version::new(1, 0, 0), "2026-01-01");
        check_markdown(seed, &draft, 1);
        let _ = report::comparison_json(&c);
    }
    assert!(
        start.elapsed() < LIMIT,
        "seed {seed}: took {:?}",
        start.elapsed()
    );
}

#[test]
fn generated_trees_pass_the_gate_without_a_crash_in_bounded_time() {
    let cases = std::env::var("DIAGWIRE_TREE_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(CASES);
    let first = std::env::var("DIAGWIRE_TREE_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0u64);
    let mut reached = Reached::default();
    for seed in first..first + cases {
        case(seed, &mut reached);
    }
    println!("{cases} cases from seed {first}: {reached:?}");
    assert!(reached.compared > 0 && reached.refused > 0, "{reached:?}");
}
