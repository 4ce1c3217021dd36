//! The generated protobuf codec of one contract version: for every type, the `Encode`, `Decode`
//! and `Message` impls of `diagwire_runtime::proto`, writing and reading its fields by the numbers
//! the version's descriptor has (the pinned number file for the current schemas, the frozen numbers
//! for a release).
//!
//! It writes exactly what the descriptor-driven codec writes for the record's JSON, field by field in
//! number order, and it reads only what it can read as that codec would; anything else (an unknown
//! key, variant or enum value, a field twice, a field number it does not know) is a `Bail`, and the
//! caller falls back to the descriptor-driven codec.

use anyhow::{Context, Result};
use diagwire_schema::model::{
    Def, DefKind, Model, Payload, Presence, StructDef, Ty, UnionDef, UnionStyle, variant_name,
};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::emit::ident;
use crate::proto::Numbers;

fn rt() -> TokenStream {
    quote!(::diagwire_runtime::proto)
}

/// The type's path through its file module: a type named like an item of the contract module
/// (`RecordKind`) is only reachable there.
fn type_path(model: &Model, name: &str) -> TokenStream {
    let n = ident(name);
    match model.file_of(name) {
        Some(f) => {
            let stem = ident(&f.stem);
            quote!(super::#stem::#n)
        }
        None => quote!(#n),
    }
}

fn number(n: &Numbers, owner: &str, name: &str, enums: bool) -> Result<u32> {
    let tables = if enums { &n.enums } else { &n.messages };
    tables
        .get(owner)
        .and_then(|t| t.numbers.get(name))
        .copied()
        .with_context(|| format!("no protobuf number for `{owner}.{name}`"))
}

/// Whether a value of `t` is a Rust `Vec` (a list, or a named array).
fn is_list(model: &Model, t: &Ty) -> bool {
    match t {
        Ty::Vec(_) => true,
        Ty::Ref(n) => matches!(model.def(n).map(|d| &d.kind), Some(DefKind::Array(_))),
        _ => false,
    }
}

/// Whether a value of `t` is a scalar or enum of the descriptor, which keeps a value it cannot hold in
/// its message's `unknown_json` (anything else that does not fit is the descriptor codec's).
fn is_scalar(model: &Model, t: &Ty) -> bool {
    match t {
        Ty::Str | Ty::Int(_) | Ty::F64 | Ty::Bool | Ty::Json => true,
        Ty::Ref(n) => matches!(
            model.def(n).map(|d| &d.kind),
            Some(DefKind::Enum { .. } | DefKind::NodeId | DefKind::NodeIdHex)
        ),
        Ty::Vec(_) | Ty::Tuple(_) => false,
    }
}

/// The definitions a value of `t` holds.
fn held<'m>(t: &'m Ty, out: &mut Vec<&'m str>) {
    match t {
        Ty::Ref(n) => out.push(n),
        Ty::Vec(inner) => held(inner, out),
        Ty::Tuple(items) => items.iter().for_each(|i| held(i, out)),
        Ty::Str | Ty::Int(_) | Ty::F64 | Ty::Bool | Ty::Json => {}
    }
}

fn holds<'m>(model: &'m Model, d: &'m Def) -> Vec<&'m str> {
    let mut out = Vec::new();
    match &d.kind {
        DefKind::Struct(s) => {
            s.props.iter().for_each(|p| held(&p.ty, &mut out));
            out.extend(s.flatten.iter().map(|f| f.union.as_str()));
        }
        DefKind::Union(u) => {
            for v in &u.variants {
                match &v.payload {
                    Payload::Def(n) => out.push(n),
                    Payload::Ty(t) => held(t, &mut out),
                    Payload::Unit => {}
                }
            }
        }
        DefKind::Array(t) => held(t, &mut out),
        DefKind::Enum { .. } | DefKind::NodeId | DefKind::NodeIdHex => {}
    }
    out.retain(|n| model.def(n).is_some());
    out
}

/// Refuses a type that holds itself: the generated decoder recurses once per nested message and
/// has no depth limit of its own, which only a type graph without cycles makes safe on hostile
/// bytes (the deepest record is a handful of messages).
fn check_acyclic(model: &Model) -> Result<()> {
    fn visit<'m>(
        model: &'m Model,
        d: &'m Def,
        path: &mut Vec<&'m str>,
        done: &mut Vec<&'m str>,
    ) -> Result<()> {
        if done.contains(&d.name.as_str()) {
            return Ok(());
        }
        if path.contains(&d.name.as_str()) {
            anyhow::bail!(
                "`{}` holds itself ({} → {}): the generated protobuf decoder needs types without cycles",
                d.name,
                path.join(" → "),
                d.name
            );
        }
        path.push(&d.name);
        for n in holds(model, d) {
            if let Some(next) = model.def(n) {
                visit(model, next, path, done)?;
            }
        }
        path.pop();
        done.push(&d.name);
        Ok(())
    }
    let mut done = Vec::new();
    for d in model.defs() {
        visit(model, d, &mut Vec::new(), &mut done)?;
    }
    Ok(())
}

