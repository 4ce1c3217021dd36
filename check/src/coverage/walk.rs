//! Every struct instance of a record read as a [`Tape`], with the contract's shape table: the one
//! walk of a record's instances in this crate (coverage and the rules that read snapshot blocks),
//! without building a `serde_json::Value` of the record.
//!
//! The walk follows the generated types' rules: an internal union's variant shares its object with
//! the struct that absorbs it, an adjacent union's payload sits under its content key, an external
//! union is a string or a one-key object. Its tests hold it to serde_json's reading of the same
//! records: the unknown keys are those the library's walk over a value finds
//! (`diagwire::shape::unknown_keys`), and each field read is the value's.
//!
//! The rules walk snapshot blocks with it too, told by [`Only`] which struct types they read: the
//! walk then reports those alone and goes only into values whose type can hold one.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::OnceLock;

use diagwire::shape::{FieldShape, PayloadShape, TypeKind, TypeShape, UnionStyle, ValueShape};
use diagwire::v1::CONTRACT;

use super::tape::Tape;
use crate::blocks::GAP_LIST;

/// The gap list that applies to an instance: none, an empty one (the enclosing struct has the
/// field but no array in it), or the array at a tape index.
type Gaps = Option<Option<usize>>;

/// One struct instance found in a tape.
pub struct Instance<'a, 't, 'p> {
    /// The struct's type name.
    pub type_name: &'static str,
    /// Its fields.
    pub fields: &'static [FieldShape],
    tape: &'a Tape<'t>,
    obj: usize,
    /// The value of each field (by the field's index), if the object has it.
    slots: &'a [Option<usize>],
    /// Whether a key of the object is one the contract does not name here.
    unknown: bool,
    ptr: Ptr<'p>,
    gaps: Gaps,
    consts: &'static [(&'static str, &'static str)],
    outer: &'p [&'static str],
    adjacent: Option<(&'static str, Option<&'static str>)>,
}

/// What an object holds under a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// The key is not there.
    Absent,
    /// Its value is `null`.
    Null,
    /// Any other value.
    Present,
}

impl<'t> Instance<'_, 't, '_> {
    /// What the object holds under the field at `index` of [`Instance::fields`].
    pub fn slot(&self, index: usize) -> Slot {
        match self.slots.get(index).copied().flatten() {
            None => Slot::Absent,
            Some(v) if self.tape.is_null(v) => Slot::Null,
            Some(_) => Slot::Present,
        }
    }

    /// The string under `key`, if it is one.
    pub fn str_of(&self, key: &str) -> Option<Cow<'t, str>> {
        let v = match self.fields.iter().position(|f| f.key == key) {
            Some(i) => self.slots.get(i).copied().flatten(),
            None => self.tape.get(self.obj, key),
        };
        self.tape.as_str(v?)
    }

    /// Whether the gap list that applies names `gap`.
    pub fn declares(&self, gap: &str) -> bool {
        match self.gaps {
            Some(Some(list)) => self
                .tape
                .elements(list)
                .any(|e| self.tape.as_str(e).as_deref() == Some(gap)),
            _ => false,
        }
    }

    /// The value of the field at `index` of [`Instance::fields`] in the tape, if the object has
    /// it.
    pub fn value_of(&self, index: usize) -> Option<usize> {
        self.slots.get(index).copied().flatten()
    }

    /// The object in the tape.
    pub fn object(&self) -> usize {
        self.obj
    }

    /// The gap list that applies, when it is an array in the tape.
    pub fn gap_list(&self) -> Option<usize> {
        self.gaps.flatten()
    }

    /// The JSON pointer of the object, relative to the walked value.
    pub fn ptr(&self) -> String {
        let mut out = String::new();
        self.ptr.write(&mut out);
        out
    }

    /// The keys of the object that no field of the contract names, sorted (reported on the
    /// innermost struct of an absorbing chain only).
    pub fn unknown_keys(&self) -> Vec<Cow<'t, str>> {
        if !self.unknown {
            return Vec::new();
        }
        let mut keys = self.tape.keys(self.obj);
        keys.retain(|k| !names(self.fields, self.consts, self.outer, self.adjacent, k));
        keys
    }
}

