//! `#[derive(SettingsFields)]`: reads a settings object's fields straight from JSON text with
//! the core's settings reader (`taintguard::settings::Reader`), each value checked as it is read
//! and every error at its field (the core's `settings` module says how). It implements both
//! `SettingsFields` (the fields, by name) and `ReadSettings` (the object as a settings value), so
//! that one derive makes a struct a settings object.
//!
//! The field names come from the struct's `#[serde(...)]` attributes, the ones its
//! `Serialize` derive writes with, so one declaration names each field for both directions:
//! `rename_all = "camelCase"`, `rename`, `default` (the struct's or a field's, optionally
//! `= "path"`). Unknown fields are always refused. Attributes only `Serialize` reads (`remote`,
//! `skip_serializing_if`, `serialize_with`, `borrow`) are passed over; any other is an error,
//! so that no attribute is silently ignored. Its own attributes: on a field,
//! `#[settings(null_as_default)]` reads a field's `null` as its default, as the API server
//! reads a `null` field of a pod spec; on the struct, `#[settings(from_str = "path")]` reads a
//! bare string as the function `path` (`fn(&str) -> Result<Self, String>`) reads it too (a taint
//! selector as its key glob).
//!
//! Generated code names the core `::taintguard` (which the core itself declares with
//! `extern crate self as taintguard`). A missing field is what serde makes it: the field's own
//! default (`default`, or `default = "path"`), else the struct's (its `Default`, or its
//! `default = "path"`), else `None` for an `Option`, else an error at the field.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::{format_ident, quote};
use syn::{Data, DeriveInput, Error, ExprPath, Fields, LitStr, Type};

/// See the crate documentation.
#[proc_macro_derive(SettingsFields, attributes(serde, settings))]
pub fn settings_fields(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as DeriveInput);
    expand(&input)
        .unwrap_or_else(Error::into_compile_error)
        .into()
}

/// What a struct's or a field's `default` says.
#[derive(Clone)]
enum WhenAbsent {
    /// None: a field is required (an `Option` is `None` when absent, as serde has it).
    None,
    /// `Default::default()`.
    Trait,
    /// A function that makes it.
    Path(ExprPath),
}

