//! What settings types are built with: newtypes checked while they are read ([`checked!`]),
//! enums written as strings ([`string_enum!`]), and objects read from JSON objects only
//! ([`settings_object!`]), each with the `Deserialize` and `Serialize` impls that report an
//! error at the value it is about.

use std::fmt;

use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserialize, Deserializer, MapAccess, Unexpected, Visitor};

/// Reads a `T` from a JSON string through its `TryFrom<String>`, the error reported at the
/// string. (serde's `try_from` attribute makes the error after the string is read, outside
/// serde_json's reader of it, so serde_json places it after the enclosing object when the string
/// is that object's last member, and the path would name the object.)
///
/// # Errors
///
/// A value that is not a string, or the conversion's error.
pub fn deserialize_checked<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<String, Error = String>,
{
    struct CheckedVisitor<T>(std::marker::PhantomData<T>);
    impl<T: TryFrom<String, Error = String>> Visitor<'_> for CheckedVisitor<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<T, E> {
            T::try_from(text.to_owned()).map_err(E::custom)
        }
    }
    deserializer.deserialize_str(CheckedVisitor(std::marker::PhantomData))
}

/// Reads a `T` that keeps nothing of its text (an enum settings write as a string) through its
/// `TryFrom<&str>`, the error reported at the string as in [`deserialize_checked`], without the
/// copy of the string that one makes for the types that keep it.
///
/// # Errors
///
/// A value that is not a string, or the conversion's error.
pub fn deserialize_keyword<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: for<'t> TryFrom<&'t str, Error = String>,
{
    struct KeywordVisitor<T>(std::marker::PhantomData<T>);
    impl<T: for<'t> TryFrom<&'t str, Error = String>> Visitor<'_> for KeywordVisitor<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<T, E> {
            T::try_from(text).map_err(E::custom)
        }
    }
    deserializer.deserialize_str(KeywordVisitor(std::marker::PhantomData))
}

/// Gives a type converted from settings text its `Deserialize` impl, through `read`
/// ([`deserialize_checked`] unless given: `TryFrom<String, Error = String>`; or
/// [`deserialize_keyword`]: `TryFrom<&str, Error = String>`); it is written back as
/// `Into<$text>`.
#[macro_export]
macro_rules! from_string {
    ($type:ty, into = $text:ty) => {
        $crate::from_string!($type, into = $text, read = deserialize_checked);
    };
    ($type:ty, into = $text:ty, read = $read:ident) => {
        impl<'de> serde::Deserialize<'de> for $type {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $crate::settings::$read(deserializer)
            }
        }

        impl serde::Serialize for $type {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serde::Serialize::serialize(&<$text>::from(self.clone()), serializer)
            }
        }
    };
}
pub use from_string;

/// Reads `null` as the type's default, as the API server reads a `null` field of a pod spec;
/// for the few settings fields written as in one.
///
/// # Errors
///
/// What reading a `T` finds.
pub fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
}

