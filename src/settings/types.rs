//! What settings values are built with: newtypes checked while they are read ([`checked!`]) and
//! enums written as strings ([`string_enum!`]), each with its [`ReadSettings`] impl, which
//! reports an error at the value it is about, and its `Serialize` impl. Objects are structs
//! with `#[derive(SettingsFields)]`, read from JSON objects only.
//!
//! [`ReadSettings`]: super::ReadSettings

/// Gives a type converted from settings text its [`ReadSettings`](super::ReadSettings) impl
/// (through `TryFrom<String, Error = String>`, or with `read = keyword` through
/// `TryFrom<&str, Error = String>`, for a type that keeps nothing of its text and so needs no
/// copy of it); it is written back as `Into<$text>`.
#[macro_export]
macro_rules! from_string {
    ($type:ty, into = $text:ty) => {
        $crate::from_string!(@impl $type, $text, owned_string, |text: String| {
            <$type>::try_from(text)
        });
    };
    ($type:ty, into = $text:ty, read = keyword) => {
        $crate::from_string!(@impl $type, $text, string, |text: std::borrow::Cow<'_, str>| {
            <$type>::try_from(&*text)
        });
    };
    (@impl $type:ty, $text:ty, $read:ident, $convert:expr) => {
        impl $crate::settings::ReadSettings for $type {
            fn read(
                reader: &mut $crate::settings::Reader<'_>,
                at: $crate::settings::At<'_>,
            ) -> Result<Self, $crate::settings::SettingsError> {
                let convert = $convert;
                convert(reader.$read(at)?).map_err(|m| at.error(m))
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

/// An enum settings write as one of a fixed set of strings (`"restore"`, `"NoSchedule"`): its
/// `as_str`, `ALL`, the conversions from text (the error names what it is and what was
/// expected) and its serde impls.
///
/// # Examples
///
/// ```
/// use taintguard::settings::string_enum;
///
/// string_enum! {
///     /// What a policy does with what it finds.
///     pub enum Action {
///         /// Refuses the request.
///         Deny = "deny",
///         /// Admits it with a warning.
///         Warn = "warn",
///     }
///     unknown = "action", expected = "\"deny\" or \"warn\"";
/// }
///
/// assert_eq!(Action::try_from("warn"), Ok(Action::Warn));
/// assert_eq!(Action::Deny.as_str(), "deny");
/// assert_eq!(Action::ALL, [Action::Deny, Action::Warn]);
/// let error = Action::try_from("log").unwrap_err();
/// assert_eq!(error, "unknown action \"log\"; expected \"deny\" or \"warn\"");
/// ```
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
            /// Every value, in the order declared.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The string settings write it as.
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

        $crate::from_string!($name, into = &'static str, read = keyword);
    };
}
pub use string_enum;

/// A value checked while it is read: a newtype over `$inner` that only `$parse` (text to
/// `$inner`, or why not) builds, read from and written as a JSON string. Its error is reported at
/// the field, as every settings error is.
///
/// # Examples
///
/// ```
/// use taintguard::settings::{checked, read};
///
/// checked! {
///     /// A team name: lower-case letters.
///     pub struct Team(String) = |text| {
///         if !text.is_empty() && text.bytes().all(|b| b.is_ascii_lowercase()) {
///             Ok(text)
///         } else {
///             Err(format!("{text:?} is not a team name"))
///         }
///     };
/// }
///
/// let teams: Vec<Team> = read(r#"["infra", "web"]"#).unwrap();
/// assert_eq!(teams[1].as_str(), "web");
/// let error = read::<Vec<Team>>(r#"["infra", "Web"]"#).unwrap_err();
/// assert_eq!(error.to_string(), "settings field `[1]`: \"Web\" is not a team name");
/// ```
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
    /// The value `text` stands for, taken as it is: [`checked!`]'s `builtin` checks it in
    /// debug builds.
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
