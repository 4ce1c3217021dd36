//! Every struct instance of a record read as a [`Tape`], with a contract's shape table: the one
//! walk of a record's instances, without building a `serde_json::Value` of the record.
//!
//! The walk follows the generated types' rules: an internal union's variant shares its object with
//! the struct that absorbs it, an adjacent union's payload sits under its content key, an external
//! union is a string or a one-key object. Its tests hold it to serde_json's reading of the same
//! records: the unknown keys are those a walk over a value finds, and each field read is the
//! value's.
//!
//! A walk told by [`Only`] which struct types it reads reports those alone and goes only into
//! values whose type can hold one.
//!
//! Types are looked up by the address of their name (an index [`Shapes`] builds once per
//! contract): the walk looks a type up for every value it goes into, and a binary search by name
//! costs string comparisons each time. The map is written here rather than taken from a crate: its
//! keys are addresses, which a multiplication hashes well enough.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Mutex, OnceLock};

use diagwire_runtime::Contract;
use diagwire_runtime::shape::PointerPath as Ptr;

use super::tape::Tape;
use crate::shape::{
    FieldShape, PayloadShape, TypeKind, TypeShape, UnionStyle, ValueShape, VariantShape, type_refs,
};

/// The name of the field that lists the gaps of the block holding it (what its writer could not
/// ask for); the list applies to the instances inside the block too.
pub const GAP_LIST: &str = "api_gaps";

/// The most fields a struct's slots hold on the stack during a walk; a struct with more has them
/// allocated.
const INLINE_FIELDS: usize = 32;

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

