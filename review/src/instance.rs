//! Records built from a model: the smallest valid record of a kind that reaches a given place (a
//! field of a struct, a value of an enum, a variant of a union), which a counterexample then bends.
//!
//! Written here rather than with `arbitrary` because the trees a review compares need not have
//! generated types: a scratch copy of a release has only its schemas.

use std::cell::RefCell;
use std::collections::{BTreeSet, VecDeque};

use diagwire_runtime::shape::escape_pointer_token;
use diagwire_schema::model::{Def, DefKind, Model, Payload, Presence, StructDef, Ty, UnionStyle};
use serde_json::{Map, Value, json};

/// How deep references are followed when building a value.
const MAX_DEPTH: usize = 24;

/// The most values (objects, arrays and scalars) one builder makes: a counterexample stays small
/// whatever the schemas, even when a definition holds many others that each hold many more.
pub const MAX_VALUES: usize = 20_000;

/// Why a builder could not build a complete value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incomplete {
    /// The definition holds itself through required fields, tuple items or first variants: no
    /// finite record of it exists, so no reader can be shown one.
    Recursive(String),
    /// The value would be larger than [`MAX_VALUES`].
    TooLarge,
}

impl std::fmt::Display for Incomplete {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Incomplete::Recursive(def) => write!(
                f,
                "recursive: `{def}` holds itself in a required place, so no finite record of it exists and no counterexample is needed"
            ),
            Incomplete::TooLarge => write!(
                f,
                "too large: the smallest record would hold more than {MAX_VALUES} values, so no counterexample is built"
            ),
        }
    }
}

/// What a builder has seen while building: the definitions it is inside, how many values it
/// made, and whether a value came out incomplete.
#[derive(Default)]
struct Progress {
    inside: Vec<String>,
    values: usize,
    incomplete: Option<Incomplete>,
}

/// One step from a record's root down to the place a counterexample is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hop {
    /// Into the value of a struct's field.
    Field(String, String),
    /// Into a union's variant, by tag.
    Variant(String, String),
    /// Into an array's item.
    Item,
}

/// The place a route ends at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A struct definition (the record holds one object of it).
    Def(String),
    /// A value position whose type is this definition (an enum, a union).
    TypeUse(String),
}

/// Builds records from a model.
///
/// Building is bounded: a definition met again inside itself stops the expansion (it is
/// [`Incomplete::Recursive`]), and no builder makes more than [`MAX_VALUES`] values
/// ([`Incomplete::TooLarge`]); [`Builder::incomplete`] says whether either happened.
pub struct Builder<'m> {
    /// The model.
    pub model: &'m Model,
    progress: RefCell<Progress>,
}

impl<'m> Builder<'m> {
    /// A builder over `model`.
    pub fn new(model: &'m Model) -> Self {
        Builder {
            model,
            progress: RefCell::new(Progress::default()),
        }
    }

    /// Why a value this builder built is not a complete record, if one is not.
    pub fn incomplete(&self) -> Option<Incomplete> {
        self.progress.borrow().incomplete.clone()
    }

    fn give_up(&self, why: Incomplete) -> Value {
        let mut p = self.progress.borrow_mut();
        if p.incomplete.is_none() {
            p.incomplete = Some(why);
        }
        Value::Null
    }

    /// Counts one more value; false once the budget is spent.
    fn count(&self) -> bool {
        let mut p = self.progress.borrow_mut();
        p.values += 1;
        p.values <= MAX_VALUES && p.incomplete.is_none()
    }

    /// The smallest valid value of a type.
    pub fn value(&self, ty: &Ty) -> Value {
        self.value_at(ty, 0)
    }

