//! Renders the resolved model into Rust source.
//!
//! Each definition becomes a type with its documentation, a `new` constructor for structs, the
//! `*_provenance` accessors of its absence discriminators, and one call of a `diagwire-runtime`
//! macro (`object!`, `internal_union!`, `str_enum!`) that adds the decoder and the serde impls.
//! Macro calls are laid out here, one field or variant per line; everything else goes through
//! `prettyplease`, so the output is byte-deterministic without a rustfmt toolchain.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

use diagwire_schema::model::{
    Def, DefKind, FileModel, IntWidth, Model, Payload, Presence, Prop, StructDef, Ty, UnionDef,
    UnionStyle, variant_name,
};

/// A piece of a generated file: tokens for `prettyplease`, or text laid out by hand.
pub enum Part {
    /// Items to format.
    Tokens(TokenStream),
    /// Text written as is (macro calls).
    Text(String),
}

/// Renders parts into source: runs of tokens are formatted together, text is copied.
pub fn render(parts: Vec<Part>) -> Result<String, syn::Error> {
    let mut out = String::new();
    let mut pending = TokenStream::new();
    let flush = |pending: &mut TokenStream, out: &mut String| -> Result<(), syn::Error> {
        if !pending.is_empty() {
            let file: syn::File = syn::parse2(std::mem::take(pending))?;
            out.push_str(&prettyplease::unparse(&file));
        }
        Ok(())
    };
    for part in parts {
        match part {
            Part::Tokens(t) => pending.extend(t),
            Part::Text(s) => {
                flush(&mut pending, &mut out)?;
                out.push_str(&s);
            }
        }
    }
    flush(&mut pending, &mut out)?;
    Ok(out)
}

const RT: &str = "::diagwire_runtime";

fn rt() -> TokenStream {
    RT.parse().expect("OK because the path is a constant")
}