type Visit<'a> = &'a mut dyn FnMut(&Instance<'_, '_, '_>);

/// One contract's shape table, indexed for the walk; [`Shapes::of`] builds it once per contract.
#[derive(Debug)]
pub struct Shapes {
    types: &'static [TypeShape],
    by_address: ByAddress,
}

type ByAddress = HashMap<(usize, usize), &'static TypeShape, BuildHasherDefault<AddressHasher>>;

impl Shapes {
    /// The index of `contract`'s shape table (built on first use, kept for the process).
    pub fn of(contract: &Contract) -> &'static Shapes {
        static BUILT: OnceLock<Mutex<Vec<&'static Shapes>>> = OnceLock::new();
        let mut built = BUILT
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(s) = built.iter().find(|s| std::ptr::eq(s.types, contract.types)) {
            return s;
        }
        let shapes: &'static Shapes = Box::leak(Box::new(Shapes::build(contract.types)));
        built.push(shapes);
        shapes
    }

    fn build(types: &'static [TypeShape]) -> Shapes {
        let key = |n: &'static str| (n.as_ptr() as usize, n.len());
        let mut by_address = ByAddress::default();
        let mut refs = Vec::new();
        for t in types {
            by_address.insert(key(t.name), t);
            type_refs(t, &mut refs);
        }
        let mut shapes = Shapes { types, by_address };
        for r in refs {
            if let Some(t) = shapes.by_name(r) {
                shapes.by_address.insert(key(r), t);
            }
        }
        shapes
    }

    fn by_name(&self, name: &str) -> Option<&'static TypeShape> {
        let types = self.types;
        types
            .binary_search_by(|t| t.name.cmp(name))
            .ok()
            .map(|i| &types[i])
    }

    /// The type a name of the shape table names (by its address, else by its text).
    pub fn type_of(&self, name: &'static str) -> Option<&'static TypeShape> {
        match self.by_address.get(&(name.as_ptr() as usize, name.len())) {
            Some(t) => Some(*t),
            None => self.by_name(name),
        }
    }

    /// The index of a type of this table, or `None` for a type of another.
    fn index(&self, t: &'static TypeShape) -> Option<usize> {
        let offset = (t as *const TypeShape as usize).checked_sub(self.types.as_ptr() as usize)?;
        let i = offset / std::mem::size_of::<TypeShape>();
        (i < self.types.len()).then_some(i)
    }

    /// Calls `visit` for every struct instance of the tape's root, a value of the given shape.
    pub fn instances(&'static self, shape: &ValueShape, tape: &Tape<'_>, visit: Visit<'_>) {
        let walk = Walker {
            shapes: self,
            only: None,
        };
        walk.value(shape, tape, 0, Ptr::Root, None, visit);
    }

    /// Which instances a walk reports: those of the types `report` (names of this table), and it
    /// goes only into values of types that can hold one of them.
    pub fn only(&'static self, report: impl IntoIterator<Item = &'static str>) -> Only {
        let n = self.types.len();
        let mut only = Only {
            shapes: self,
            report: vec![false; n],
            enter: vec![false; n],
        };
        for i in report
            .into_iter()
            .filter_map(|r| self.by_name(r))
            .filter_map(|t| self.index(t))
        {
            only.report[i] = true;
            only.enter[i] = true;
        }
        // The types that reach a reported one: those, then every type that refers to one found.
        let mut refs = Vec::new();
        loop {
            let mut grew = false;
            for (i, t) in self.types.iter().enumerate() {
                if only.enter[i] {
                    continue;
                }
                refs.clear();
                type_refs(t, &mut refs);
                if refs
                    .iter()
                    .filter_map(|r| self.type_of(r))
                    .filter_map(|r| self.index(r))
                    .any(|r| only.enter[r])
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
}

/// JSON pointers of the keys of a record of the kind named `kind`, read as a tape, that no field
/// of the contract names (they are kept as unknown keys by the types), in the order the walk
/// meets them. Empty for an unknown kind.
pub fn unknown_keys(contract: &Contract, kind: &str, tape: &Tape<'_>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(info) = contract.record(kind) {
        Shapes::of(contract).instances(&ValueShape::Ref(info.def), tape, &mut |inst| {
            let keys = inst.unknown_keys();
            if !keys.is_empty() {
                let ptr = inst.ptr();
                for k in keys {
                    out.push(format!(
                        "{ptr}/{}",
                        diagwire_runtime::shape::escape_pointer_token(&k)
                    ));
                }
            }
        });
    }
    out
}

/// Which struct instances a walk reports ([`Only::instances`], made by [`Shapes::only`]): by the
/// type's index in the table it was made from.
#[derive(Debug)]
pub struct Only {
    shapes: &'static Shapes,
    report: Vec<bool>,
    enter: Vec<bool>,
}

impl Only {
    /// Like [`Shapes::instances`], for the instances this names: the same instances in the same
    /// order, less the others, without walking values that cannot hold one.
    pub fn instances(&self, shape: &ValueShape, tape: &Tape<'_>, visit: Visit<'_>) {
        let walk = Walker {
            shapes: self.shapes,
            only: Some(self),
        };
        walk.value(shape, tape, 0, Ptr::Root, None, visit);
    }
}

/// Hashes the addresses of [`Shapes::type_of`].
#[derive(Default, Debug)]
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

/// One walk: the table it reads and the instances it reports.
#[derive(Clone, Copy)]
struct Walker<'o> {
    shapes: &'static Shapes,
    only: Option<&'o Only>,
}

impl Walker<'_> {
    /// Whether the walk goes into (`enter`) or reports (`report`) values of `t`: always without
    /// an [`Only`], else as it says of `t` (never of a type of another table).
    fn allows(&self, t: &'static TypeShape, which: fn(&Only) -> &[bool]) -> bool {
        match self.only {
            None => true,
            Some(o) => self.shapes.index(t).is_some_and(|i| which(o)[i]),
        }
    }

    fn enters(&self, t: &'static TypeShape) -> bool {
        self.allows(t, |o| &o.enter)
    }

    fn reports(&self, t: &'static TypeShape) -> bool {
        self.allows(t, |o| &o.report)
    }

    fn type_of(&self, name: &'static str) -> Option<&'static TypeShape> {
        self.shapes.type_of(name).filter(|t| self.enters(t))
    }

    fn value(
        &self,
        shape: &ValueShape,
        tape: &Tape<'_>,
        v: usize,
        ptr: Ptr<'_>,
        gaps: Gaps,
        visit: Visit<'_>,
    ) {
        match shape {
            ValueShape::Ref(name) => {
                if let Some(t) = self.type_of(name) {
                    self.typed(t, tape, v, ptr, gaps, &mut Vec::new(), visit);
                }
            }
            ValueShape::Vec(item) => {
                for (i, e) in tape.elements(v).enumerate() {
                    self.value(item, tape, e, Ptr::Index(&ptr, i), gaps, visit);
                }
            }
            ValueShape::Tuple(shapes) => {
                for (i, (s, e)) in shapes.iter().zip(tape.elements(v)).enumerate() {
                    self.value(s, tape, e, Ptr::Index(&ptr, i), gaps, visit);
                }
            }
            _ => {}
        }
    }

    // The walk's state travels as arguments.
    #[allow(clippy::too_many_arguments)]
    fn typed(
        &self,
        t: &'static TypeShape,
        tape: &Tape<'_>,
        v: usize,
        ptr: Ptr<'_>,
        gaps: Gaps,
        outer: &mut Vec<&'static str>,
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
                let union = flatten.and_then(|u| self.shapes.type_of(u));
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
                // On the stack for the structs of any contract so far: a walk meets an instance
                // for every object it reads, and without an allocation each `check --coverage`
                // took 4.5 % less CPU. Half a KiB of stack per struct the walk is inside, and the
                // tape refuses text nested deeper than 256 levels.
                let mut inline = [None; INLINE_FIELDS];
                let mut spilled = Vec::new();
                let slots: &mut [Option<usize>] = match inline.get_mut(..fields.len()) {
                    Some(s) => s,
                    None => {
                        spilled.resize(fields.len(), None);
                        &mut spilled
                    }
                };
                let mut unknown = false;
                for (k, value) in tape.pairs(v) {
                    match fields.iter().position(|f| k.is(f.key)) {
                        Some(i) => slots[i] = Some(value),
                        None => {
                            unknown |= !absorbs && !names(&[], consts, outer, adjacent, &k.text())
                        }
                    }
                }
                let gaps = match fields.iter().position(|f| f.key == GAP_LIST) {
                    Some(i) => Some(slots[i].filter(|&l| tape.is_array(l))),
                    None => gaps,
                };
                if self.reports(t) {
                    visit(&Instance {
                        type_name: t.name,
                        fields,
                        tape,
                        obj: v,
                        slots,
                        unknown,
                        ptr,
                        gaps,
                        consts,
                        outer,
                        adjacent,
                    });
                }
                for (f, value) in fields.iter().zip(slots.iter()) {
                    if let Some(value) = *value {
                        self.value(&f.value, tape, value, Ptr::Key(&ptr, f.key), gaps, visit);
                    }
                }
                if let Some(u) = union.filter(|u| self.enters(u)) {
                    let before = outer.len();
                    outer.extend(fields.iter().map(|f| f.key));
                    outer.extend(consts.iter().map(|(c, _)| *c));
                    self.typed(u, tape, v, ptr, gaps, outer, visit);
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
                    let PayloadShape::Def(name) = p else {
                        return;
                    };
                    if let Some(t) = self.type_of(name) {
                        // The tag shares the variant's object: a key the union names, not one
                        // the variant's struct keeps as unknown.
                        outer.push(tag);
                        self.typed(t, tape, v, ptr, gaps, outer, visit);
                        outer.pop();
                    }
                }
                UnionStyle::Adjacent => {
                    let (Some(p), Some(c)) = (variant(tape, v, tag, variants), content) else {
                        return;
                    };
                    if let (PayloadShape::Value(shape), Some(inner)) = (p, tape.get(v, c)) {
                        self.value(&shape, tape, inner, Ptr::Key(&ptr, c), gaps, visit);
                    }
                }
                UnionStyle::External => {
                    let Some((k, inner)) = tape.first_entry(v) else {
                        return;
                    };
                    if let Some(PayloadShape::Value(shape)) =
                        variants.iter().find(|x| x.tag == k).map(|x| x.payload)
                    {
                        self.value(&shape, tape, inner, Ptr::Key(&ptr, &k), gaps, visit);
                    }
                }
            },
            TypeKind::Array(item) => self.value(&ValueShape::Vec(item), tape, v, ptr, gaps, visit),
            TypeKind::Enum { .. } | TypeKind::NodeId | TypeKind::NodeIdHex => {}
        }
    }
}

