//! Kubernetes' rules for names, as the API server validates them: qualified names (label and
//! annotation keys), label values, DNS-1123 subdomains and RBAC names; and the settings types
//! checked by them. A name these accept can be written into a selector's query text as it is:
//! none holds `,`, `=`, `!`, `(`, `)` or a space.

use std::borrow::Cow;

use crate::byte_class::{all_in, class, with, Class, ALPHANUMERIC};

use crate::settings::checked;

checked! {
    /// An annotation key (a qualified name), for the records the policies keep on objects.
    pub struct AnnotationKey(Cow<'static, str>) = |key| match qualified_name(&key) {
        Ok(()) => Ok(Cow::Owned(key)),
        Err(_) => Err(format!("{key:?} is not a valid annotation key ([prefix/]name)")),
    };
}

checked! {
    /// A label key (a qualified name), as selectors name it.
    #[derive(PartialOrd, Ord)]
    pub struct LabelKey(String) = |key| match qualified_name(&key) {
        Ok(()) => Ok(key),
        Err(e) => Err(format!("label key {e}")),
    };
}

checked! {
    /// A label value, as selectors name it.
    pub struct LabelValue(String) = |value| label_value(&value).map(|()| value);
}

checked! {
    /// An RBAC API group a SubjectAccessReview asks about: a DNS-1123 subdomain's characters.
    /// The empty group is the core API group, whose roles grant real powers over nodes, so it
    /// is refused.
    pub struct ApiGroup(Cow<'static, str>) = |group| {
        if group.is_empty() {
            return Err("the core API group (\"\") is refused: roles over real node resources \
                        would grant this permission; name a group no API server serves, such as \
                        \"taintguard.io\""
                .to_owned());
        }
        rbac_name(&group, true).map(|()| Cow::Owned(group))
    };
}

checked! {
    /// An RBAC resource or verb: lower-case letters, digits and `-`.
    pub struct RbacName(Cow<'static, str>) = |name| rbac_name(&name, false).map(|()| Cow::Owned(name));
}

// Each name's text, as `&str`: the `Cow`s (a built-in default borrows its text) have no other
// way to it, and for the labels' `String`s it reads as a path (`.map(LabelKey::as_str)`).
macro_rules! as_str {
    ($($name:ident),*) => {$(
        impl $name {
            /// The name as written.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }
    )*};
}
as_str!(AnnotationKey, ApiGroup, RbacName, LabelKey, LabelValue);

impl AnnotationKey {
    /// A built-in annotation key, `const` and unchecked as
    /// [`TaintKeyGlob::constant`](crate::taint::TaintKeyGlob::constant) is; the defaults read
    /// back through the checks in the settings tests.
    pub const fn constant(key: &'static str) -> AnnotationKey {
        AnnotationKey(Cow::Borrowed(key))
    }
}

/// RBAC matches groups, resources and verbs exactly, so the characters a role can name are
/// checked here rather than found wrong in an audit: lower-case letters, digits, `-` and, in a
/// group, `.`.
fn rbac_name(name: &str, group: bool) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && name.chars().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || (group && c == '.')
        });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not an RBAC name: lower-case letters, digits and `-`{}",
            if group { " and `.`" } else { "" }
        ))
    }
}

/// `[prefix/]name`: the prefix a DNS-1123 subdomain, the name at most 63 characters of letters,
/// digits, `-`, `_` and `.`, alphanumeric at both ends. Label keys and annotation keys.
///
/// # Errors
///
/// Which rule `key` breaks, with `key` quoted.
///
/// # Examples
///
/// ```
/// use taintguard::k8s_names::qualified_name;
///
/// assert!(qualified_name("node-role.kubernetes.io/worker").is_ok());
/// assert!(qualified_name("pool,zone").is_err());
/// ```
pub fn qualified_name(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        dns1123_subdomain(prefix).map_err(|e| format!("{key:?}: its prefix {e}"))?;
    }
    let name_ok = !name.is_empty() && name.len() <= 63 && name_characters(name);
    if name_ok {
        Ok(())
    } else {
        Err(format!(
            "{key:?} is not a qualified name ([prefix/]name: the name 1 to 63 letters, digits, \
             `-`, `_` and `.`, alphanumeric at both ends)"
        ))
    }
}