/// A Rust identifier for a schema name, raw when it is a keyword.
pub fn ident(name: &str) -> Ident {
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

/// The Rust type of a field: its value type, in an `Option` when it may be absent.
fn field_ty(p: &Prop) -> TokenStream {
    let t = ty_tokens(&p.ty);
    match p.presence {
        Presence::Nullable | Presence::Omittable => quote!(Option<#t>),
        _ => t,
    }
}

/// The same type as text, for macro calls.
fn field_ty_text(p: &Prop) -> String {
    ty_tokens_text(&field_ty(p))
}

fn ty_tokens_text(t: &TokenStream) -> String {
    // `quote` spaces every token; tighten the few shapes types use.
    t.to_string()
        .replace(" :: ", "::")
        .replace(":: ", "::")
        .replace(" < ", "<")
        .replace(" >", ">")
        .replace("( ", "(")
        .replace(" )", ")")
        .replace(" ,", ",")
}

fn presence_word(p: Presence) -> &'static str {
    match p {
        Presence::Required => "req",
        Presence::Nullable => "null",
        Presence::Omittable => "omit",
        Presence::Default => "dflt",
        Presence::SkipDefault => "skip",
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
    if let Some(d) = &p.derived {
        s.push_str(&format!("\n\nDerived, not observed: {d}"));
    }
    if p.provenance.is_some() {
        s.push_str(&format!(
            "\n\nAbsence discriminator: read it through [`Self::{}_provenance`].",
            p.name
        ));
    }
    s
}

/// Renders one schema file's definitions.
pub fn file(model: &Model, f: &FileModel) -> Vec<Part> {
    let mut parts = vec![Part::Tokens(quote! {
        #[allow(unused_imports)]
        use super::*;
    })];
    for d in &f.defs {
        parts.extend(def(model, d));
    }
    parts
}

fn def(model: &Model, d: &Def) -> Vec<Part> {
    let mut text = d.description.clone();
    if let Some(r) = &d.record {
        text.push_str(&format!("\n\nRecord kind `{r}`."));
    }
    let docs = doc(&text);
    let grows = if d.facts.grows {
        quote!(#[non_exhaustive])
    } else {
        quote!()
    };
    match &d.kind {
        DefKind::Struct(s) => struct_def(model, d, s, docs, grows),
        DefKind::Enum { values, open } => enum_def(d, values, *open, docs, grows),
        DefKind::Union(u) => match u.style {
            UnionStyle::Internal => internal_union(model, d, u, docs, grows),
            UnionStyle::Adjacent => vec![Part::Tokens(adjacent_union(d, u, docs, grows))],
            UnionStyle::External => vec![Part::Tokens(external_union(d, u, docs))],
        },
        DefKind::NodeId => {
            let rt = rt();
            vec![Part::Tokens(
                quote!(#docs #[doc(inline)] pub use #rt::NodeId;),
            )]
        }
        DefKind::NodeIdHex => {
            let rt = rt();
            vec![Part::Tokens(
                quote!(#docs #[doc(inline)] pub use #rt::NodeIdHex;),
            )]
        }
        DefKind::Array(t) => {
            let name = ident(&d.name);
            let t = ty_tokens(t);
            vec![Part::Tokens(quote!(#docs pub type #name = Vec<#t>;))]
        }
    }
}

/// The decoder type behind a definition's `Deserialize` (hidden; not a builder: construction is
/// `new` and the public fields).
fn decoder(name: &str) -> Ident {
    format_ident!("{}Decoder", name)
}

fn struct_def(
    model: &Model,
    d: &Def,
    s: &StructDef,
    docs: TokenStream,
    grows: TokenStream,
) -> Vec<Part> {
    let rt = rt();
    let name = ident(&d.name);
    let mut fields = Vec::new();
    let mut macro_fields = String::new();
    for p in &s.props {
        let f = ident(&p.name);
        let ft = field_ty(p);
        let pd = doc(&prop_doc(p));
        let arb = arbitrary_attr(p);
        fields.push(quote!(#pd #arb pub #f: #ft,));
        macro_fields.push_str(&format!(
            "    {}: {} = {:?} {},\n",
            f,
            field_ty_text(p),
            p.name,
            presence_word(p.presence)
        ));
    }
    let mut flat = String::new();
    if let Some(fl) = &s.flatten {
        let f = ident(&fl.field);
        let ut = ident(&fl.union);
        let fd = doc(&format!(
            "The `{}` union, whose keys sit at this object's level.",
            fl.union
        ));
        fields.push(quote!(#fd pub #f: #ut,));
        flat = format!("{}: {}", f, decoder(&fl.union));
    }
    let extra = if d.facts.keeps_extra {
        fields.push(quote!(
            #[doc = " Keys this version of the contract does not know, kept and written back unchanged."]
            pub extra: #rt::Extra,
        ));
        "extra"
    } else {
        ""
    };
    let default_derive = if d.facts.defaultable {
        quote!(, Default)
    } else {
        quote!()
    };
    let ctor = constructor(model, d, s);
    let accessors = provenance_accessors(s);
    let type_def = quote! {
        #docs
        #[derive(Debug, Clone, PartialEq #default_derive)]
        #[cfg_attr(feature = "arbitrary", derive(::arbitrary::Arbitrary))]
        #grows
        pub struct #name {
            #(#fields)*
        }

        impl #name {
            #ctor
            #(#accessors)*
        }
    };
    let braced = |s: &str| {
        if s.is_empty() {
            "{}".to_owned()
        } else {
            format!("{{ {s} }}")
        }
    };
    let call = format!(
        "::diagwire_runtime::object!({name}, {dec}, {lit:?} {{\n{macro_fields}}} flat {flat} extra {extra});\n",
        flat = braced(&flat),
        extra = braced(extra),
        name = d.name,
        dec = decoder(&d.name),
        lit = d.name,
    );
    vec![Part::Tokens(type_def), Part::Text(call)]
}

/// `new`: the required fields in schema order and an absorbed union last; everything optional
/// starts absent (or at its default), so calls keep compiling when a minor version adds fields.
fn constructor(model: &Model, d: &Def, s: &StructDef) -> TokenStream {
    let mut params = Vec::new();
    let mut inits = Vec::new();
    let mut arg_docs = Vec::new();
    for p in &s.props {
        let f = ident(&p.name);
        match p.presence {
            Presence::Required => {
                let t = ty_tokens(&p.ty);
                if p.ty == Ty::Str {
                    params.push(quote!(#f: impl Into<String>));
                    inits.push(quote!(#f: #f.into(),));
                } else {
                    params.push(quote!(#f: #t));
                    inits.push(quote!(#f,));
                }
                arg_docs.push(format!("`{}`", p.name));
            }
            Presence::Nullable | Presence::Omittable => inits.push(quote!(#f: None,)),
            Presence::Default | Presence::SkipDefault => {
                inits.push(quote!(#f: Default::default(),))
            }
        }
    }
    if let Some(fl) = &s.flatten {
        let f = ident(&fl.field);
        let ut = ident(&fl.union);
        params.push(quote!(#f: impl Into<#ut>));
        inits.push(quote!(#f: #f.into(),));
        arg_docs.push(format!("the `{}` union", fl.union));
    }
    if d.facts.keeps_extra {
        inits.push(quote!(extra: Default::default(),));
    }
    let _ = model;
    let text = if arg_docs.is_empty() {
        "A value with every field absent or at its default; set the public fields to fill it in."
            .to_owned()
    } else {
        format!(
            "Builds the value from its required fields ({}), in schema order; every optional field starts absent or at its default and can be set afterwards.",
            arg_docs.join(", ")
        )
    };
    let docs = doc(&text);
    let must_use = quote!(#[must_use]);
    let many = if params.len() > 7 {
        quote!(#[allow(clippy::too_many_arguments)])
    } else {
        quote!()
    };
    if params.is_empty() && d.facts.defaultable {
        return quote! {
            #docs
            #must_use
            pub fn new() -> Self {
                Self::default()
            }
        };
    }
    quote! {
        #docs
        #must_use
        #many
        pub fn new(#(#params),*) -> Self {
            Self { #(#inits)* }
        }
    }
}

fn provenance_accessors(s: &StructDef) -> Vec<TokenStream> {
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
                "`{src}` says whether a present value was reported (`iroh`, `orchestrator`, `driver`, `measured`, `relay`) or derived, or that the writer could not ask (`unavailable`: then the accessor says so whatever value is written). "
            ));
        }
        match &pv.gap {
            Some(gap) => {
                text.push_str(&format!("`api_gaps` is the gap list that applies to this value: when it names `{gap}`, an absent value means \"could not ask\" and a present one was derived."));
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
    out
}

fn enum_def(
    d: &Def,
    values: &[String],
    open: bool,
    docs: TokenStream,
    grows: TokenStream,
) -> Vec<Part> {
    let name = ident(&d.name);
    let vars: Vec<Ident> = values
        .iter()
        .map(|v| format_ident!("{}", variant_name(v)))
        .collect();
    let var_docs: Vec<String> = values.iter().map(|v| format!(" `{v}`.")).collect();
    let other_var = if open {
        quote!(
            #[doc = " A value this version of the contract does not know, kept as written."]
            Other(String),
        )
    } else {
        quote!()
    };
    let type_def = quote! {
        #docs
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #grows
        pub enum #name {
            #(#[doc = #var_docs] #vars,)*
            #other_var
        }
    };
    let mut call = format!("::diagwire_runtime::str_enum!({} {{\n", d.name);
    for (v, value) in vars.iter().zip(values) {
        call.push_str(&format!("    {v} = {value:?},\n"));
    }
    call.push_str(if open {
        "} other { Other });\n"
    } else {
        "} other {});\n"
    });
    vec![Part::Tokens(type_def), Part::Text(call)]
}

fn internal_union(
    model: &Model,
    d: &Def,
    u: &UnionDef,
    docs: TokenStream,
    grows: TokenStream,
) -> Vec<Part> {
    let rt = rt();
    let name = ident(&d.name);
    let mut vars = Vec::new();
    let mut froms = Vec::new();
    let mut call_vars = String::new();
    for v in &u.variants {
        let Payload::Def(target) = &v.payload else {
            continue;
        };
        let var = ident(&v.rust);
        let tt = ident(target);
        let t = &v.tag;
        let description = model
            .def(target)
            .map(|d| d.description.clone())
            .unwrap_or_default();
        let vd = doc(&format!("`{}: {t}`. {description}", u.tag));
        vars.push(quote!(#vd #var(#tt),));
        froms.push(quote! {
            impl From<#tt> for #name {
                fn from(v: #tt) -> Self {
                    #name::#var(v)
                }
            }
        });
        call_vars.push_str(&format!("    {var}({}) = {t:?},\n", decoder(target)));
    }
    let (other_var, arb_fn) = if u.open {
        let arb_name = format_ident!("arbitrary_other_{}", d.name.to_lowercase());
        (
            quote!(
                #[doc = " A variant this version of the contract does not know: its tag and every other key, written back unchanged."]
                Other(#[cfg_attr(feature = "arbitrary", arbitrary(with = #arb_name))] #rt::UnknownVariant),
            ),
            quote!(
                #[cfg(feature = "arbitrary")]
                fn #arb_name(u: &mut ::arbitrary::Unstructured<'_>) -> ::arbitrary::Result<#rt::UnknownVariant> {
                    #rt::arb::unknown_variant(u, #name::TAGS)
                }
            ),
        )
    } else {
        (quote!(), quote!())
    };
    let type_def = quote! {
        #docs
        #[derive(Debug, Clone, PartialEq)]
        #[cfg_attr(feature = "arbitrary", derive(::arbitrary::Arbitrary))]
        #grows
        pub enum #name {
            #(#vars)*
            #other_var
        }

        #arb_fn

        #(#froms)*
    };
    let call = format!(
        "::diagwire_runtime::internal_union!({n}, {dec}, {n:?}, tag {tag:?} {{\n{call_vars}}} other {other});\n",
        n = d.name,
        dec = decoder(&d.name),
        tag = u.tag,
        other = if u.open { "{ Other }" } else { "{}" },
    );
    let mut parts = vec![Part::Tokens(type_def), Part::Text(call)];
    parts.extend(union_type_enum(d, u, grows));
    parts
}

/// `<Name>Type`: the variants of an internally tagged union without their fields, so that code
/// names a type (in a test, a filter) with a value the compiler checks rather than a string.
fn union_type_enum(d: &Def, u: &UnionDef, grows: TokenStream) -> Vec<Part> {
    let name = ident(&d.name);
    let type_name = format!("{}Type", d.name);
    let ty = ident(&type_name);
    let mut vars = Vec::new();
    let mut arms = Vec::new();
    let mut call = format!("::diagwire_runtime::str_enum!({type_name} {{\n");
    for v in &u.variants {
        if !matches!(v.payload, Payload::Def(_)) {
            continue;
        }
        let var = ident(&v.rust);
        let vd = doc(&format!("`{}: {}`.", u.tag, v.tag));
        vars.push(quote!(#vd #var,));
        arms.push(quote!(#name::#var(_) => #ty::#var,));
        call.push_str(&format!("    {} = {:?},\n", v.rust, v.tag));
    }
    let (other_var, other_arm) = if u.open {
        call.push_str("} other { Other });\n");
        (
            quote!(
                #[doc = " A type this version of the contract does not know, as written."]
                Other(String),
            ),
            quote!(#name::Other(_) => #ty::Other(self.tag().to_owned()),),
        )
    } else {
        call.push_str("} other {});\n");
        (quote!(), quote!())
    };
    let type_doc = doc(&format!(
        "The type of a [`{n}`] without its fields: one value per type this version of the contract knows (the `{tag}` key on the wire).",
        n = d.name,
        tag = u.tag
    ));
    let fn_doc = doc(&format!("The type of this `{}`.", d.name));
    let tokens = quote! {
        #type_doc
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #grows
        pub enum #ty {
            #(#vars)*
            #other_var
        }

        impl #name {
            #fn_doc
            pub fn type_of(&self) -> #ty {
                match self {
                    #(#arms)*
                    #other_arm
                }
            }
        }
    };
    vec![Part::Tokens(tokens), Part::Text(call)]
}

fn adjacent_union(d: &Def, u: &UnionDef, docs: TokenStream, grows: TokenStream) -> TokenStream {
    let rt = rt();
    let name = ident(&d.name);
    let decoder = decoder(&d.name);
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
        #grows
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
        pub struct #decoder {
            tag: Option<String>,
            content: Option<Box<#rt::private::serde_json::value::RawValue>>,
        }

        impl #rt::Decoder for #decoder {
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

        #rt::__map_serde!(#name, #decoder);
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

// ---------------------------------------------------------------------------------------------
// The contract's shape as data (`diagwire_runtime::shape`).

fn int_width(f: IntWidth) -> &'static str {
    match f {
        IntWidth::U8 => "U8",
        IntWidth::U16 => "U16",
        IntWidth::U32 => "U32",
        IntWidth::U64 => "U64",
        IntWidth::I32 => "I32",
        IntWidth::I64 => "I64",
    }
}

fn value_shape(t: &Ty) -> String {
    match t {
        Ty::Str => "V::Str".into(),
        Ty::Int(f) => format!("V::Int(W::{})", int_width(*f)),
        Ty::F64 => "V::F64".into(),
        Ty::Bool => "V::Bool".into(),
        Ty::Json => "V::Json".into(),
        Ty::Ref(n) => format!("V::Ref({n:?})"),
        Ty::Vec(i) => format!("V::Vec(&{})", value_shape(i)),
        Ty::Tuple(ts) => format!(
            "V::Tuple(&[{}])",
            ts.iter().map(value_shape).collect::<Vec<_>>().join(", ")
        ),
    }
}

fn presence_shape(p: Presence) -> &'static str {
    match p {
        Presence::Required => "P::Required",
        Presence::Nullable => "P::Nullable",
        Presence::Omittable => "P::Omittable",
        Presence::Default => "P::Default",
        Presence::SkipDefault => "P::SkipDefault",
    }
}

/// `shape.rs` of a contract module: every type of the model as `diagwire_runtime::shape` data,
/// sorted by name.
pub fn shape_file(model: &Model) -> String {
    let mut defs: Vec<(&str, &Def)> = model
        .files
        .iter()
        .flat_map(|f| f.defs.iter().map(move |d| (f.stem.as_str(), d)))
        .collect();
    defs.sort_by(|a, b| a.1.name.cmp(&b.1.name));
    let mut out = String::from(
        "//! The shape of every type of this contract version, as data (see `diagwire_runtime::shape`).\n\n\
         use ::diagwire_runtime::shape::{\n    FieldShape as F, IntWidth as W, PayloadShape as Pl, Presence as P, TypeKind as K,\n    TypeShape, UnionStyle as S, ValueShape as V,\n};\n\n\
         /// Every type, sorted by name.\n\
         pub static TYPES: &[TypeShape] = &[\n",
    );
    for (stem, d) in defs {
        let kind = match &d.kind {
            DefKind::Struct(s) => {
                let mut k = String::from("K::Struct {\n            fields: &[\n");
                for p in &s.props {
                    let mut f = format!(
                        "F::new({:?}, {}, {})",
                        p.name,
                        value_shape(&p.ty),
                        presence_shape(p.presence)
                    );
                    if let Some(u) = &p.unit {
                        f.push_str(&format!(".unit({u:?})"));
                    }
                    if let Some(pv) = &p.provenance {
                        if let Some(src) = &pv.source {
                            f.push_str(&format!(".source({src:?})"));
                        }
                        if let Some(g) = &pv.gap {
                            f.push_str(&format!(".gap({g:?})"));
                        }
                    }
                    k.push_str(&format!("                {f},\n"));
                }
                k.push_str("            ],\n");
                k.push_str(&format!(
                    "            flatten: {},\n",
                    match &s.flatten {
                        Some(fl) => format!("Some({:?})", fl.union),
                        None => "None".into(),
                    }
                ));
                let consts: Vec<String> = s
                    .consts
                    .iter()
                    .map(|(a, b)| format!("({a:?}, {b:?})"))
                    .collect();
                k.push_str(&format!("            consts: &[{}],\n", consts.join(", ")));
                k.push_str(&format!(
                    "            keeps_extra: {},\n        }}",
                    d.facts.keeps_extra
                ));
                k
            }
            DefKind::Enum { values, open } => format!(
                "K::Enum {{ values: &[{}], open: {open} }}",
                values
                    .iter()
                    .map(|v| format!("{v:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            DefKind::Union(u) => {
                let style = match u.style {
                    UnionStyle::Internal => "S::Internal",
                    UnionStyle::Adjacent => "S::Adjacent",
                    UnionStyle::External => "S::External",
                };
                let mut k = format!(
                    "K::Union {{\n            style: {style},\n            tag: {:?},\n            content: {},\n            open: {},\n            variants: &[\n",
                    u.tag,
                    match &u.content {
                        Some(c) => format!("Some({c:?})"),
                        None => "None".into(),
                    },
                    u.open
                );
                for v in &u.variants {
                    let payload = match &v.payload {
                        Payload::Unit => "Pl::Unit".to_owned(),
                        Payload::Def(n) => format!("Pl::Def({n:?})"),
                        Payload::Ty(t) => format!("Pl::Value({})", value_shape(t)),
                    };
                    k.push_str(&format!(
                        "                ::diagwire_runtime::shape::VariantShape {{ tag: {:?}, payload: {payload} }},\n",
                        v.tag
                    ));
                }
                k.push_str("            ],\n        }");
                k
            }
            DefKind::NodeId => "K::NodeId".into(),
            DefKind::NodeIdHex => "K::NodeIdHex".into(),
            DefKind::Array(t) => format!("K::Array({})", value_shape(t)),
        };
        out.push_str(&format!(
            "    TypeShape {{\n        name: {:?},\n        schema: {stem:?},\n        kind: {kind},\n    }},\n",
            d.name
        ));
    }
    out.push_str("];\n");
    out
}