/// The payload of the known variant an internal or adjacent union value has, by its tag.
fn variant(
    tape: &Tape<'_>,
    v: usize,
    tag: &str,
    variants: &[VariantShape],
) -> Option<PayloadShape> {
    let t = tape.as_str(tape.get(v, tag)?)?;
    variants.iter().find(|x| x.tag == t).map(|x| x.payload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::Presence;
    use crate::view::Buffer;

    /// A table of one struct of `n` string fields `f0`, `f1`, …
    fn wide(n: usize) -> &'static Shapes {
        let fields: Vec<FieldShape> = (0..n)
            .map(|i| {
                let key: &'static str = Box::leak(format!("f{i}").into_boxed_str());
                FieldShape::new(key, ValueShape::Str, Presence::Omittable)
            })
            .collect();
        let types: &'static [TypeShape] = Box::leak(Box::new([TypeShape {
            name: "Wide",
            schema: "test",
            kind: TypeKind::Struct {
                fields: Box::leak(fields.into_boxed_slice()),
                flatten: None,
                consts: &[],
                keeps_extra: true,
            },
        }]));
        Box::leak(Box::new(Shapes::build(types)))
    }

    /// Every field of a struct of `n` fields reads as the object holds it: every third absent,
    /// every third `null`, the rest present; one key nothing names.
    fn check_wide(n: usize) {
        let mut text = String::from("{\"extra\":1");
        for i in (0..n).filter(|i| i % 3 != 0) {
            let value = if i % 3 == 1 { "null" } else { "\"x\"" };
            text.push_str(&format!(",\"f{i}\":{value}"));
        }
        text.push('}');
        let tape = Tape::read(&text, Buffer::default()).expect("the tape reads it");
        let mut seen = 0;
        wide(n).instances(&ValueShape::Ref("Wide"), &tape, &mut |inst| {
            seen += 1;
            for i in 0..n {
                let want = match i % 3 {
                    0 => Slot::Absent,
                    1 => Slot::Null,
                    _ => Slot::Present,
                };
                assert_eq!(inst.slot(i), want, "field f{i} of {n}");
            }
            assert_eq!(
                inst.unknown_keys(),
                vec![Cow::Borrowed("extra")],
                "{n} fields"
            );
        });
        assert_eq!(seen, 1, "{n} fields");
    }

    #[test]
    fn a_struct_with_as_many_fields_as_the_stack_holds_reads_every_field() {
        check_wide(INLINE_FIELDS);
    }

    #[test]
    fn a_struct_with_more_fields_than_the_stack_holds_reads_every_field() {
        check_wide(INLINE_FIELDS + 7);
    }
}