impl WhenAbsent {
    /// The expression that makes the default, if there is one.
    fn made(&self) -> Option<Tokens> {
        match self {
            WhenAbsent::None => None,
            WhenAbsent::Trait => Some(quote!(::core::default::Default::default())),
            WhenAbsent::Path(path) => Some(quote!(#path())),
        }
    }
}

struct Container {
    default: WhenAbsent,
    camel_case: bool,
    /// `#[settings(from_str = "path")]`: how a bare string is read, where one may stand for
    /// the object.
    from_str: Option<ExprPath>,
}

struct Field {
    ident: syn::Ident,
    name: String,
    default: WhenAbsent,
    null_as_default: bool,
    optional: bool,
}

/// The two impls (`ReadSettings`, `SettingsFields`) the derive writes for `input`, or the
/// error at whatever the derive does not read. The steps are each their own function so that
/// each part of the generated code can be read on its own.
fn expand(input: &DeriveInput) -> syn::Result<Tokens> {
    let named = named_fields(input)?;
    let container = container(input)?;
    let fields = named
        .named
        .iter()
        .map(|f| field(f, container.camel_case))
        .collect::<syn::Result<Vec<_>>>()?;
    let members = members(&fields, &container.default);
    let body = match &container.default {
        WhenAbsent::None => body_of_required(&input.ident, &fields, &members),
        default => body_from_default(default, &fields, &members),
    };
    let from_str = container.from_str.as_ref().map(bare_string_read);
    Ok(impls(input, &fields, &body, from_str))
}

/// The struct's named fields, or the error that says why the derive cannot read `input`: it
/// reads structs of named fields only, and at most 64 of them (the generated code keeps the
/// fields given as bits of a `u64`).
fn named_fields(input: &DeriveInput) -> syn::Result<&syn::FieldsNamed> {
    let Data::Struct(data) = &input.data else {
        return Err(Error::new_spanned(
            input,
            "SettingsFields reads structs only",
        ));
    };
    let Fields::Named(named) = &data.fields else {
        return Err(Error::new_spanned(
            input,
            "SettingsFields reads named fields only",
        ));
    };
    if named.named.len() > 64 {
        return Err(Error::new_spanned(input, "at most 64 fields"));
    }
    Ok(named)
}

/// The generated loop over the object's members, which reads each known field where `default`
/// says it goes: into a local `field_<i>` when the struct has no default (it is built once all
/// are read), else straight into `out`, the struct's default.
fn members(fields: &[Field], default: &WhenAbsent) -> Tokens {
    let reads = fields.iter().enumerate().map(|(i, f)| {
        let read = if f.null_as_default {
            quote!(reader.read_or_default(at)?)
        } else {
            quote!(::taintguard::settings::ReadSettings::read(reader, at)?)
        };
        let target = match default {
            WhenAbsent::None => {
                let local = format_ident!("field_{}", i);
                quote!(#local = Some(#read))
            }
            _ => {
                let ident = &f.ident;
                quote!(out.#ident = #read)
            }
        };
        quote!(#i => #target,)
    });
    quote! {
        reader.open_object(at, "an object")?;
        let (mut read, mut given) = (0, 0);
        while let Some(key) = reader.next_key(&mut read)? {
            let at = at.field(&key);
            match ::taintguard::settings::Reader::field_index(&key, Self::FIELDS, &mut given, at)? {
                #(#reads)*
                _ => {}
            }
        }
    }
}

/// The body of `read_fields` for a struct without a default: each field read into a local, then
/// the struct built from them, a field not given taking its own default, `None` for an
/// `Option`, or failing as required.
fn body_of_required(name: &syn::Ident, fields: &[Field], members: &Tokens) -> Tokens {
    let locals = (0..fields.len()).map(|i| format_ident!("field_{}", i));
    let declared = locals.clone();
    let built = fields.iter().zip(locals).map(|(f, local)| {
        let ident = &f.ident;
        let name = &f.name;
        let absent = match f.default.made() {
            Some(made) => made,
            None if f.optional => quote!(::core::option::Option::None),
            None => quote!(
                return Err(at.field(#name).error("required field is missing"))
            ),
        };
        quote!(#ident: match #local { Some(value) => value, None => #absent },)
    });
    quote! {
        #(let mut #declared = None;)*
        #members
        Ok(#name { #(#built)* })
    }
}

/// The body of `read_fields` for a struct with a default (`default`, `Trait` or `Path`): the
/// fields given are read over that default, then each field not given that has a default of its
/// own takes it.
fn body_from_default(default: &WhenAbsent, fields: &[Field], members: &Tokens) -> Tokens {
    let start = match default {
        WhenAbsent::Path(path) => quote!(#path()),
        _ => quote!(<Self as ::core::default::Default>::default()),
    };
    // A field's own default wins over the struct's for a field not given, as in serde.
    let own_defaults = fields.iter().enumerate().filter_map(|(i, f)| {
        let ident = &f.ident;
        let value = f.default.made()?;
        Some(quote!(if given & (1 << #i) == 0 { out.#ident = #value; }))
    });
    quote! {
        let mut out: Self = #start;
        #members
        #(#own_defaults)*
        Ok(out)
    }
}

/// The start of the generated `ReadSettings::read` for `#[settings(from_str = "path")]`: a bare
/// string where the object stands is read by the function `path`, its error put at the value.
fn bare_string_read(path: &ExprPath) -> Tokens {
    quote! {
        if reader.at_string() {
            let text = reader.string(at)?;
            let from_str: fn(&str) -> ::core::result::Result<Self, ::std::string::String> = #path;
            return from_str(&text).map_err(|m| at.error(m));
        }
    }
}

/// The `ReadSettings` and `SettingsFields` impls for `input`'s struct, with `body` as
/// `read_fields` and the bare string read (if any) before it in `read`.
fn impls(input: &DeriveInput, fields: &[Field], body: &Tokens, from_str: Option<Tokens>) -> Tokens {
    let name = &input.ident;
    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    let names = fields.iter().map(|f| &f.name);
    quote! {
        impl #impl_generics ::taintguard::settings::ReadSettings for #name #type_generics #where_clause {
            fn read(
                reader: &mut ::taintguard::settings::Reader<'_>,
                at: ::taintguard::settings::At<'_>,
            ) -> ::core::result::Result<Self, ::taintguard::settings::SettingsError> {
                #from_str
                <Self as ::taintguard::settings::SettingsFields>::read_fields(reader, at)
            }
        }

        impl #impl_generics ::taintguard::settings::SettingsFields for #name #type_generics #where_clause {
            const FIELDS: &'static [&'static str] = &[#(#names),*];

            fn read_fields(
                reader: &mut ::taintguard::settings::Reader<'_>,
                at: ::taintguard::settings::At<'_>,
            ) -> ::core::result::Result<Self, ::taintguard::settings::SettingsError> {
                #body
            }
        }
    }
}

fn container(input: &DeriveInput) -> syn::Result<Container> {
    let mut container = Container {
        default: WhenAbsent::None,
        camel_case: false,
        from_str: None,
    };
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("settings")) {
        attr.parse_nested_meta(|meta| {
            if !meta.path.is_ident("from_str") {
                return Err(meta.error("the one settings attribute of a struct is from_str"));
            }
            let path: LitStr = meta.value()?.parse()?;
            container.from_str = Some(path.parse()?);
            Ok(())
        })?;
    }
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("default") {
                container.default = default_of(&meta)?;
            } else if meta.path.is_ident("rename_all") {
                let rule: LitStr = meta.value()?.parse()?;
                if rule.value() != "camelCase" {
                    return Err(meta.error("only rename_all = \"camelCase\" is read"));
                }
                container.camel_case = true;
            } else if meta.path.is_ident("remote") {
                meta.value()?.parse::<LitStr>()?;
            } else if !meta.path.is_ident("deny_unknown_fields") {
                return Err(meta.error("an attribute SettingsFields does not read"));
            }
            Ok(())
        })?;
    }
    Ok(container)
}

fn field(f: &syn::Field, camel_case: bool) -> syn::Result<Field> {
    let ident = f.ident.clone().expect("named fields");
    let plain = ident.to_string();
    let mut out = Field {
        name: if camel_case { camel(&plain) } else { plain },
        ident,
        default: WhenAbsent::None,
        null_as_default: false,
        optional: is_option(&f.ty),
    };
    for attr in f.attrs.iter().filter(|a| a.path().is_ident("settings")) {
        attr.parse_nested_meta(|meta| {
            if !meta.path.is_ident("null_as_default") {
                return Err(meta.error("the one settings attribute is null_as_default"));
            }
            out.null_as_default = true;
            Ok(())
        })?;
    }
    for attr in f.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                out.name = meta.value()?.parse::<LitStr>()?.value();
            } else if meta.path.is_ident("default") {
                out.default = default_of(&meta)?;
            } else if meta.path.is_ident("skip_serializing_if")
                || meta.path.is_ident("serialize_with")
            {
                meta.value()?.parse::<LitStr>()?;
            } else if !meta.path.is_ident("borrow") {
                return Err(meta.error("an attribute SettingsFields does not read"));
            }
            Ok(())
        })?;
    }
    Ok(out)
}

fn default_of(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<WhenAbsent> {
    if meta.input.peek(syn::Token![=]) {
        let path: LitStr = meta.value()?.parse()?;
        Ok(WhenAbsent::Path(path.parse()?))
    } else {
        Ok(WhenAbsent::Trait)
    }
}

/// `only_at_registration` as `onlyAtRegistration`, as serde's `camelCase` renames it.
fn camel(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether a field's type is written `Option<...>`: serde reads such a field as `None` when it
/// is absent, `default` or not, and so does this.
fn is_option(ty: &Type) -> bool {
    match ty {
        Type::Path(path) => path
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "Option"),
        _ => false,
    }
}
