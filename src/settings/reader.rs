//! The settings reader: JSON text read straight into the settings types, one pass, each value
//! checked as it is read and every error at the path of its value.
//!
//! It replaced serde's derive, for speed and size both: settings cost fewer instructions and
//! each waPC module is smaller (benchmarks/cost.md, "Settings read by a reader of our own").
//! Errors no longer depend on serde's wording, which the old reader matched by its text to
//! reword it. A settings object is a loop over its members that finds each key
//! among the field names the struct's `#[derive(SettingsFields)]` lists (the names its serde
//! attributes give, so `Serialize` writes what this reads), and each value is read by its
//! type's [`ReadSettings`].
//!
//! Only text that is JSON is read: every byte is read by a token's reader built on the
//! request's scanner (`json::scan`), which accepts what serde_json accepts. A string with a
//! `\u` escape is decoded by serde_json, which checks its surrogates. Any error, syntax or not,
//! is said by [`super::read`], which asks serde_json first whether the text is JSON at all, so
//! that a syntax error anywhere wins over a field's error before it.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::{At, SettingsError};
use crate::json::flat::decoded_str;
use crate::json::{self, scan};

/// What [`Reader`] answers for text that is not JSON; [`super::read`] replaces it with
/// serde_json's words.
pub(super) const NOT_JSON: &str = "not valid JSON";

fn not_json() -> SettingsError {
    SettingsError::new("", NOT_JSON)
}

/// A cursor over settings text, at the start of a value (whitespace skipped) or past the last
/// value read.
#[derive(Debug)]
pub struct Reader<'t> {
    text: &'t str,
    at: usize,
    /// The arrays and objects open around the cursor: a `serde_json::Value` read inside them
    /// may nest only as deep as serde_json allows the whole text to.
    depth: usize,
}