    fn value_at(&self, ty: &Ty, depth: usize) -> Value {
        if !self.count() {
            return self.give_up(Incomplete::TooLarge);
        }
        match ty {
            Ty::Str => json!("x"),
            Ty::Int(_) => json!(0),
            Ty::F64 => json!(0.5),
            Ty::Bool => json!(false),
            Ty::Json => json!({}),
            Ty::Vec(_) => json!([]),
            Ty::Tuple(ts) => Value::Array(ts.iter().map(|t| self.value_at(t, depth + 1)).collect()),
            Ty::Ref(n) => self.def_value(n, depth + 1),
        }
    }

    /// The smallest valid value of a definition.
    pub fn def_value(&self, name: &str, depth: usize) -> Value {
        let Some(def) = self.model.def(name) else {
            return Value::Null;
        };
        if depth > MAX_DEPTH {
            return self.give_up(Incomplete::TooLarge);
        }
        if !self.count() {
            return self.give_up(Incomplete::TooLarge);
        }
        if self.progress.borrow().inside.iter().any(|d| d == name) {
            return self.give_up(Incomplete::Recursive(name.to_owned()));
        }
        self.progress.borrow_mut().inside.push(name.to_owned());
        let value = self.def_kind_value(name, &def.kind, depth);
        self.progress.borrow_mut().inside.pop();
        value
    }

    fn def_kind_value(&self, name: &str, kind: &DefKind, depth: usize) -> Value {
        match kind {
            DefKind::Struct(s) => Value::Object(self.struct_value(s, depth)),
            DefKind::Enum { values, .. } => values.first().map_or(Value::Null, |v| json!(v)),
            DefKind::Union(u) => self.variant_value(
                name,
                u.variants.first().map(|v| v.tag.as_str()).unwrap_or(""),
                depth,
            ),
            DefKind::NodeId => Value::Array(vec![json!(0); 32]),
            DefKind::NodeIdHex => json!("0".repeat(64)),
            DefKind::Array(_) => json!([]),
        }
    }

    /// The required keys of a struct (its tag constants and its absorbed union's first variant
    /// included).
    pub fn struct_value(&self, s: &StructDef, depth: usize) -> Map<String, Value> {
        let mut map = Map::new();
        for (k, v) in &s.consts {
            map.insert(k.clone(), json!(v));
        }
        // The canonical form: required keys with a value, nullable ones as `null`, defaulted
        // ones at their default; omittable and skip-default ones left out.
        for p in &s.props {
            match p.presence {
                Presence::Required => {
                    map.insert(p.name.clone(), self.value_at(&p.ty, depth + 1));
                }
                Presence::Nullable => {
                    map.insert(p.name.clone(), Value::Null);
                }
                Presence::Default => {
                    let zero = p.default.as_ref().map_or(Value::Null, |d| d.to_value());
                    map.insert(p.name.clone(), zero);
                }
                Presence::Omittable | Presence::SkipDefault => {}
            }
        }
        if let Some(fl) = &s.flatten
            && let Value::Object(inner) = self.def_value(&fl.union, depth + 1)
        {
            map.extend(inner);
        }
        map
    }

    /// A union's variant of that tag, as a value.
    pub fn variant_value(&self, union: &str, tag: &str, depth: usize) -> Value {
        let Some(DefKind::Union(u)) = self.model.def(union).map(|d| &d.kind) else {
            return Value::Null;
        };
        let Some(v) = u.variants.iter().find(|v| v.tag == tag) else {
            // An unknown tag: an object with only the tag (unit) for the styles that allow it.
            return match u.style {
                UnionStyle::External => json!(tag),
                _ => json!({ u.tag.clone(): tag }),
            };
        };
        match (&u.style, &v.payload) {
            (UnionStyle::Internal, Payload::Def(d)) => {
                let mut inner = self.def_value(d, depth + 1);
                if let Value::Object(m) = &mut inner {
                    m.insert(u.tag.clone(), json!(tag));
                }
                inner
            }
            (UnionStyle::Adjacent, Payload::Ty(t)) => {
                json!({ u.tag.clone(): tag, u.content.clone().unwrap_or_default(): self.value_at(t, depth + 1) })
            }
            (UnionStyle::Adjacent, _) => json!({ u.tag.clone(): tag }),
            (UnionStyle::External, Payload::Ty(t)) => json!({ tag: self.value_at(t, depth + 1) }),
            (UnionStyle::External, _) => json!(tag),
            (UnionStyle::Internal, _) => json!({ u.tag.clone(): tag }),
        }
    }

