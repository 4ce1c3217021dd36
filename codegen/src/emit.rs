//! Renders the model into Rust source.
//!
//! Every object type gets a struct or enum, a `Builder` (its streaming deserializer), `MapFields`
//! and `Serialize`/`Deserialize` impls; string enums and external unions get direct impls.
//! Output goes through `prettyplease`, so it is byte-deterministic without a rustfmt toolchain.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

use crate::model::{
    Def, DefKind, FileModel, Model, Payload, Presence, Prop, StructDef, Style, Ty, UnionDef,
};

const RT: &str = "::diagwire_runtime";

fn rt() -> TokenStream {
    RT.parse().expect("OK because the path is a constant")
}

fn ident(name: &str) -> Ident {
    const KEYWORDS: &[&str] = &[
        "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn",
        "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
        "return", "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use",
        "where", "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final",
        "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
    ];
    if KEYWORDS.contains(&name) {
        Ident::new_raw(name, Span::call_site())
    } else {
        Ident::new(name, Span::call_site())
    }
}

fn doc(text: &str) -> TokenStream {
    let lines: Vec<TokenStream> = text
        .lines()
        .map(|l| {
            let l = format!(" {l}");
            quote!(#[doc = #l])
        })
        .collect();
    quote!(#(#lines)*)
}

fn ty_tokens(t: &Ty) -> TokenStream {
    match t {
        Ty::Str => quote!(String),
        Ty::Int(f) => {
            let i = format_ident!("{}", f.rust());
            quote!(#i)
        }
        Ty::F64 => quote!(f64),
        Ty::Bool => quote!(bool),
        Ty::Ref(n) => {
            let i = ident(n);
            quote!(#i)
        }
        Ty::Vec(i) => {
            let i = ty_tokens(i);
            quote!(Vec<#i>)
        }
        Ty::Tuple(ts) => {
            let ts = ts.iter().map(ty_tokens);
            quote!((#(#ts),*))
        }
        Ty::Json => {
            let rt = rt();
            quote!(#rt::Json)
        }
    }
}

fn field_ty(p: &Prop) -> TokenStream {
    let t = ty_tokens(&p.ty);
    match p.presence {
        Presence::Nullable | Presence::Omittable => quote!(Option<#t>),
        _ => t,
    }
}

fn arbitrary_attr(p: &Prop) -> TokenStream {
    let rt = rt();
    match (&p.ty, p.presence) {
        (Ty::F64, Presence::Nullable | Presence::Omittable) => {
            quote!(#[cfg_attr(feature = "arbitrary", arbitrary(with = #rt::arb::opt_finite_f64))])
        }
        (Ty::F64, _) => {
            quote!(#[cfg_attr(feature = "arbitrary", arbitrary(with = #rt::arb::finite_f64))])
        }
        // `Some(null)` and `None` are the same on the wire.
        (Ty::Json, Presence::Nullable | Presence::Omittable) => {
            quote!(#[cfg_attr(feature = "arbitrary", arbitrary(with = #rt::arb::opt_json))])
        }
        _ => quote!(),
    }
}

fn prop_doc(p: &Prop) -> String {
    let mut s = p.description.clone();
    if let Some(u) = &p.unit {
        s.push_str(&format!("\n\nUnit: `{u}`."));
    }
    let wire = match p.presence {
        Presence::Required => "required".to_owned(),
        Presence::Nullable => "always written; `null` when absent".to_owned(),
        Presence::Omittable => "left out when absent".to_owned(),
        Presence::Default => "always written; a missing key reads as the default".to_owned(),
        Presence::SkipDefault => {
            "left out when equal to the default; a missing key reads as the default".to_owned()
        }
    };
    s.push_str(&format!("\n\nWire: `{}` — {wire}.", p.name));
    if let Some(a) = &p.absent {
        s.push_str(&format!("\n\nAbsent: {a}"));
    }
    if let Some(pv) = &p.provenance {
        s.push_str(&format!(
            "\n\nAbsence discriminator: read it through [`Self::{}_provenance`].",
            p.name
        ));
        let _ = pv;
    }
    s
}

/// Renders one schema file into a module.
pub fn file(model: &Model, f: &FileModel) -> TokenStream {
    let items = f.defs.iter().map(|d| def(model, d));
    quote! {
        #[allow(unused_imports)]
        use super::*;
        #(#items)*
    }
}

fn def(model: &Model, d: &Def) -> TokenStream {
    let mut text = d.description.clone();
    if let Some(r) = &d.record {
        text.push_str(&format!("\n\nRecord kind `{r}`."));
    }
    let docs = doc(&text);
    match &d.kind {
        DefKind::Struct(s) => struct_def(model, d, s, docs),
        DefKind::Enum { values, open } => enum_def(d, values, *open, docs),
        DefKind::Union(u) => match u.style {
            Style::Internal => internal_union(model, d, u, docs),
            Style::Adjacent => adjacent_union(d, u, docs),
            Style::External => external_union(d, u, docs),
        },
        DefKind::NodeId => {
            let rt = rt();
            quote!(#docs #[doc(inline)] pub use #rt::NodeId;)
        }
        DefKind::NodeIdHex => {
            let rt = rt();
            quote!(#docs #[doc(inline)] pub use #rt::NodeIdHex;)
        }
        DefKind::Array(t) => {
            let name = ident(&d.name);
            let t = ty_tokens(t);
            quote!(#docs pub type #name = Vec<#t>;)
        }
    }
}

fn union_of<'a>(model: &'a Model, name: &str) -> Option<&'a UnionDef> {
    model
        .files
        .iter()
        .flat_map(|f| &f.defs)
        .find(|d| d.name == name)
        .and_then(|d| match &d.kind {
            DefKind::Union(u) => Some(u),
            _ => None,
        })
}

fn struct_def(model: &Model, d: &Def, s: &StructDef, docs: TokenStream) -> TokenStream {
    let rt = rt();
    let name = ident(&d.name);
    let builder = format_ident!("{}Builder", d.name);
    let type_name = &d.name;
    let flat = s.flatten.as_ref().map(|f| {
        let u = union_of(model, &f.union).expect("OK because the cross-check resolved it");
        (f, u)
    });
    let keeps_extra = !matches!(flat, Some((_, u)) if u.style == Style::Internal);

    let mut fields = Vec::new();
    let mut b_fields = Vec::new();
    let mut arms = Vec::new();
    let mut finish = Vec::new();
    let mut ser = Vec::new();
    for p in &s.props {
        let f = ident(&p.name);
        let key = &p.name;
        let ft = field_ty(p);
        let pd = doc(&prop_doc(p));
        let arb = arbitrary_attr(p);
        fields.push(quote!(#pd #arb pub #f: #ft,));
        b_fields.push(quote!(#f: Option<#ft>,));
        arms.push(quote!(#key => #rt::private::field_set(&mut self.#f, #key, value),));
        finish.push(match p.presence {
            Presence::Required => quote!(#f: #rt::private::finish_required(self.#f, #key)?,),
            Presence::Nullable | Presence::Omittable => quote!(#f: self.#f.flatten(),),
            Presence::Default | Presence::SkipDefault => quote!(#f: self.#f.unwrap_or_default(),),
        });
        ser.push(match p.presence {
            Presence::Required | Presence::Nullable | Presence::Default => {
                quote!(map.serialize_entry(#key, &self.#f)?;)
            }
            Presence::Omittable => {
                quote!(if let Some(v) = &self.#f { map.serialize_entry(#key, v)?; })
            }
            Presence::SkipDefault => {
                quote!(if !#rt::is_default(&self.#f) { map.serialize_entry(#key, &self.#f)?; })
            }
        });
    }
    let mut fallback = quote!(self.extra.accept(key, value));
    if let Some((fl, u)) = flat {
        let f = ident(&fl.field);
        let ut = ident(&fl.union);
        let ub = format_ident!("{}Builder", fl.union);
        let fd = doc(&format!(
            "The `{}` union, whose keys sit at this object's level.",
            fl.union
        ));
        fields.push(quote!(#fd pub #f: #ut,));
        b_fields.push(quote!(#f: #ub,));
        finish.push(quote!(#f: #rt::Builder::finish(self.#f)?,));
        ser.push(quote!(#rt::MapFields::serialize_fields(&self.#f, map)?;));
        if u.style == Style::Internal {
            fallback = quote!(#rt::Builder::accept(&mut self.#f, key, value));
        } else {
            arms.push(quote!(_ if #rt::Builder::claims(&self.#f, key) => #rt::Builder::accept(&mut self.#f, key, value),));
        }
    }
    if keeps_extra {
        fields.push(quote!(
            #[doc = " Keys this version of the contract does not know, kept and written back unchanged."]
            pub extra: #rt::Extra,
        ));
        b_fields.push(quote!(extra: #rt::Extra,));
        finish.push(quote!(extra: self.extra,));
        ser.push(quote!(self.extra.serialize_into(map)?;));
    }
    let dispatch = if arms.is_empty() {
        fallback
    } else {
        quote!(match key {
            #(#arms)*
            _ => #fallback,
        })
    };
    let default_derive = if defaultable(model, &d.name, &mut Vec::new()) {
        quote!(, Default)
    } else {
        quote!()
    };
    let accessors = provenance_accessors(&name, s);
    let builder_doc = format!(" Streaming deserializer of [`{}`].", d.name);
    quote! {
        #docs
        #[derive(Debug, Clone, PartialEq #default_derive)]
        #[cfg_attr(feature = "arbitrary", derive(::arbitrary::Arbitrary))]
        pub struct #name {
            #(#fields)*
        }

        #accessors

        #[doc = #builder_doc]
        #[doc(hidden)]
        #[derive(Default)]
        pub struct #builder {
            #(#b_fields)*
        }

        impl #rt::Builder for #builder {
            type Output = #name;
            const NAME: &'static str = #type_name;
            fn claims(&self, _key: &str) -> bool {
                true
            }
            fn accept<'de, D: #rt::private::serde::Deserializer<'de>>(&mut self, key: &str, value: D) -> Result<(), D::Error> {
                #dispatch
            }
            fn finish<E: #rt::private::serde::de::Error>(self) -> Result<#name, E> {
                Ok(#name { #(#finish)* })
            }
        }

        impl #rt::MapFields for #name {
            fn serialize_fields<M: #rt::private::serde::ser::SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
                #(#ser)*
                Ok(())
            }
        }

        impl #rt::private::serde::Serialize for #name {
            fn serialize<S: #rt::private::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use #rt::private::serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(None)?;
                #rt::MapFields::serialize_fields(self, &mut map)?;
                map.end()
            }
        }

        impl<'de> #rt::private::serde::Deserialize<'de> for #name {
            fn deserialize<D: #rt::private::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_map(#rt::BuilderVisitor::<#builder>::new())
            }
        }
    }
}

fn provenance_accessors(name: &Ident, s: &StructDef) -> TokenStream {
    let rt = rt();
    let mut out = Vec::new();
    for p in &s.props {
        let Some(pv) = &p.provenance else { continue };
        let f = ident(&p.name);
        let m = format_ident!("{}_provenance", p.name);
        let t = ty_tokens(&p.ty);
        let value = match p.presence {
            Presence::Nullable | Presence::Omittable => quote!(self.#f.as_ref()),
            _ => quote!(Some(&self.#f)),
        };
        let source = match &pv.source {
            Some(src) => {
                let sf = ident(src);
                let sp = s.props.iter().find(|q| &q.name == src).map(|q| q.presence);
                match sp {
                    Some(Presence::Nullable | Presence::Omittable) => {
                        quote!(self.#sf.as_ref().map(|s| s.as_str()))
                    }
                    _ => quote!(Some(self.#sf.as_str())),
                }
            }
            None => quote!(None),
        };
        let mut text = format!("How `{}` was obtained, or why it is absent.\n\n", p.name);
        if let Some(src) = &pv.source {
            text.push_str(&format!(
                "`{src}` says whether a present value was reported (`iroh`) or derived. "
            ));
        }
        match &pv.gap {
            Some(gap) => {
                text.push_str(&format!("`api_gaps` is the enclosing iroh block's gap list: when it names `{gap}`, an absent value means \"could not ask\" and a present one was derived."));
                let d = doc(&text);
                out.push(quote! {
                    #d
                    pub fn #m<G: AsRef<str>>(&self, api_gaps: &[G]) -> #rt::Provenance<&#t> {
                        let declared = api_gaps.iter().any(|g| g.as_ref() == #gap);
                        #rt::Provenance::resolve(#value, #source, Some((#gap, declared)))
                    }
                });
            }
            None => {
                let d = doc(&text);
                out.push(quote! {
                    #d
                    pub fn #m(&self) -> #rt::Provenance<&#t> {
                        #rt::Provenance::resolve(#value, #source, None)
                    }
                });
            }
        }
    }
    if out.is_empty() {
        return quote!();
    }
    quote!(impl #name { #(#out)* })
}

fn enum_def(d: &Def, values: &[String], open: bool, docs: TokenStream) -> TokenStream {
    let rt = rt();
    let name = ident(&d.name);
    let vars: Vec<Ident> = values
        .iter()
        .map(|v| format_ident!("{}", crate::model::variant_name(v)))
        .collect();
    let var_docs: Vec<String> = values.iter().map(|v| format!(" `{v}`.")).collect();
    let (other_var, other_str, other_de, other_arb) = if open {
        (
            quote!(
                #[doc = " A value this version of the contract does not know, kept as written."]
                Other(String),
            ),
            quote!(#name::Other(s) => s,),
            quote!(_ => #name::Other(s.into_owned()),),
            quote!(_ => #name::Other(#rt::arb::other_string(u, Self::VALUES)?),),
        )
    } else {
        (
            quote!(),
            quote!(),
            quote!(other => return Err(#rt::private::serde::de::Error::unknown_variant(other, Self::VALUES)),),
            quote!(_ => unreachable!("OK because the index is below the number of values"),),
        )
    };
    let n = values.len() + usize::from(open);
    let idx: Vec<usize> = (0..values.len()).collect();
    let type_name = &d.name;
    quote! {
        #docs
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum #name {
            #(#[doc = #var_docs] #vars,)*
            #other_var
        }

        impl #name {
            /// The values this version of the contract knows.
            pub const VALUES: &'static [&'static str] = &[#(#values),*];

            /// The value as written on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    #(#name::#vars => #values,)*
                    #other_str
                }
            }
        }

        impl AsRef<str> for #name {
            fn as_ref(&self) -> &str {
                self.as_str()
            }
        }

        impl ::core::fmt::Display for #name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl #rt::private::serde::Serialize for #name {
            fn serialize<S: #rt::private::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> #rt::private::serde::Deserialize<'de> for #name {
            fn deserialize<D: #rt::private::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let s = #rt::private::str_enum(deserializer)?;
                Ok(match &*s {
                    #(#values => #name::#vars,)*
                    #other_de
                })
            }
        }

        #[cfg(feature = "arbitrary")]
        impl<'a> ::arbitrary::Arbitrary<'a> for #name {
            fn arbitrary(u: &mut ::arbitrary::Unstructured<'a>) -> ::arbitrary::Result<Self> {
                let _ = #type_name;
                Ok(match u.choose_index(#n)? {
                    #(#idx => #name::#vars,)*
                    #other_arb
                })
            }
        }
    }
}

fn internal_union(model: &Model, d: &Def, u: &UnionDef, docs: TokenStream) -> TokenStream {
    let rt = rt();
    let name = ident(&d.name);
    let builder = format_ident!("{}Builder", d.name);
    let tag = &u.tag;
    let type_name = &d.name;
    let mut vars = Vec::new();
    let mut bvars = Vec::new();
    let mut resolve = Vec::new();
    let mut forward = Vec::new();
    let mut finish = Vec::new();
    let mut ser = Vec::new();
    let mut tag_of = Vec::new();
    let tags: Vec<&str> = u.variants.iter().map(|v| v.tag.as_str()).collect();
    for v in &u.variants {
        let Payload::Def(target) = &v.payload else {
            continue;
        };
        let var = ident(&v.rust);
        let tt = ident(target);
        let tb = format_ident!("{}Builder", target);
        let t = &v.tag;
        let vd = doc(&format!("`{tag}: {t}`. {}", description_of(model, target)));
        vars.push(quote!(#vd #var(#tt),));
        bvars.push(quote!(#var(#tb),));
        resolve.push(quote!(#t => Self::#var(Default::default()),));
        forward.push(quote!(Self::#var(b) => #rt::Builder::accept(b, key, value),));
        finish.push(quote!(Self::#var(b) => #name::#var(#rt::Builder::finish(b)?),));
        ser.push(quote!(#name::#var(v) => { map.serialize_entry(#tag, #t)?; #rt::MapFields::serialize_fields(v, map)?; }));
        tag_of.push(quote!(#name::#var(_) => #t,));
    }
    let (
        other_var,
        other_bvar,
        other_resolve,
        other_forward,
        other_finish,
        other_ser,
        other_tag,
        arb_fn,
    ) = if u.open {
        let arb_name = format_ident!("arbitrary_other_{}", d.name.to_lowercase());
        (
            quote!(
                #[doc = " A variant this version of the contract does not know: its tag and every other key, written back unchanged."]
                Other(#[cfg_attr(feature = "arbitrary", arbitrary(with = #arb_name))] #rt::UnknownVariant),
            ),
            quote!(Other(#rt::private::UnknownVariantBuilder),),
            quote!(other => Self::Other(#rt::private::UnknownVariantBuilder::new(other.to_owned())),),
            quote!(Self::Other(b) => #rt::Builder::accept(b, key, value),),
            quote!(Self::Other(b) => #name::Other(#rt::Builder::finish(b)?),),
            quote!(#name::Other(v) => { map.serialize_entry(#tag, &v.tag)?; v.fields.serialize_into(map)?; }),
            quote!(#name::Other(v) => &v.tag,),
            quote!(
                #[cfg(feature = "arbitrary")]
                fn #arb_name(u: &mut ::arbitrary::Unstructured<'_>) -> ::arbitrary::Result<#rt::UnknownVariant> {
                    #rt::arb::unknown_variant(u, #name::TAGS)
                }
            ),
        )
    } else {
        (
            quote!(),
            quote!(),
            quote!(other => return Err(#rt::private::serde::de::Error::unknown_variant(other, #name::TAGS)),),
            quote!(),
            quote!(),
            quote!(),
            quote!(),
            quote!(),
        )
    };
    quote! {
        #docs
        #[derive(Debug, Clone, PartialEq)]
        #[cfg_attr(feature = "arbitrary", derive(::arbitrary::Arbitrary))]
        pub enum #name {
            #(#vars)*
            #other_var
        }

        #arb_fn

        impl #name {
            /// The tag key.
            pub const TAG: &'static str = #tag;
            /// The tag values this version of the contract knows.
            pub const TAGS: &'static [&'static str] = &[#(#tags),*];

            /// The tag value of this variant as written on the wire.
            pub fn tag(&self) -> &str {
                match self {
                    #(#tag_of)*
                    #other_tag
                }
            }
        }

        #[doc(hidden)]
        pub enum #builder {
            Pending(#rt::Pending),
            #(#bvars)*
            #other_bvar
        }

        impl Default for #builder {
            fn default() -> Self {
                Self::Pending(#rt::Pending::default())
            }
        }

        impl #rt::Builder for #builder {
            type Output = #name;
            const NAME: &'static str = #type_name;
            fn claims(&self, _key: &str) -> bool {
                true
            }
            fn accept<'de, D: #rt::private::serde::Deserializer<'de>>(&mut self, key: &str, value: D) -> Result<(), D::Error> {
                match self {
                    Self::Pending(pending) => {
                        if key != #tag {
                            return pending.push(key, value);
                        }
                        let tag = #rt::private::internal_tag(value)?;
                        let mut next = match &*tag {
                            #(#resolve)*
                            #other_resolve
                        };
                        #rt::private::pending_replay(::core::mem::take(pending), &mut next)?;
                        *self = next;
                        Ok(())
                    }
                    _ if key == #tag => Err(#rt::private::serde::de::Error::duplicate_field(#tag)),
                    #(#forward)*
                    #other_forward
                }
            }
            fn finish<E: #rt::private::serde::de::Error>(self) -> Result<#name, E> {
                Ok(match self {
                    Self::Pending(_) => return Err(E::missing_field(#tag)),
                    #(#finish)*
                    #other_finish
                })
            }
        }

        impl #rt::MapFields for #name {
            fn serialize_fields<M: #rt::private::serde::ser::SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
                match self {
                    #(#ser)*
                    #other_ser
                }
                Ok(())
            }
        }

        impl #rt::private::serde::Serialize for #name {
            fn serialize<S: #rt::private::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use #rt::private::serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(None)?;
                #rt::MapFields::serialize_fields(self, &mut map)?;
                map.end()
            }
        }

        impl<'de> #rt::private::serde::Deserialize<'de> for #name {
            fn deserialize<D: #rt::private::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_map(#rt::BuilderVisitor::<#builder>::new())
            }
        }
    }
}

fn description_of(model: &Model, name: &str) -> String {
    model
        .files
        .iter()
        .flat_map(|f| &f.defs)
        .find(|d| d.name == name)
        .map(|d| d.description.clone())
        .unwrap_or_default()
}

fn adjacent_union(d: &Def, u: &UnionDef, docs: TokenStream) -> TokenStream {
    let rt = rt();
    let name = ident(&d.name);
    let builder = format_ident!("{}Builder", d.name);
    let tag = &u.tag;
    let content = u.content.clone().unwrap_or_default();
    let type_name = &d.name;
    let tags: Vec<&str> = u.variants.iter().map(|v| v.tag.as_str()).collect();
    let mut vars = Vec::new();
    let mut finish = Vec::new();
    let mut ser = Vec::new();
    let mut tag_of = Vec::new();
    for v in &u.variants {
        let var = ident(&v.rust);
        let t = &v.tag;
        let vd = doc(&format!("`{tag}: {t}`. {}", v.description));
        match &v.payload {
            Payload::Unit => {
                vars.push(quote!(#vd #var,));
                finish.push(quote!(#t => match self.content {
                    None => #name::#var,
                    Some(_) => return Err(E::custom(::core::format_args!("unexpected `{}` for `{}: {}`", #content, #tag, #t))),
                },));
                ser.push(quote!(#name::#var => { map.serialize_entry(#tag, #t)?; }));
                tag_of.push(quote!(#name::#var => #t,));
            }
            Payload::Ty(ty) => {
                let tt = ty_tokens(ty);
                let arb = if *ty == Ty::F64 {
                    quote!(#[cfg_attr(feature = "arbitrary", arbitrary(with = #rt::arb::finite_f64))])
                } else {
                    quote!()
                };
                vars.push(quote!(#vd #var(#arb #tt),));
                finish.push(quote!(#t => match self.content {
                    Some(raw) => #name::#var(#rt::private::serde_json::from_str(raw.get()).map_err(|e| E::custom(::core::format_args!("{e} (in `{}`)", #content)))?),
                    None => return Err(E::missing_field(#content)),
                },));
                ser.push(quote!(#name::#var(v) => { map.serialize_entry(#tag, #t)?; map.serialize_entry(#content, v)?; }));
                tag_of.push(quote!(#name::#var(_) => #t,));
            }
            Payload::Def(_) => {}
        }
    }
    let (other_var, other_finish, other_ser, other_tag, arb_fn) = if u.open {
        let arb_name = format_ident!("arbitrary_other_tag_{}", d.name.to_lowercase());
        let (content_ty, content_read, content_write) = if u.other_content_required {
            (
                quote!(#rt::Json),
                quote!(match self.content {
                    Some(raw) => #rt::private::serde_json::from_str(raw.get()).map_err(E::custom)?,
                    None => return Err(E::missing_field(#content)),
                }),
                quote!(map.serialize_entry(#content, content)?;),
            )
        } else {
            (
                quote!(Option<#rt::Json>),
                quote!(match self.content {
                    Some(raw) => Some(#rt::private::serde_json::from_str(raw.get()).map_err(E::custom)?),
                    None => None,
                }),
                quote!(if let Some(c) = content { map.serialize_entry(#content, c)?; }),
            )
        };
        (
            quote!(
                #[doc = " A variant this version of the contract does not know, written back unchanged."]
                Other {
                    /// The tag value.
                    #[cfg_attr(feature = "arbitrary", arbitrary(with = #arb_name))]
                    tag: String,
                    /// The content as written.
                    content: #content_ty,
                },
            ),
            quote!(other => #name::Other {
                tag: other.to_owned(),
                content: #content_read,
            },),
            quote!(#name::Other { tag, content } => {
                map.serialize_entry(#tag, tag)?;
                #content_write
            }),
            quote!(#name::Other { tag, .. } => tag,),
            quote!(
                #[cfg(feature = "arbitrary")]
                fn #arb_name(u: &mut ::arbitrary::Unstructured<'_>) -> ::arbitrary::Result<String> {
                    #rt::arb::other_string(u, #name::TAGS)
                }
            ),
        )
    } else {
        (
            quote!(),
            quote!(other => return Err(#rt::private::serde::de::Error::unknown_variant(other, #name::TAGS)),),
            quote!(),
            quote!(),
            quote!(),
        )
    };
    quote! {
        #docs
        #[derive(Debug, Clone, PartialEq)]
        #[cfg_attr(feature = "arbitrary", derive(::arbitrary::Arbitrary))]
        pub enum #name {
            #(#vars)*
            #other_var
        }

        #arb_fn

        impl #name {
            /// The tag key.
            pub const TAG: &'static str = #tag;
            /// The content key.
            pub const CONTENT: &'static str = #content;
            /// The tag values this version of the contract knows.
            pub const TAGS: &'static [&'static str] = &[#(#tags),*];

            /// The tag value of this variant as written on the wire.
            pub fn tag(&self) -> &str {
                match self {
                    #(#tag_of)*
                    #other_tag
                }
            }
        }

        #[doc(hidden)]
        #[derive(Default)]
        pub struct #builder {
            tag: Option<String>,
            content: Option<Box<#rt::private::serde_json::value::RawValue>>,
        }

        impl #rt::Builder for #builder {
            type Output = #name;
            const NAME: &'static str = #type_name;
            fn claims(&self, key: &str) -> bool {
                key == #tag || key == #content
            }
            fn accept<'de, D: #rt::private::serde::Deserializer<'de>>(&mut self, key: &str, value: D) -> Result<(), D::Error> {
                if key == #tag {
                    #rt::private::field_set(&mut self.tag, #tag, value)
                } else {
                    #rt::private::field_set(&mut self.content, #content, value)
                }
            }
            fn finish<E: #rt::private::serde::de::Error>(self) -> Result<#name, E> {
                let tag = #rt::private::finish_required(self.tag, #tag)?;
                Ok(match tag.as_str() {
                    #(#finish)*
                    #other_finish
                })
            }
        }

        impl #rt::MapFields for #name {
            fn serialize_fields<M: #rt::private::serde::ser::SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
                match self {
                    #(#ser)*
                    #other_ser
                }
                Ok(())
            }
        }

        impl #rt::private::serde::Serialize for #name {
            fn serialize<S: #rt::private::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use #rt::private::serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(None)?;
                #rt::MapFields::serialize_fields(self, &mut map)?;
                map.end()
            }
        }

        impl<'de> #rt::private::serde::Deserialize<'de> for #name {
            fn deserialize<D: #rt::private::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_map(#rt::BuilderVisitor::<#builder>::new())
            }
        }
    }
}

fn external_union(d: &Def, u: &UnionDef, docs: TokenStream) -> TokenStream {
    let rt = rt();
    let name = ident(&d.name);
    let expecting = format!("`{}`: one of the strings or a one-key object", d.name);
    let tags: Vec<&str> = u.variants.iter().map(|v| v.tag.as_str()).collect();
    let mut vars = Vec::new();
    let mut ser = Vec::new();
    let mut unit_de = Vec::new();
    let mut data_de = Vec::new();
    for v in &u.variants {
        let var = ident(&v.rust);
        let t = &v.tag;
        let vd = doc(&format!("`{t}`. {}", v.description));
        match &v.payload {
            Payload::Unit => {
                vars.push(quote!(#vd #var,));
                ser.push(quote!(#name::#var => serializer.serialize_str(#t),));
                unit_de.push(quote!(#t => Ok(#name::#var),));
            }
            Payload::Ty(ty) => {
                let tt = ty_tokens(ty);
                vars.push(quote!(#vd #var(#tt),));
                ser.push(quote!(#name::#var(v) => {
                    use #rt::private::serde::ser::SerializeMap;
                    let mut map = serializer.serialize_map(Some(1))?;
                    map.serialize_entry(#t, v)?;
                    map.end()
                }));
                data_de.push(quote!(#t => #name::#var(map.next_value()?),));
            }
            Payload::Def(_) => {}
        }
    }
    quote! {
        #docs
        #[derive(Debug, Clone, PartialEq)]
        #[cfg_attr(feature = "arbitrary", derive(::arbitrary::Arbitrary))]
        pub enum #name {
            #(#vars)*
        }

        impl #name {
            /// The variant names this version of the contract knows.
            pub const TAGS: &'static [&'static str] = &[#(#tags),*];
        }

        impl #rt::private::serde::Serialize for #name {
            fn serialize<S: #rt::private::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    #(#ser)*
                }
            }
        }

        impl<'de> #rt::private::serde::Deserialize<'de> for #name {
            fn deserialize<D: #rt::private::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                use #rt::private::serde::de::{self, MapAccess, Visitor};
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = #name;
                    fn expecting(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                        f.write_str(#expecting)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<#name, E> {
                        match v {
                            #(#unit_de)*
                            other => Err(E::unknown_variant(other, #name::TAGS)),
                        }
                    }
                    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<#name, A::Error> {
                        let Some(key) = map.next_key_seed(#rt::KeySeed)? else {
                            return Err(de::Error::invalid_length(0, &self));
                        };
                        let out = match &*key {
                            #(#data_de)*
                            other => return Err(de::Error::unknown_variant(other, #name::TAGS)),
                        };
                        if map.next_key_seed(#rt::KeySeed)?.is_some() {
                            return Err(de::Error::invalid_length(2, &self));
                        }
                        Ok(out)
                    }
                }
                deserializer.deserialize_any(V)
            }
        }
    }
}

/// Whether a definition's type has a `Default` (every struct whose fields all have one: options,
/// collections, strings, numbers, ids, and such structs), so consumers can build records with
/// `..Default::default()` and keep compiling when a later minor version adds optional fields.
fn defaultable(model: &Model, name: &str, seen: &mut Vec<String>) -> bool {
    if seen.iter().any(|s| s == name) {
        return false;
    }
    let Some(def) = model
        .files
        .iter()
        .flat_map(|f| &f.defs)
        .find(|d| d.name == name)
    else {
        return false;
    };
    match &def.kind {
        DefKind::NodeId | DefKind::NodeIdHex | DefKind::Array(_) => true,
        DefKind::Enum { .. } | DefKind::Union(_) => false,
        DefKind::Struct(s) => {
            if s.flatten.is_some() {
                return false;
            }
            seen.push(name.to_owned());
            let ok = s.props.iter().all(|p| match p.presence {
                Presence::Nullable | Presence::Omittable => true,
                _ => ty_defaultable(model, &p.ty, seen),
            });
            seen.pop();
            ok
        }
    }
}

fn ty_defaultable(model: &Model, t: &Ty, seen: &mut Vec<String>) -> bool {
    match t {
        Ty::Str | Ty::Int(_) | Ty::F64 | Ty::Bool | Ty::Json | Ty::Vec(_) => true,
        Ty::Tuple(ts) => ts.iter().all(|t| ty_defaultable(model, t, seen)),
        Ty::Ref(n) => defaultable(model, n, seen),
    }
}