impl<'t> Reader<'t> {
    /// A reader at the value that begins `text`, after whitespace.
    pub fn new(text: &'t str) -> Reader<'t> {
        let mut reader = Reader {
            text,
            at: 0,
            depth: 0,
        };
        reader.skip_whitespace();
        reader
    }

    /// The offset past what was read and the whitespace after it.
    pub fn offset(&self) -> usize {
        self.at
    }

    #[inline(always)]
    fn skip_whitespace(&mut self) {
        self.at = scan::whitespace_end(self.text.as_bytes(), self.at);
    }

    /// Whether the value at the cursor is a string (an object's string form).
    pub fn at_string(&self) -> bool {
        self.peek() == Some(b'"')
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    /// The error of a value that is not `expected` (`"an array"`), in the words of these
    /// settings: `expected an array, found a string`.
    pub fn mismatch(&self, at: At<'_>, expected: &str) -> SettingsError {
        let found = match self.peek() {
            Some(b'{') => "an object",
            Some(b'[') => "an array",
            Some(b'"') => "a string",
            Some(b't' | b'f') => "a boolean",
            Some(b'n') => "null",
            Some(b'-' | b'0'..=b'9') => "a number",
            _ => return not_json(),
        };
        at.error(format!("expected {expected}, found {found}"))
    }

    /// Whether the value is `null`, read if it is.
    ///
    /// # Errors
    ///
    /// Text that begins as `null` and is not.
    #[inline]
    pub fn take_null(&mut self) -> Result<bool, SettingsError> {
        if self.peek() != Some(b'n') {
            return Ok(false);
        }
        self.literal(b"null")?;
        Ok(true)
    }

    /// `word` (`true`, `false`, `null`) at the cursor. Not the scanner's `literal_end`: called
    /// from here too, it was no longer inlined into the scanner's walk, and made always inline it
    /// cost more (benchmarks/cost.md, "Settings read by a reader of our own").
    fn literal(&mut self, word: &[u8]) -> Result<(), SettingsError> {
        if !self.text.as_bytes()[self.at..].starts_with(word) {
            return Err(not_json());
        }
        self.at += word.len();
        self.skip_whitespace();
        Ok(())
    }

    /// A `T`, or `T::default()` for `null` (settings fields written as a pod spec writes them).
    ///
    /// # Errors
    ///
    /// What reading a `T` finds.
    pub fn read_or_default<T: ReadSettings + Default>(
        &mut self,
        at: At<'_>,
    ) -> Result<T, SettingsError> {
        if self.take_null()? {
            return Ok(T::default());
        }
        T::read(self, at)
    }

    /// A boolean.
    ///
    /// # Errors
    ///
    /// Any other value.
    pub fn boolean(&mut self, at: At<'_>) -> Result<bool, SettingsError> {
        match self.peek() {
            Some(b't') => self.literal(b"true").map(|()| true),
            Some(b'f') => self.literal(b"false").map(|()| false),
            _ => Err(self.mismatch(at, "a boolean")),
        }
    }

    /// An integer as serde_json reads an `i64`: digits alone (no fraction or exponent), within
    /// range, and not `-0` (a float to serde_json), as the request's plain readers read one.
    ///
    /// # Errors
    ///
    /// Any other value, other numbers included.
    pub fn integer(&mut self, at: At<'_>) -> Result<i64, SettingsError> {
        if !matches!(self.peek(), Some(b'-' | b'0'..=b'9')) {
            return Err(self.mismatch(at, "an integer"));
        }
        // Text that is no number at all is refused here too; `read` then says it is not JSON.
        let Some((integer, end)) = json::flat::plain_integer(self.text.as_bytes(), self.at) else {
            return Err(at.error("expected an integer, found a number"));
        };
        self.at = end;
        self.skip_whitespace();
        Ok(integer)
    }

    /// A string, borrowed from the text when it has no escapes.
    ///
    /// # Errors
    ///
    /// Any other value.
    pub fn string(&mut self, at: At<'_>) -> Result<Cow<'t, str>, SettingsError> {
        if self.peek() != Some(b'"') {
            return Err(self.mismatch(at, "a string"));
        }
        self.string_literal()
    }

    /// A string, owned: what most settings keep. Copied straight from the text when it has no
    /// escapes: as `string` then `Cow::into_owned`, it cost more (benchmarks/cost.md, "Settings
    /// read by a reader of our own").
    ///
    /// # Errors
    ///
    /// Any other value.
    pub fn owned_string(&mut self, at: At<'_>) -> Result<String, SettingsError> {
        if self.peek() != Some(b'"') {
            return Err(self.mismatch(at, "a string"));
        }
        match self.plain_string() {
            Some(plain) => Ok(plain.to_owned()),
            None => self.escaped_string().map(Cow::into_owned),
        }
    }

    /// The string at the cursor, its `"`.
    #[inline(always)]
    fn string_literal(&mut self) -> Result<Cow<'t, str>, SettingsError> {
        match self.plain_string() {
            Some(plain) => Ok(Cow::Borrowed(plain)),
            None => self.escaped_string(),
        }
    }

    /// The string at the cursor (its `"`) when it has no escapes, the cursor then past it;
    /// `None`, the cursor unmoved, for any other. Inlined: most settings strings are plain, and
    /// a call answering a `Result` through memory cost each of them more (benchmarks/cost.md,
    /// "Settings read by a reader of our own").
    #[inline(always)]
    fn plain_string(&mut self) -> Option<&'t str> {
        let bytes = self.text.as_bytes();
        let end = scan::plain_run_end(bytes, self.at + 1);
        if bytes.get(end) != Some(&b'"') {
            return None;
        }
        let plain = self.text.get(self.at + 1..end)?;
        self.at = scan::whitespace_end(bytes, end + 1);
        Some(plain)
    }

    /// The string at the cursor, which has escapes (or is not a string at all).
    #[cold]
    #[inline(never)]
    fn escaped_string(&mut self) -> Result<Cow<'t, str>, SettingsError> {
        let start = self.at;
        let (end, _) =
            scan::escaped_string_end(self.text.as_bytes(), start + 1).map_err(|_| not_json())?;
        self.at = end;
        self.skip_whitespace();
        let literal = &self.text[start..end];
        match decoded_str(literal) {
            Some(decoded) => Ok(decoded),
            // `\u` escapes: serde_json checks their surrogates.
            None => serde_json::from_str::<String>(literal)
                .map(Cow::Owned)
                .map_err(|_| not_json()),
        }
    }