/// The codec impls of every type of `model`, numbered by `numbers`, for contract `version`.
pub fn render(model: &Model, numbers: &Numbers, version: &str) -> Result<TokenStream> {
    check_acyclic(model)?;
    let mut items = Vec::new();
    for d in model.defs() {
        items.push(match &d.kind {
            DefKind::Struct(s) => structure(model, numbers, version, d, s)?,
            DefKind::Union(u) => union(model, numbers, version, d, u)?,
            DefKind::Enum { values, open } => enumeration(model, numbers, d, values, *open)?,
            DefKind::NodeId | DefKind::NodeIdHex | DefKind::Array(_) => continue,
        });
    }
    Ok(quote! {
        //! The protobuf codec of every type of this contract version (feature `proto`).
        #![allow(clippy::match_single_binding, unused_mut)]
        #[allow(unused_imports)]
        use super::*;
        #(#items)*
    })
}

/// `Encode` and `Decode` of a message type, through its `Message` impl.
fn message_impls(name: &TokenStream, zero: bool) -> TokenStream {
    let rt = rt();
    let zero = if zero {
        quote!(fn zero() -> #rt::R<Self> {
            <Self as #rt::Message>::read_body(&[])
        })
    } else {
        quote!()
    };
    quote! {
        impl #rt::Encode for #name {
            #[inline]
            fn field(&self, n: u32, out: &mut Vec<u8>) -> #rt::R {
                #rt::message_field(self, n, out)
            }
        }
        impl #rt::Decode for #name {
            #[inline]
            fn read(wire: u8, b: &mut &[u8]) -> #rt::R<Self> {
                #rt::read_message(wire, b)
            }
            #zero
        }
    }
}