    /// A route from some record kind's root to `target`, shortest first: the record kind, its
    /// definition and the hops.
    pub fn route(&self, target: &Target) -> Option<(String, String, Vec<Hop>)> {
        let mut queue: VecDeque<(String, String, Vec<Hop>)> = VecDeque::new();
        for (kind, def) in self.model.records() {
            queue.push_back((kind.to_owned(), def.name.clone(), vec![]));
        }
        let mut seen = BTreeSet::new();
        while let Some((kind, def, hops)) = queue.pop_front() {
            if let Target::Def(t) = target
                && *t == def
            {
                let root = self.record_def(&kind);
                return Some((kind, root, hops));
            }
            if !seen.insert(def.clone()) {
                continue;
            }
            let Some(d) = self.model.def(&def) else {
                continue;
            };
            for (hop, ty) in self.children(d) {
                let mut more = hops.clone();
                more.extend(hop);
                if let Target::TypeUse(t) = target
                    && leaf_ref(&ty).is_some_and(|(r, _)| r == t)
                {
                    let (_, items) = leaf_ref(&ty).unwrap_or_default();
                    more.extend(std::iter::repeat_n(Hop::Item, items));
                    let root = self.record_def(&kind);
                    return Some((kind, root, more));
                }
                if let Some((r, items)) = leaf_ref(&ty) {
                    more.extend(std::iter::repeat_n(Hop::Item, items));
                    queue.push_back((kind.clone(), r.to_owned(), more));
                }
            }
        }
        None
    }