    /// Any value, as its text.
    ///
    /// # Errors
    ///
    /// Text that is not JSON.
    pub fn raw(&mut self) -> Result<&'t str, SettingsError> {
        let start = self.at;
        let end = scan::value_end(self.text.as_bytes(), start).map_err(|_| not_json())?;
        self.at = end;
        self.skip_whitespace();
        Ok(&self.text[start..end])
    }

    /// Opens the array at the cursor; [`Reader::next_item`] then comes to each item.
    ///
    /// # Errors
    ///
    /// A value that is not an array.
    pub fn open_array(&mut self, at: At<'_>) -> Result<(), SettingsError> {
        if self.peek() != Some(b'[') {
            return Err(self.mismatch(at, "an array"));
        }
        self.at += 1;
        self.depth += 1;
        self.skip_whitespace();
        Ok(())
    }

    /// Whether the array opened has another item, the cursor then at it; `read` counts the
    /// items so far (start at 0), so an item's index is `read - 1`. A loop in the caller and a
    /// call here, not a closure given to the reader: instantiated for each type read, the
    /// closures made toleration-injection's module larger (benchmarks/cost.md, "Settings read by
    /// a reader of our own").
    ///
    /// # Errors
    ///
    /// Text that is not JSON between the items.
    #[inline]
    pub fn next_item(&mut self, read: &mut usize) -> Result<bool, SettingsError> {
        if self.closes(*read, b']')? {
            return Ok(false);
        }
        *read += 1;
        Ok(true)
    }

    /// Opens the object at the cursor (`expected` is what an error calls it);
    /// [`Reader::next_key`] then comes to each member.
    ///
    /// # Errors
    ///
    /// A value that is not an object.
    pub fn open_object(&mut self, at: At<'_>, expected: &str) -> Result<(), SettingsError> {
        if self.peek() != Some(b'{') {
            return Err(self.mismatch(at, expected));
        }
        self.at += 1;
        self.depth += 1;
        self.skip_whitespace();
        Ok(())
    }

    /// The key of the object's next member, the cursor then at its value; `None` past the
    /// object. `read` counts the members so far (start at 0).
    ///
    /// # Errors
    ///
    /// Text that is not JSON between the members.
    #[inline]
    pub fn next_key(&mut self, read: &mut usize) -> Result<Option<Cow<'t, str>>, SettingsError> {
        if self.closes(*read, b'}')? {
            return Ok(None);
        }
        if self.peek() != Some(b'"') {
            return Err(not_json());
        }
        let key = self.string_literal()?;
        if self.peek() != Some(b':') {
            return Err(not_json());
        }
        self.at += 1;
        self.skip_whitespace();
        *read += 1;
        Ok(Some(key))
    }

    /// Whether `close` ends the container open at the cursor, after `read` items or members,
    /// read (the container closed) if it does; else the `,` before the next is read, if any
    /// came before it.
    #[inline(always)]
    fn closes(&mut self, read: usize, close: u8) -> Result<bool, SettingsError> {
        match self.peek() {
            Some(byte) if byte == close => {
                self.at += 1;
                self.depth -= 1;
                self.skip_whitespace();
                Ok(true)
            }
            _ if read == 0 => Ok(false),
            Some(b',') => {
                self.at += 1;
                self.skip_whitespace();
                Ok(false)
            }
            _ => Err(not_json()),
        }
    }

    /// The index of the field `key` names among a settings object's fields, `names`; `given`
    /// has a bit for each field read so far, by index.
    ///
    /// # Errors
    ///
    /// A name not among `names`, or one given twice, at `at`, its field.
    #[inline]
    pub fn field_index(
        key: &str,
        names: &[&str],
        given: &mut u64,
        at: At<'_>,
    ) -> Result<usize, SettingsError> {
        let Some(index) = names.iter().position(|name| *name == key) else {
            return Err(unknown_field(names, at));
        };
        if *given & (1 << index) != 0 {
            return Err(at.error("field given twice"));
        }
        *given |= 1 << index;
        Ok(index)
    }
}

#[cold]
fn unknown_field(names: &[&str], at: At<'_>) -> SettingsError {
    at.error(format!(
        "unknown field; expected one of: {}",
        names.join(", ")
    ))
}

/// A settings value read from its JSON text.
pub trait ReadSettings: Sized {
    /// Reads the value at the reader's cursor, which it leaves past the value.
    ///
    /// # Errors
    ///
    /// A value of another type, or one its checks refuse, at `at`; text that is not JSON.
    fn read(reader: &mut Reader<'_>, at: At<'_>) -> Result<Self, SettingsError>;
}