/// A label value: empty, or at most 63 letters, digits, `-`, `_` and `.`, alphanumeric at both
/// ends.
///
/// # Errors
///
/// Which rule `value` breaks, with `value` quoted.
pub fn label_value(value: &str) -> Result<(), String> {
    if value.is_empty() || (value.len() <= 63 && name_characters(value)) {
        Ok(())
    } else {
        Err(format!(
            "{value:?} is not a label value (at most 63 letters, digits, `-`, `_` and `.`, \
             alphanumeric at both ends)"
        ))
    }
}

/// A DNS-1123 subdomain: at most 253 characters, dot-separated labels of lower-case letters,
/// digits and `-`, alphanumeric at both ends.
///
/// # Errors
///
/// Which rule `name` breaks, with `name` quoted.
pub fn dns1123_subdomain(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a DNS-1123 subdomain (lower-case letters, digits, `-` and `.`)"
        ))
    }
}

/// A character a taint key may hold: taint keys are qualified names, whose characters are
/// letters, digits, `-`, `_`, `.` and the prefix's `/`. Where a whole qualified name's rules are
/// too strict (a glob over keys, a key only compared), this is the check.
pub fn taint_key_character(c: char) -> bool {
    u8::try_from(c).is_ok_and(|b| TAINT_KEY_BYTES[usize::from(b)])
}

/// Whether every character of `key` is one a taint key may hold ([`taint_key_character`]),
/// read by bytes from a table ([`all_in`]): no byte of a character outside ASCII is one of
/// them. Decoded a character at a time, each through a call, a key cost a call a character
/// (benchmarks/cost.md, "Splicing the mutated object").
pub fn taint_key_characters(key: &str) -> bool {
    all_in(key.as_bytes(), &TAINT_KEY_BYTES)
}

/// The bytes of a name's characters: ASCII letters and digits, `-`, `_` and `.`.
const NAME_BYTES: Class = class(&[
    ALPHANUMERIC[0],
    ALPHANUMERIC[1],
    ALPHANUMERIC[2],
    (b'-', b'-'),
    (b'_', b'_'),
    (b'.', b'.'),
]);

/// The bytes of a taint key's characters: a name's, and the prefix's `/`.
const TAINT_KEY_BYTES: Class = with(NAME_BYTES, b'/');

fn name_characters(name: &str) -> bool {
    let bytes = name.as_bytes();
    all_in(bytes, &NAME_BYTES)
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_the_api_server_validates_them() {
        let long_name = "a".repeat(64);
        let long_prefix = format!("{}/a", "a".repeat(254));
        // (text, qualified name, label value)
        let cases = [
            ("app", true, true),
            ("node-role.kubernetes.io/worker", true, false),
            ("taintguard.io/cordoned-by", true, false),
            ("", false, true),
            ("a,b", false, false),
            ("a=b", false, false),
            ("!a", false, false),
            ("a b", false, false),
            ("(a)", false, false),
            ("-a", false, false),
            ("a_", false, false),
            ("A.b_c-D", true, true),
            ("Example.com/a", false, false),
            ("/a", false, false),
            ("a/", false, false),
            ("a/b/c", false, false),
            (long_name.as_str(), false, false),
            (long_prefix.as_str(), false, false),
        ];
        for (text, key, value) in cases {
            assert_eq!(qualified_name(text).is_ok(), key, "qualified name {text:?}");
            assert_eq!(label_value(text).is_ok(), value, "label value {text:?}");
        }
    }

    /// A key's bytes tell what its characters do: none of a character outside ASCII passes.
    #[test]
    fn taint_key_characters_read_by_bytes_as_by_characters() {
        for key in [
            "node-role.kubernetes.io/control-plane",
            "A_b-9/x.y",
            "",
            "a b",
            "a:b",
            "é",
            "aé",
            "a\u{ff}",
            "a\u{10ffff}",
            "\u{0}",
            "a*",
        ] {
            assert_eq!(
                taint_key_characters(key),
                key.chars().all(taint_key_character),
                "{key:?}"
            );
        }
        assert!(taint_key_characters("node.kubernetes.io/not-ready"));
        assert!(!taint_key_characters("é"));
    }
}