    fn record_def(&self, kind: &str) -> String {
        self.model
            .records()
            .into_iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, d)| d.name.clone())
            .unwrap_or_default()
    }

    /// The places inside a definition a route can go next, each with the type found there.
    fn children(&self, d: &Def) -> Vec<(Vec<Hop>, Ty)> {
        let mut out = Vec::new();
        match &d.kind {
            DefKind::Struct(s) => {
                for p in &s.props {
                    out.push((
                        vec![Hop::Field(d.name.clone(), p.name.clone())],
                        p.ty.clone(),
                    ));
                }
                if let Some(fl) = &s.flatten {
                    // The union's keys sit at this object's level: no hop of their own.
                    out.push((vec![], Ty::Ref(fl.union.clone())));
                }
            }
            DefKind::Union(u) => {
                for v in &u.variants {
                    match &v.payload {
                        Payload::Def(n) => out.push((
                            vec![Hop::Variant(d.name.clone(), v.tag.clone())],
                            Ty::Ref(n.clone()),
                        )),
                        Payload::Ty(t) => {
                            out.push((vec![Hop::Variant(d.name.clone(), v.tag.clone())], t.clone()))
                        }
                        Payload::Unit => {}
                    }
                }
            }
            DefKind::Array(t) => out.push((vec![Hop::Item], t.clone())),
            _ => {}
        }
        out
    }

    /// A record of `def` (a record kind's definition) that follows `hops`: the record and the JSON
    /// pointer of the place the route ends at.
    pub fn along(&self, def: &str, hops: &[Hop]) -> (Value, String) {
        self.build(&Ty::Ref(def.to_owned()), hops, 0)
    }

    fn build(&self, ty: &Ty, hops: &[Hop], depth: usize) -> (Value, String) {
        let Some((hop, rest)) = hops.split_first() else {
            return (self.value_at(ty, depth), String::new());
        };
        match (hop, ty) {
            (Hop::Item, Ty::Vec(item)) => {
                let (v, p) = self.build(item, rest, depth + 1);
                (Value::Array(vec![v]), format!("/0{p}"))
            }
            (Hop::Item, Ty::Ref(n)) => match self.model.def(n).map(|d| &d.kind) {
                Some(DefKind::Array(item)) => {
                    let (v, p) = self.build(item, rest, depth + 1);
                    (Value::Array(vec![v]), format!("/0{p}"))
                }
                _ => (self.value_at(ty, depth), String::new()),
            },
            (Hop::Field(owner, field), Ty::Ref(n)) if owner == n => {
                let Some(DefKind::Struct(s)) = self.model.def(n).map(|d| &d.kind) else {
                    return (self.value_at(ty, depth), String::new());
                };
                let mut base = self.struct_value(s, depth);
                let field_ty = s
                    .props
                    .iter()
                    .find(|p| p.name == *field)
                    .map(|p| p.ty.clone());
                let Some(field_ty) = field_ty else {
                    return (Value::Object(base), String::new());
                };
                let (v, p) = self.build(&field_ty, rest, depth + 1);
                base.insert(field.clone(), v);
                (
                    Value::Object(base),
                    format!("/{}{p}", escape_pointer_token(field)),
                )
            }
            (Hop::Variant(union, tag), Ty::Ref(n)) if union == n => {
                let Some(DefKind::Union(u)) = self.model.def(union).map(|d| &d.kind) else {
                    return (self.value_at(ty, depth), String::new());
                };
                let Some(variant) = u.variants.iter().find(|v| v.tag == *tag) else {
                    return (self.variant_value(union, tag, depth), String::new());
                };
                match (&u.style, &variant.payload) {
                    (UnionStyle::Internal, Payload::Def(d)) => {
                        let (mut v, p) = self.build(&Ty::Ref(d.clone()), rest, depth + 1);
                        if let Value::Object(m) = &mut v {
                            m.insert(u.tag.clone(), json!(tag));
                        }
                        (v, p)
                    }
                    (UnionStyle::Adjacent, Payload::Ty(t)) => {
                        let content = u.content.clone().unwrap_or_default();
                        let (v, p) = self.build(t, rest, depth + 1);
                        (
                            json!({ u.tag.clone(): tag, content.clone(): v }),
                            format!("/{}{p}", escape_pointer_token(&content)),
                        )
                    }
                    (UnionStyle::External, Payload::Ty(t)) => {
                        let (v, p) = self.build(t, rest, depth + 1);
                        (
                            json!({ tag.clone(): v }),
                            format!("/{}{p}", escape_pointer_token(tag)),
                        )
                    }
                    _ => (self.variant_value(union, tag, depth), String::new()),
                }
            }
            (Hop::Variant(union, _), Ty::Ref(n)) => {
                // `n` absorbs `union`: the variant's keys sit at `n`'s level.
                let Some(DefKind::Struct(s)) = self.model.def(n).map(|d| &d.kind) else {
                    return (self.value_at(ty, depth), String::new());
                };
                let mut base = Map::new();
                for (k, v) in &s.consts {
                    base.insert(k.clone(), json!(v));
                }
                let own = StructDef {
                    props: s.props.clone(),
                    consts: vec![],
                    flatten: None,
                };
                base.extend(self.struct_value(&own, depth));
                let (inner, p) = self.build(&Ty::Ref(union.clone()), hops, depth + 1);
                if let Value::Object(inner) = inner {
                    base.extend(inner);
                }
                (Value::Object(base), p)
            }
            _ => (self.value_at(ty, depth), String::new()),
        }
    }
}

/// The definition a type finally names, through arrays: (name, number of array levels).
fn leaf_ref(ty: &Ty) -> Option<(&str, usize)> {
    match ty {
        Ty::Ref(n) => Some((n, 0)),
        Ty::Vec(i) => leaf_ref(i).map(|(n, d)| (n, d + 1)),
        _ => None,
    }
}
