//! How a review's details say what changed: a type as a reader names it, a definition's form, a
//! union's tagging, a bound and an absence discriminator.

use diagwire_schema::model::{DefKind, Ty, UnionDef};

/// A type as a reader would name it.
pub fn ty_name(t: &Ty) -> String {
    match t {
        Ty::Str => "a string".into(),
        Ty::Int(f) => format!("a {}", f.name()),
        Ty::F64 => "a double".into(),
        Ty::Bool => "a boolean".into(),
        Ty::Json => "any JSON".into(),
        Ty::Ref(n) => format!("\u{e000}{n}\u{e001}"),
        Ty::Vec(i) => format!("an array of {}", ty_name(i)),
        Ty::Tuple(ts) => format!(
            "a tuple ({})",
            ts.iter().map(ty_name).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// A definition's form: "a struct", "an open enum", …
pub(super) fn form(k: &DefKind) -> &'static str {
    match k {
        DefKind::Struct(_) => "a struct",
        DefKind::Enum { open: true, .. } => "an open enum",
        DefKind::Enum { .. } => "a closed enum",
        DefKind::Union(_) => "a union",
        DefKind::NodeId => "a byte-array node id",
        DefKind::NodeIdHex => "a hex node id",
        DefKind::Array(_) => "an array record",
    }
}

/// A bound as a reviewer reads it: its value, or "absent".
pub(super) fn stated<T: std::fmt::Display>(bound: Option<T>) -> String {
    bound.map_or_else(|| "absent".to_string(), |b| b.to_string())
}

/// What changed of a field's absence discriminator, as a reader would say it: "source field none →
/// `stats_source`", each part that changed.
pub(super) fn discriminator_change(
    source: (&str, &Option<String>, &Option<String>),
    gap: (&str, &Option<String>, &Option<String>),
) -> String {
    let shown = |v: &Option<String>| {
        v.as_ref()
            .map_or("none".to_owned(), |s| format!("\u{e000}{s}\u{e001}"))
    };
    [source, gap]
        .iter()
        .filter(|(_, o, n)| o != n)
        .map(|(what, o, n)| format!("{what} {} → {}", shown(o), shown(n)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A union's style as the report says it: "an adjacent union (content key `fields`)".
pub(super) fn union_style(u: &UnionDef) -> String {
    let style = format!("{:?}", u.style).to_lowercase();
    let article = if style.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    match &u.content {
        Some(c) => format!("{article} {style} union (content key \u{e000}{c}\u{e001})"),
        None => format!("{article} {style} union"),
    }
}