fn structure(
    model: &Model,
    numbers: &Numbers,
    version: &str,
    d: &Def,
    s: &StructDef,
) -> Result<TokenStream> {
    let rt = rt();
    let name = type_path(model, &d.name);
    let type_name = &d.name;
    struct F {
        n: u32,
        field: proc_macro2::Ident,
        slot: proc_macro2::Ident,
        write: TokenStream,
        read: TokenStream,
        finish: TokenStream,
    }
    let mut fs = Vec::new();
    // The keys `unknown_json` may hold, by field: a scalar's value it could not hold.
    let mut json_arms = Vec::new();
    for p in &s.props {
        let n = number(numbers, &d.name, &p.name, false)?;
        let field = ident(&p.name);
        let slot = format_ident!("f_{}", p.name);
        let list = is_list(model, &p.ty);
        let key = &p.name;
        let scalar = is_scalar(model, &p.ty);
        let put_value = |v: TokenStream| {
            if scalar {
                quote!(#rt::scalar(#v, #n, #key, out, &mut unknown)?;)
            } else {
                quote!(#rt::Encode::field(#v, #n, out)?;)
            }
        };
        let put = if list {
            quote!(#rt::list(self.#field.as_slice(), #n, out)?;)
        } else {
            put_value(quote!(&self.#field))
        };
        let put_some = put_value(quote!(v));
        if scalar {
            json_arms.push(quote!(#key => #rt::from_json(&mut #slot, v)?,));
        } else {
            json_arms.push(quote!(#key => return Err(#rt::Bail),));
        }
        let (write, read, finish) = match (p.presence, list) {
            (Presence::Required | Presence::Default, true) => (
                quote!(if !self.#field.is_empty() { #put }),
                quote!(#rt::read_list(wire, &mut b, &mut #slot)?),
                quote!(#slot),
            ),
            (Presence::Required | Presence::Default, false) => (
                quote!(if !#rt::Encode::is_zero(&self.#field) { #put }),
                quote!(#rt::once(&mut #slot, wire, &mut b)?),
                quote!(#rt::required(#slot)?),
            ),
            (Presence::SkipDefault, true) => (
                quote!(if !::diagwire_runtime::is_default(&self.#field) { #put }),
                quote!(#rt::read_list(wire, &mut b, &mut #slot)?),
                quote!(#slot),
            ),
            (Presence::SkipDefault, false) => (
                quote!(if !::diagwire_runtime::is_default(&self.#field) { #put }),
                quote!(#rt::once(&mut #slot, wire, &mut b)?),
                quote!(#slot.unwrap_or_default()),
            ),
            (Presence::Nullable, _) => (
                quote!(if let Some(v) = &self.#field {
                    if !#rt::Encode::is_null(v) {
                        #put_some
                    }
                }),
                quote!(#rt::once(&mut #slot, wire, &mut b)?),
                quote!(#rt::optional(#slot)),
            ),
            (Presence::Omittable, _) => (
                quote!(if let Some(v) = &self.#field {
                    #put_some
                }),
                quote!(#rt::once(&mut #slot, wire, &mut b)?),
                quote!(#rt::optional(#slot)),
            ),
        };
        fs.push(F {
            n,
            field,
            slot,
            write,
            read,
            finish,
        });
    }
    if let Some(fl) = &s.flatten {
        let n = number(numbers, &d.name, &format!("@{}", fl.field), false)?;
        let field = ident(&fl.field);
        let slot = format_ident!("f_{}", fl.field);
        fs.push(F {
            n,
            write: quote!(#rt::Encode::field(&self.#field, #n, out)?;),
            read: quote!(#rt::once(&mut #slot, wire, &mut b)?),
            finish: quote!(#rt::required(#slot)?),
            field,
            slot,
        });
    }
    // The descriptor codec writes a message's fields in number order.
    let mut by_number: Vec<&F> = fs.iter().collect();
    by_number.sort_by_key(|f| f.n);
    let writes = by_number.iter().map(|f| &f.write);
    let slots = fs.iter().map(|f| {
        let slot = &f.slot;
        quote!(let mut #slot = Default::default();)
    });
    let arms = fs.iter().map(|f| {
        let (n, read) = (f.n, &f.read);
        quote!(#n => #read,)
    });
    let inits = fs.iter().map(|f| {
        let (field, finish) = (&f.field, &f.finish);
        quote!(#field: #finish,)
    });
    let unknown_json = crate::proto::UNKNOWN_JSON;
    let (extra_write, extra_decl, extra_init, other_key) = if d.facts.keeps_extra {
        (
            quote!(#rt::extra(&self.extra, &mut unknown)?;),
            quote!(let mut extra = ::diagwire_runtime::Extra::default();),
            quote!(extra,),
            quote!(_ => #rt::keep(&mut extra, k, v)?,),
        )
    } else {
        (
            quote!(),
            quote!(),
            quote!(),
            quote!(_ => return Err(#rt::Bail),),
        )
    };

    let impls = message_impls(&quote!(#name), true);
    Ok(quote! {
        impl #rt::Message for #name {
            const CONTRACT: &'static str = #version;
            const NAME: &'static str = #type_name;
            fn body(&self, out: &mut Vec<u8>) -> #rt::R {
                let mut unknown: #rt::Unknown = None;
                #(#writes)*
                #extra_write
                #rt::write_unknown(#unknown_json, unknown, out)
            }
            fn read_body(mut b: &[u8]) -> #rt::R<Self> {
                #(#slots)*
                #extra_decl
                while !b.is_empty() {
                    let (n, wire) = #rt::read_key(&mut b)?;
                    match n {
                        #(#arms)*
                        #unknown_json => {
                            for (k, v) in #rt::read_unknown(wire, &mut b)? {
                                match k.as_str() {
                                    #(#json_arms)*
                                    #other_key
                                }
                            }
                        }
                        _ => return Err(#rt::Bail),
                    }
                }
                Ok(#name {
                    #(#inits)*
                    #extra_init
                })
            }
        }
        #impls
    })
}

fn union(
    model: &Model,
    numbers: &Numbers,
    version: &str,
    d: &Def,
    u: &UnionDef,
) -> Result<TokenStream> {
    let rt = rt();
    let name = type_path(model, &d.name);
    let type_name = &d.name;
    let mut writes = Vec::new();
    let mut reads = Vec::new();
    for v in &u.variants {
        let n = number(numbers, &d.name, &v.tag, false)?;
        let var = ident(&v.rust);
        match (&v.payload, u.style) {
            (Payload::Def(_), UnionStyle::Internal) | (Payload::Ty(_), _) => {
                writes.push(quote!(#name::#var(v) => #rt::Encode::field(v, #n, out),));
                reads.push(quote!(#n => #name::#var(#rt::Decode::read(wire, &mut b)?),));
            }
            (Payload::Unit, UnionStyle::Adjacent | UnionStyle::External) => {
                writes.push(quote!(#name::#var => {
                    #rt::bytes_field(#n, &[], out);
                    Ok(())
                }));
                reads.push(quote!(#n => {
                    #rt::read_unit(wire, &mut b)?;
                    #name::#var
                }));
            }
            // Variants the Rust type does not have (the generator writes none for them).
            (Payload::Unit, UnionStyle::Internal) | (Payload::Def(_), _) => {}
        }
    }
    let other = if u.open && u.style != UnionStyle::External {
        quote!(_ => Err(#rt::Bail),)
    } else {
        quote!()
    };
    let impls = message_impls(&quote!(#name), false);
    Ok(quote! {
        impl #rt::Message for #name {
            const CONTRACT: &'static str = #version;
            const NAME: &'static str = #type_name;
            fn body(&self, out: &mut Vec<u8>) -> #rt::R {
                match self {
                    #(#writes)*
                    #other
                }
            }
            fn read_body(mut b: &[u8]) -> #rt::R<Self> {
                let (n, wire) = #rt::read_key(&mut b)?;
                let v = match n {
                    #(#reads)*
                    _ => return Err(#rt::Bail),
                };
                if b.is_empty() { Ok(v) } else { Err(#rt::Bail) }
            }
        }
        #impls
    })
}

fn enumeration(
    model: &Model,
    numbers: &Numbers,
    d: &Def,
    values: &[String],
    open: bool,
) -> Result<TokenStream> {
    let rt = rt();
    let name = type_path(model, &d.name);
    let mut to = Vec::new();
    let mut from = Vec::new();
    for v in values {
        let n = u64::from(number(numbers, &d.name, v, true)?);
        let var = format_ident!("{}", variant_name(v));
        to.push(quote!(#name::#var => #n,));
        from.push(quote!(#n => #name::#var,));
    }
    let other = if open {
        quote!(_ => return Err(#rt::Bail),)
    } else {
        quote!()
    };
    Ok(quote! {
        impl #name {
            /// The value's protobuf number; an unknown value has none.
            fn proto_number(&self) -> #rt::R<u64> {
                Ok(match self {
                    #(#to)*
                    #other
                })
            }
        }
        impl #rt::Encode for #name {
            #[inline]
            fn field(&self, n: u32, out: &mut Vec<u8>) -> #rt::R {
                #rt::key(n, #rt::VARINT, out);
                #rt::varint(self.proto_number()?, out);
                Ok(())
            }
            fn list(items: &[Self], n: u32, out: &mut Vec<u8>) -> #rt::R {
                #rt::packed_list(items, n, out, Self::proto_number)
            }
        }
        impl #rt::Decode for #name {
            #[inline]
            fn read(wire: u8, b: &mut &[u8]) -> #rt::R<Self> {
                Ok(match #rt::read_enum(wire, b)? {
                    #(#from)*
                    _ => return Err(#rt::Bail),
                })
            }
            fn read_list(wire: u8, b: &mut &[u8], into: &mut Vec<Self>) -> #rt::R {
                #rt::read_packed(#rt::VARINT, wire, b, into)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(defs: &str) -> Model {
        let text = format!(
            r#"{{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "urn:diagwire:tree",
                "title": "Tree", "description": "Trees.", "$defs": {defs}}}"#
        );
        let file = diagwire_schema::parse_file("tree.schema.json", "tree", &text).unwrap();
        diagwire_schema::load(&[file]).unwrap_or_else(|e| panic!("{e:#}"))
    }

    #[test]
    fn a_type_that_holds_itself_is_refused_and_one_that_does_not_renders() {
        let node = |children: &str| {
            format!(
                r##"{{"Node": {{"description": "A node.", "type": "object", "required": ["name"],
                    "properties": {{
                        "name": {{"description": "Its name.", "type": "string"}}
                        {children}
                    }}}}}}"##
            )
        };
        let tree = model(&node(
            r##", "children": {"description": "Below.", "type": "array",
                  "x-presence": "skip-default", "default": [],
                  "x-absent": "A leaf.", "items": {"$ref": "#/$defs/Node"}}"##,
        ));
        let err = check_acyclic(&tree).unwrap_err().to_string();
        assert!(err.contains("`Node` holds itself (Node → Node)"), "{err}");
        assert!(check_acyclic(&model(&node(""))).is_ok());
    }
}
