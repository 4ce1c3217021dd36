//! The body of the fuzz target `schema_review`: bytes become a schema tree, which goes through the
//! lint and is compared with the newest frozen release the way a pull request's schemas are, and
//! the report is rendered. Whatever the bytes, nothing panics, the comparison ends, and the report
//! holds no raw control character and no table row of another width.
//!
//! The input: the first byte picks one of the release's schema files, the rest splits on `0x00`
//! into at most four parts; the first part replaces the picked file's text, each other part is a
//! file of its own (`fuzz1.schema.json`, …). Non-UTF-8 parts are taken lossily, so the fuzzer
//! reaches the JSON and profile checks instead of stopping at the text.

use std::path::Path;
use std::sync::OnceLock;

use diagwire_codegen::proto::update_numbers;
use diagwire_review::tree::{NumberTable, Tree};
use diagwire_review::{compare, report};

/// The newest frozen release, loaded once: its schema texts by stem and its tree.
fn release() -> &'static (Vec<(String, String)>, Tree) {
    static R: OnceLock<(Vec<(String, String)>, Tree)> = OnceLock::new();
    R.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let newest = diagwire_schema::released_versions(&root)
            .expect("releases")
            .pop()
            .expect("a release");
        let dir = root.join(format!("schemas/releases/{newest}"));
        let tree = Tree::load_dir(&dir).expect("the newest release loads");
        (tree.texts.clone(), tree)
    })
}

/// The tree the bytes describe, as `(stem, text)`.
pub fn texts_of(data: &[u8]) -> Vec<(String, String)> {
    let (base, _) = release();
    let mut texts = base.clone();
    let Some((&pick, rest)) = data.split_first() else {
        return texts;
    };
    let mut parts = rest.splitn(4, |b| *b == 0);
    let i = usize::from(pick) % texts.len();
    if let Some(first) = parts.next() {
        texts[i].1 = String::from_utf8_lossy(first).into_owned();
    }
    for (n, part) in parts.enumerate() {
        texts.push((
            format!("fuzz{}", n + 1),
            String::from_utf8_lossy(part).into_owned(),
        ));
    }
    texts
}

/// Lints the tree of `data`, compares it with the newest release (JSON and protobuf forms) and
/// renders the report and the changelog draft, checking their structure.
pub fn schema_review(data: &[u8]) {
    let (_, old) = release();
    let texts = texts_of(data);
    // The lint of the schemas being edited, as the generator runs it.
    let files: Result<Vec<_>, _> = texts
        .iter()
        .map(|(stem, text)| {
            diagwire_schema::parse_file(&format!("fuzz/{stem}.schema.json"), stem, text)
        })
        .collect();
    if let Ok(files) = files {
        let _ = diagwire_schema::load_current(&files);
    }
    let Ok(mut new) = Tree::from_texts("fuzz", None, texts) else {
        return;
    };
    if let NumberTable::Found { numbers, .. } = &old.numbers {
        new.numbers = NumberTable::Found {
            path: "fuzz/proto-numbers.json".into(),
            numbers: update_numbers(numbers, &[&old.model, &new.model]),
        };
    }
    let Ok(c) = compare(old, &new) else {
        return;
    };
    let mut md = String::new();
    report::comparison_md(&c, &mut md);
    assert_markdown(&md);
    let _ = report::comparison_json(&c);
}

/// No raw control character, and every table row as wide as its table's header.
pub fn assert_markdown(md: &str) {
    assert!(
        !md.chars().any(|c| c.is_control() && c != '\n'),
        "a raw control character in the report: {md:?}"
    );
    let mut width = None;
    for line in md.lines() {
        if line.starts_with('|') {
            let cells = line.replace("\\|", "").matches('|').count();
            assert_eq!(*width.get_or_insert(cells), cells, "a forged cell: {line}");
        } else {
            width = None;
        }
    }
}