/// An enum settings write as one of a fixed set of strings (`"restore"`, `"NoSchedule"`): its
/// `as_str`, `ALL`, the conversions from text (the error names what it is and what was
/// expected) and its serde impls.
#[macro_export]
macro_rules! string_enum {
    (
        $(#[$attr:meta])*
        pub enum $name:ident { $($(#[$variant_attr:meta])* $variant:ident = $text:literal),+ $(,)? }
        unknown = $what:literal, expected = $expected:literal;
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($(#[$variant_attr])* $variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl TryFrom<&str> for $name {
            type Error = String;
            fn try_from(text: &str) -> Result<$name, String> {
                match text {
                    $($text => Ok($name::$variant),)+
                    other => Err(format!("unknown {} {other:?}; expected {}", $what, $expected)),
                }
            }
        }

        impl From<$name> for &'static str {
            fn from(value: $name) -> &'static str {
                value.as_str()
            }
        }

        $crate::from_string!($name, into = &'static str, read = deserialize_keyword);
    };
}
pub use string_enum;

/// A value checked while it is read: a newtype over `$inner` that only `$parse` (text to
/// `$inner`, or why not) builds, read from and written as a JSON string. Its error is reported at
/// the field, as every settings error is.
#[macro_export]
macro_rules! checked {
    ($(#[$attr:meta])* pub struct $name:ident($inner:ty) = $parse:expr;) => {
        $(#[$attr])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name($inner);

        $crate::from_string!($name, into = String);

        impl TryFrom<String> for $name {
            type Error = String;
            fn try_from(text: String) -> Result<Self, String> {
                let parse: fn(String) -> Result<$inner, String> = $parse;
                parse(text).map($name)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0.into()
            }
        }

        impl std::ops::Deref for $name {
            type Target = $inner;
            fn deref(&self) -> &$inner {
                &self.0
            }
        }

        impl $name {
            /// A value the code itself writes (a default), valid by construction. Defaults
            /// are built on every request, so it is checked in debug builds, which every test
            /// runs, and taken as it is in release builds.
            #[allow(dead_code)]
            pub fn builtin(text: &'static str) -> $name {
                let value = $name(<$inner as $crate::settings::Builtin>::builtin(text));
                debug_assert_eq!(
                    $name::try_from(text.to_owned()).as_ref(),
                    Ok(&value),
                    "a built-in {} is valid and read as written",
                    stringify!($name)
                );
                value
            }
        }
    };
}
pub use checked;

/// What a [`checked!`] value holds, built from a literal the code writes without checking it.
pub trait Builtin {
    fn builtin(text: &'static str) -> Self;
}

impl Builtin for String {
    fn builtin(text: &'static str) -> String {
        text.to_owned()
    }
}

/// Borrowed: nothing copied when the default is made, nothing freed when it is dropped.
impl Builtin for std::borrow::Cow<'static, str> {
    fn builtin(text: &'static str) -> Self {
        std::borrow::Cow::Borrowed(text)
    }
}

/// A settings object whose derives carry `#[serde(remote = "Self")]`, so that [`settings_object!`]
/// can give it the `Deserialize` and `Serialize` impls.
pub trait SettingsObject: Sized {
    /// The derived reader of the object's fields.
    fn from_fields<'de, D: Deserializer<'de>>(fields: D) -> Result<Self, D::Error>;

    /// Whether settings may write the object as a bare string too, read by
    /// [`SettingsObject::from_str`].
    const STRING_FORM: bool = false;

    /// What a bare string stands for where settings may write the object so (a taint selector
    /// as its key glob); `None` where they may not.
    fn from_str(_text: &str) -> Option<Result<Self, String>> {
        None
    }
}

/// Reads a [`SettingsObject`] from a JSON object, or a string where it has a string form. A
/// derived struct alone would also read a JSON array as its fields in order (`[true]` as
/// `{"enabled": true}`), which settings never mean.
pub fn deserialize_object<'de, D: Deserializer<'de>, T: SettingsObject>(
    deserializer: D,
) -> Result<T, D::Error> {
    struct ObjectVisitor<T>(std::marker::PhantomData<T>);
    impl<'de, T: SettingsObject> Visitor<'de> for ObjectVisitor<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::from_fields(MapAccessDeserializer::new(map))
        }
        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<T, E> {
            match T::from_str(text) {
                Some(object) => object.map_err(E::custom),
                None => Err(E::invalid_type(Unexpected::Str(text), &self)),
            }
        }
    }
    // Without a string form, an object only: serde_json then refuses anything else before
    // reading into it, so the error is placed at the value, not inside an array it opened.
    if T::STRING_FORM {
        deserializer.deserialize_any(ObjectVisitor(std::marker::PhantomData))
    } else {
        deserializer.deserialize_map(ObjectVisitor(std::marker::PhantomData))
    }
}

/// Gives a settings object derived with `#[serde(remote = "Self")]` its `Deserialize` (from a
/// JSON object only, [`deserialize_object`]) and `Serialize` impls; with `from_str = f`, a bare
/// string is read as `f` reads it too. A const generic is written as in its declaration:
/// `settings_object!(PrincipalList<const ADMINS: bool>)`.
#[macro_export]
macro_rules! settings_object {
    ($type:ident<const $param:ident: $kind:ty>) => {
        $crate::settings_object!(@impl [const $param: $kind] $type<$param>);
    };
    ($type:ident $(, from_str = $from_str:expr)?) => {
        $crate::settings_object!(@impl [] $type $(, from_str = $from_str)?);
    };
    (@impl [$($generics:tt)*] $type:ty $(, from_str = $from_str:expr)?) => {
        impl<$($generics)*> $crate::settings::SettingsObject for $type {
            fn from_fields<'de, D: serde::Deserializer<'de>>(fields: D) -> Result<Self, D::Error> {
                <$type>::deserialize(fields)
            }
            $(
                const STRING_FORM: bool = true;
                fn from_str(text: &str) -> Option<Result<Self, String>> {
                    Some($from_str(text))
                }
            )?
        }

        impl<'de, $($generics)*> serde::Deserialize<'de> for $type {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $crate::settings::deserialize_object(deserializer)
            }
        }

        impl<$($generics)*> serde::Serialize for $type {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                <$type>::serialize(self, serializer)
            }
        }
    };
}
pub use settings_object;