/// A settings object's fields, read by name: `#[derive(SettingsFields)]` (`taintguard-derive`)
/// writes it from the struct and its serde attributes, with the object's [`ReadSettings`].
pub trait SettingsFields: Sized {
    /// The fields' names in the JSON, in declaration order, as errors list them.
    const FIELDS: &'static [&'static str];

    /// Reads the object at the reader's cursor.
    ///
    /// # Errors
    ///
    /// A value that is not an object, an unknown, repeated or missing field, or a field's own
    /// error.
    fn read_fields(reader: &mut Reader<'_>, at: At<'_>) -> Result<Self, SettingsError>;
}

impl ReadSettings for bool {
    fn read(reader: &mut Reader<'_>, at: At<'_>) -> Result<Self, SettingsError> {
        reader.boolean(at)
    }
}

impl ReadSettings for i64 {
    fn read(reader: &mut Reader<'_>, at: At<'_>) -> Result<Self, SettingsError> {
        reader.integer(at)
    }
}

impl ReadSettings for String {
    fn read(reader: &mut Reader<'_>, at: At<'_>) -> Result<Self, SettingsError> {
        reader.owned_string(at)
    }
}

/// Owned: settings outlive the text they are read from.
impl ReadSettings for Cow<'_, str> {
    fn read(reader: &mut Reader<'_>, at: At<'_>) -> Result<Self, SettingsError> {
        reader.owned_string(at).map(Cow::Owned)
    }
}

/// `null` is `None`.
impl<T: ReadSettings> ReadSettings for Option<T> {
    fn read(reader: &mut Reader<'_>, at: At<'_>) -> Result<Self, SettingsError> {
        if reader.take_null()? {
            return Ok(None);
        }
        T::read(reader, at).map(Some)
    }
}

impl<T: ReadSettings> ReadSettings for Vec<T> {
    fn read(reader: &mut Reader<'_>, at: At<'_>) -> Result<Self, SettingsError> {
        reader.open_array(at)?;
        // Made at the size most settings lists are when the first item comes, not grown to
        // it, which cost each list more (benchmarks/cost.md, "Settings read by a reader of our
        // own").
        let (mut items, mut read) = (None, 0);
        while reader.next_item(&mut read)? {
            let item = T::read(reader, at.index(read - 1))?;
            items
                .get_or_insert_with(|| Vec::with_capacity(4))
                .push(item);
        }
        Ok(items.unwrap_or_default())
    }
}

/// Owned; a list borrowed from constants is a default, never read.
impl<T: ReadSettings + Clone> ReadSettings for Cow<'_, [T]> {
    fn read(reader: &mut Reader<'_>, at: At<'_>) -> Result<Self, SettingsError> {
        Vec::read(reader, at).map(Cow::Owned)
    }
}

/// An object of checked keys: a key's error and its value's are both at the key's field. The
/// last of a key given twice wins, as the API server keeps it.
impl<K, V> ReadSettings for BTreeMap<K, V>
where
    K: TryFrom<String, Error = String> + Ord,
    V: ReadSettings,
{
    fn read(reader: &mut Reader<'_>, at: At<'_>) -> Result<Self, SettingsError> {
        reader.open_object(at, "an object")?;
        let (mut map, mut read) = (BTreeMap::new(), 0);
        while let Some(key) = reader.next_key(&mut read)? {
            let at = at.field(&key);
            let key = K::try_from(key.to_string()).map_err(|m| at.error(m))?;
            map.insert(key, V::read(reader, at)?);
        }
        Ok(map)
    }
}

/// Any value, read by serde_json from its text (a JSONPath condition's expected values), nested
/// no deeper than serde_json reads the whole settings text: it refuses the 128th level counted
/// from the outermost, not from this value.
impl ReadSettings for serde_json::Value {
    fn read(reader: &mut Reader<'_>, _at: At<'_>) -> Result<Self, SettingsError> {
        let depth = reader.depth;
        let text = reader.raw()?;
        if json::nested_past(text, json::MAX_NESTING.saturating_sub(depth)).is_some() {
            return Err(not_json());
        }
        serde_json::from_str(text).map_err(|_| not_json())
    }
}