/// Whether a struct (with the keys of the structs absorbing it, and of an adjacent union it
/// absorbs) names `key`.
fn names(
    fields: &[FieldShape],
    consts: &[(&'static str, &'static str)],
    outer: &[&'static str],
    adjacent: Option<(&'static str, Option<&'static str>)>,
    key: &str,
) -> bool {
    fields.iter().any(|f| f.key == key)
        || consts.iter().any(|(c, _)| *c == key)
        || outer.contains(&key)
        || adjacent.is_some_and(|(t, c)| t == key || c == Some(key))
}

use diagwire_runtime::shape::PointerPath as Ptr;

type Visit<'a> = &'a mut dyn FnMut(&Instance<'_, '_, '_>);

/// Calls `visit` for every struct instance of the tape's root, a value of the given shape.
pub fn instances_of_shape(shape: &ValueShape, tape: &Tape<'_>, visit: Visit<'_>) {
    walk_value(shape, tape, 0, Ptr::Root, None, None, visit);
}

/// Which struct instances a walk reports ([`instances_of_shape_only`]): those of some types, and
/// it goes only into values of types that can hold one of them. By the type's index in
/// `CONTRACT.types`.
#[derive(Debug, Default)]
pub struct Only {
    report: Vec<bool>,
    enter: Vec<bool>,
}

impl Only {
    /// The instances of the types `report`.
    pub fn types(report: impl IntoIterator<Item = &'static str>) -> Only {
        let n = CONTRACT.types.len();
        let mut only = Only {
            report: vec![false; n],
            enter: vec![false; n],
        };
        for t in report.into_iter().filter_map(|r| CONTRACT.get(r)) {
            only.report[index(t)] = true;
            only.enter[index(t)] = true;
        }
        // The types that reach a reported one: those, then every type that refers to one found.
        let mut refs = Vec::new();
        loop {
            let mut grew = false;
            for (i, t) in CONTRACT.types.iter().enumerate() {
                if only.enter[i] {
                    continue;
                }
                refs.clear();
                crate::blocks::type_refs(t, &mut refs);
                if refs
                    .iter()
                    .filter_map(|r| type_of(r))
                    .any(|r| only.enter[index(r)])
                {
                    only.enter[i] = true;
                    grew = true;
                }
            }
            if !grew {
                return only;
            }
        }
    }

    fn enters(only: Option<&Only>, t: &'static TypeShape) -> bool {
        only.is_none_or(|o| o.enter[index(t)])
    }

    fn reports(only: Option<&Only>, t: &'static TypeShape) -> bool {
        only.is_none_or(|o| o.report[index(t)])
    }
}

/// The index of a type of the contract in `CONTRACT.types`.
fn index(t: &'static TypeShape) -> usize {
    (t as *const TypeShape as usize - CONTRACT.types.as_ptr() as usize)
        / std::mem::size_of::<TypeShape>()
}

/// The type a name of the shape table names (`CONTRACT.get`), found by the name's address: the
/// walk looks a type up for every value it goes into, and a binary search by name costs string
/// comparisons each time. The map is written here rather than taken from a crate: its keys are
/// addresses, which a multiplication hashes well enough.
pub(crate) fn type_of(name: &'static str) -> Option<&'static TypeShape> {
    type ByAddress = HashMap<(usize, usize), &'static TypeShape, BuildHasherDefault<AddressHasher>>;
    static BY_ADDRESS: OnceLock<ByAddress> = OnceLock::new();
    let key = |n: &'static str| (n.as_ptr() as usize, n.len());
    let map = BY_ADDRESS.get_or_init(|| {
        let mut map = ByAddress::default();
        let mut refs = Vec::new();
        for t in CONTRACT.types {
            map.insert(key(t.name), t);
            crate::blocks::type_refs(t, &mut refs);
        }
        for r in refs {
            if let Some(t) = CONTRACT.get(r) {
                map.insert(key(r), t);
            }
        }
        map
    });
    match map.get(&key(name)) {
        Some(t) => Some(*t),
        None => CONTRACT.get(name),
    }
}

/// Hashes the addresses of [`type_of`].
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn write(&mut self, bytes: &[u8]) {
        bytes.iter().for_each(|b| self.write_u64(u64::from(*b)));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Like [`instances_of_shape`], for the instances `only` names: the same instances in the same
/// order, less the others, without walking values that cannot hold one.
pub fn instances_of_shape_only(shape: &ValueShape, tape: &Tape<'_>, only: &Only, visit: Visit<'_>) {
    walk_value(shape, tape, 0, Ptr::Root, None, Some(only), visit);
}

fn walk_value(
    shape: &ValueShape,
    tape: &Tape<'_>,
    v: usize,
    ptr: Ptr<'_>,
    gaps: Gaps,
    only: Option<&Only>,
    visit: Visit<'_>,
) {
    match shape {
        ValueShape::Ref(name) => {
            if let Some(t) = type_of(name).filter(|t| Only::enters(only, t)) {
                walk_type(t, tape, v, ptr, gaps, &mut Vec::new(), only, visit);
            }
        }
        ValueShape::Vec(item) => {
            for (i, e) in tape.elements(v).enumerate() {
                walk_value(item, tape, e, Ptr::Index(&ptr, i), gaps, only, visit);
            }
        }
        ValueShape::Tuple(shapes) => {
            for (i, (s, e)) in shapes.iter().zip(tape.elements(v)).enumerate() {
                walk_value(s, tape, e, Ptr::Index(&ptr, i), gaps, only, visit);
            }
        }
        _ => {}
    }
}

// The walk's state travels as arguments.
#[allow(clippy::too_many_arguments)]
fn walk_type(
    t: &'static TypeShape,
    tape: &Tape<'_>,
    v: usize,
    ptr: Ptr<'_>,
    gaps: Gaps,
    outer: &mut Vec<&'static str>,
    only: Option<&Only>,
    visit: Visit<'_>,
) {
    match &t.kind {
        TypeKind::Struct {
            fields,
            flatten,
            consts,
            ..
        } => {
            if !tape.is_object(v) {
                return;
            }
            let union = flatten.and_then(type_of);
            let (absorbs, adjacent) = match union.map(|u| &u.kind) {
                Some(TypeKind::Union {
                    style: UnionStyle::Internal,
                    ..
                }) => (true, None),
                Some(TypeKind::Union {
                    style: UnionStyle::Adjacent,
                    tag,
                    content,
                    ..
                }) => (false, Some((*tag, *content))),
                _ => (false, None),
            };
            // One pass over the object's keys: each field's value (the last, for a repeated
            // key), and whether a key is one nothing here names.
            let mut slots = vec![None; fields.len()];
            let mut unknown = false;
            for (k, value) in tape.pairs(v) {
                match fields.iter().position(|f| k.is(f.key)) {
                    Some(i) => slots[i] = Some(value),
                    None => unknown |= !absorbs && !names(&[], consts, outer, adjacent, &k.text()),
                }
            }
            let gaps = match fields.iter().position(|f| f.key == GAP_LIST) {
                Some(i) => Some(slots[i].filter(|&l| tape.is_array(l))),
                None => gaps,
            };
            if Only::reports(only, t) {
                visit(&Instance {
                    type_name: t.name,
                    fields,
                    tape,
                    obj: v,
                    slots: &slots,
                    unknown,
                    ptr,
                    gaps,
                    consts,
                    outer,
                    adjacent,
                });
            }
            for (f, value) in fields.iter().zip(&slots) {
                if let Some(value) = *value {
                    walk_value(
                        &f.value,
                        tape,
                        value,
                        Ptr::Key(&ptr, f.key),
                        gaps,
                        only,
                        visit,
                    );
                }
            }
            if let Some(u) = union.filter(|u| Only::enters(only, u)) {
                let before = outer.len();
                outer.extend(fields.iter().map(|f| f.key));
                outer.extend(consts.iter().map(|(c, _)| *c));
                walk_type(u, tape, v, ptr, gaps, outer, only, visit);
                outer.truncate(before);
            }
        }
        TypeKind::Union {
            style,
            tag,
            content,
            variants,
            ..
        } => match style {
            UnionStyle::Internal => {
                let Some(p) = variant(tape, v, tag, variants) else {
                    return;
                };
                if let PayloadShape::Def(name) = p
                    && let Some(t) = type_of(name).filter(|t| Only::enters(only, t))
                {
                    walk_type(t, tape, v, ptr, gaps, outer, only, visit);
                }
            }
            UnionStyle::Adjacent => {
                let (Some(p), Some(c)) = (variant(tape, v, tag, variants), content) else {
                    return;
                };
                if let (PayloadShape::Value(shape), Some(inner)) = (p, tape.get(v, c)) {
                    walk_value(&shape, tape, inner, Ptr::Key(&ptr, c), gaps, only, visit);
                }
            }
            UnionStyle::External => {
                let Some((k, inner)) = tape.first_entry(v) else {
                    return;
                };
                if let Some(PayloadShape::Value(shape)) =
                    variants.iter().find(|x| x.tag == k).map(|x| x.payload)
                {
                    walk_value(&shape, tape, inner, Ptr::Key(&ptr, &k), gaps, only, visit);
                }
            }
        },
        TypeKind::Array(item) => {
            walk_value(&ValueShape::Vec(item), tape, v, ptr, gaps, only, visit)
        }
        TypeKind::Enum { .. } | TypeKind::NodeId | TypeKind::NodeIdHex => {}
    }
}

/// The payload of the known variant an internal or adjacent union value has, by its tag.
fn variant(
    tape: &Tape<'_>,
    v: usize,
    tag: &str,
    variants: &[diagwire::shape::VariantShape],
) -> Option<PayloadShape> {
    let t = tape.as_str(tape.get(v, tag)?)?;
    variants.iter().find(|x| x.tag == t).map(|x| x.payload)
}

#[cfg(test)]
mod tests {
    //! The walk over a tape, held to what serde_json reads of the same texts: a record's unknown
    //! keys are those the library's walk over a `serde_json::Value` finds
    //! (`diagwire::shape::unknown_keys`), and the object at each instance's pointer holds what the
    //! instance says of each of its fields (absent, null or present, and its string).

    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    use diagwire::bundle::read::{BundleReader, Limits};
    use diagwire::bundle::records::walk;
    use diagwire_runtime::shape::escape_pointer_token;
    use diagwire_testkit::scenario::{Params, generate};
    use serde_json::Value;

    use super::super::tape::Buffer;
    use super::*;

    /// A generated run with unknown keys of every shape (an object holding an array, a key that
    /// needs escaping), the 1.1.0 golden archive and every shipped example bundle.
    fn bundles(scratch: &Path) -> Vec<PathBuf> {
        let mut run = generate(&Params::small(1));
        let peer = &mut run.node_mut("stage-0").snapshots[0]
            .body
            .iroh
            .as_mut()
            .expect("the small scenario's stages report iroh")
            .peers[0];
        peer.extra
            .insert("x_peer".into(), serde_json::json!({"a": [1, "b"]}));
        peer.extra
            .insert("x\"esc/aped~".into(), serde_json::json!(null));
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let mut out = vec![
            run.write_dir(scratch).unwrap(),
            repo.join("compat-tests/fixtures/1.1.0/golden.tar.gz"),
        ];
        for entry in std::fs::read_dir(repo.join("examples/bundles")).unwrap() {
            out.push(entry.unwrap().path());
        }
        out
    }

    /// Walks one record's text; checks it against its value. Returns the instances found.
    fn check_record(kind: &str, text: &str, at: &str) -> usize {
        let value: Value = serde_json::from_str(text).unwrap();
        let def = CONTRACT.record(kind).unwrap().def;
        let tape = Tape::read(text, Buffer::default()).expect("the tape reads every record");
        let mut unknown = BTreeSet::new();
        let mut found = 0;
        instances_of_shape(&ValueShape::Ref(def), &tape, &mut |inst| {
            found += 1;
            let ptr = inst.ptr();
            let obj = value
                .pointer(&ptr)
                .and_then(Value::as_object)
                .unwrap_or_else(|| panic!("{at}: no object at {ptr:?}"));
            for (i, f) in inst.fields.iter().enumerate() {
                let expected = match obj.get(f.key) {
                    None => Slot::Absent,
                    Some(Value::Null) => Slot::Null,
                    Some(_) => Slot::Present,
                };
                assert_eq!(inst.slot(i), expected, "{at}: {ptr}/{}", f.key);
                assert_eq!(
                    inst.str_of(f.key).as_deref(),
                    obj.get(f.key).and_then(Value::as_str),
                    "{at}: {ptr}/{}",
                    f.key
                );
            }
            for k in inst.unknown_keys() {
                assert!(obj.contains_key(k.as_ref()), "{at}: {ptr}: {k}");
                unknown.insert(format!("{ptr}/{}", escape_pointer_token(&k)));
            }
        });
        let expected: BTreeSet<String> = diagwire::shape::unknown_keys(&CONTRACT, kind, &value)
            .into_iter()
            .collect();
        assert_eq!(unknown, expected, "{at}");
        found
    }

    #[test]
    fn the_tape_walk_reads_each_instance_as_serde_json_reads_the_record() {
        let scratch = tempfile::tempdir().unwrap();
        let (mut records, mut instances, mut unknown_seen) = (0, 0, false);
        for path in bundles(scratch.path()) {
            let mut reader = BundleReader::open(&path, Limits::default()).unwrap();
            walk(
                &mut reader,
                |item| {
                    let kind = item.record.kind();
                    let at = format!("{}:{}", item.path, item.index);
                    instances += check_record(kind.as_str(), item.text, &at);
                    unknown_seen |= item.text.contains("x_peer");
                    records += 1;
                },
                |_| {},
            );
        }
        assert!(records > 1000 && instances > records && unknown_seen);
    }
}
