//! A one-pass reader over JSON text that serde_json has already accepted, for the views' fast
//! paths.
//!
//! The views of `object` and `oldObject` read a few members a few levels down. Through serde,
//! each level is a `&RawValue` capture that the next level parses again, so the deepest members
//! (taints, tolerations) would be scanned six to nine times. This reader walks the text once and
//! hands out the byte spans of what it passes over.
//!
//! It is deliberately narrow: it gives up ([`Bail`]) on anything it does not decode exactly as
//! serde_json would (a string with an escape, a number that is not a plain integer, a duplicate
//! member), and the caller then takes its serde path, which decides the answer, errors included.
//! A fast path built on it must therefore only succeed where the serde path would succeed with
//! the same values. It never panics, whatever the text.
//!
//! Precondition: the text is one JSON value serde_json accepted (every `object`/`oldObject` is
//! a `RawValue` of the request), so skipped values are well formed and are not checked again.

/// The reader gave up: the caller takes its serde path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bail;

use super::skip;

pub type Scan<T> = Result<T, Bail>;

pub struct Scanner<'a> {
    text: &'a str,
    pos: usize,
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

impl<'a> Scanner<'a> {
    pub fn new(text: &'a str) -> Self {
        Scanner { text, pos: 0 }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn ws(&mut self) {
        while self.bytes().get(self.pos).is_some_and(|b| is_ws(*b)) {
            self.pos += 1;
        }
    }

    /// The next non-whitespace byte, not consumed.
    pub fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.bytes().get(self.pos).copied()
    }

    fn eat(&mut self, b: u8) -> Scan<()> {
        if self.peek() == Some(b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(Bail)
        }
    }

    fn span(&self, start: usize) -> Scan<&'a str> {
        self.text.get(start..self.pos).ok_or(Bail)
    }

    /// A string without escapes, which is then exactly its text.
    pub fn plain_string(&mut self) -> Scan<&'a str> {
        self.eat(b'"')?;
        let start = self.pos;
        let rest = self.bytes().get(start..).ok_or(Bail)?;
        let len = rest
            .iter()
            .position(|&b| b == b'"' || b == b'\\')
            .ok_or(Bail)?;
        if rest[len] != b'"' {
            return Err(Bail);
        }
        self.pos = start + len + 1;
        self.text.get(start..start + len).ok_or(Bail)
    }

    /// `null` (consumed, `None`) or a string without escapes.
    pub fn plain_string_or_null(&mut self) -> Scan<Option<&'a str>> {
        if self.peek() == Some(b'n') {
            self.null()?;
            return Ok(None);
        }
        self.plain_string().map(Some)
    }

    /// `null`; its text (a slice of the document, as every text handed out is).
    pub fn null(&mut self) -> Scan<&'a str> {
        self.ws();
        if self.bytes().get(self.pos..self.pos + 4) == Some(b"null") {
            self.pos += 4;
            self.span(self.pos - 4)
        } else {
            Err(Bail)
        }
    }

    /// An integer in `i64` range written without fraction or exponent, as serde_json reads it
    /// into an `i64` (`-0`, which it reads as a float, gives up).
    pub fn integer(&mut self) -> Scan<i64> {
        self.ws();
        let start = self.pos;
        let bytes = self.bytes();
        if bytes.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        let digits = self.pos;
        while bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        if self.pos == digits
            || bytes
                .get(self.pos)
                .is_some_and(|b| matches!(b, b'.' | b'e' | b'E'))
        {
            return Err(Bail);
        }
        let text = self.span(start)?;
        if text == "-0" {
            return Err(Bail);
        }
        text.parse().map_err(|_| Bail)
    }

    /// Skips one value; its text.
    pub fn skip_value(&mut self) -> Scan<&'a str> {
        self.ws();
        let start = self.pos;
        self.pos = skip::value_end(self.bytes(), start).ok_or(Bail)?;
        self.span(start)
    }

    /// Reads an object, calling `member` with each key (escape-free keys only: the value then
    /// follows, for `member` to read or skip); the object's text.
    pub fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a str) -> Scan<()>,
    ) -> Scan<&'a str> {
        self.eat(b'{')?;
        let start = self.pos - 1;
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return self.span(start);
        }
        loop {
            let key = self.plain_string()?;
            self.eat(b':')?;
            member(self, key)?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return self.span(start);
                }
                _ => return Err(Bail),
            }
        }
    }

    /// `null` (its text) or an object, read as [`Scanner::object`] reads it.
    pub fn object_or_null(
        &mut self,
        member: impl FnMut(&mut Self, &'a str) -> Scan<()>,
    ) -> Scan<&'a str> {
        if self.peek() == Some(b'n') {
            return self.null();
        }
        self.object(member)
    }

    /// `null` (its text) or an array, read as [`Scanner::array`] reads it.
    pub fn array_or_null(&mut self, item: impl FnMut(&mut Self) -> Scan<()>) -> Scan<&'a str> {
        if self.peek() == Some(b'n') {
            return self.null();
        }
        self.array(item)
    }

    /// Reads an array, calling `item` for each element; the array's text.
    pub fn array(&mut self, mut item: impl FnMut(&mut Self) -> Scan<()>) -> Scan<&'a str> {
        self.eat(b'[')?;
        let start = self.pos - 1;
        if self.peek() == Some(b']') {
            self.pos += 1;
            return self.span(start);
        }
        loop {
            item(self)?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return self.span(start);
                }
                _ => return Err(Bail),
            }
        }
    }

    /// Nothing but whitespace is left.
    pub fn end(&mut self) -> Scan<()> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(Bail),
        }
    }
}

/// Sets `slot` once; a second occurrence of a member gives up (serde's derived readers refuse
/// duplicate fields, and `field` takes the first: neither is worth reproducing).
pub fn once<T>(slot: &mut Option<T>, value: T) -> Scan<()> {
    if slot.is_some() {
        return Err(Bail);
    }
    *slot = Some(value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_objects_and_arrays_with_spans() {
        let text =
            r#" {"a" : [1, {"x":"}]\"" }, "s\u0041"], "b":null ,"c": {"d":"e"}, "n": -12 } "#;
        let mut s = Scanner::new(text);
        let mut seen = Vec::new();
        let whole = s
            .object(|s, key| {
                let value = match key {
                    "c" => s.object(|s, k| {
                        assert_eq!(k, "d");
                        assert_eq!(s.plain_string()?, "e");
                        Ok(())
                    })?,
                    "n" => {
                        assert_eq!(s.integer()?, -12);
                        "-12"
                    }
                    _ => s.skip_value()?,
                };
                seen.push((key, value));
                Ok(())
            })
            .unwrap();
        s.end().unwrap();
        assert_eq!(whole, text.trim());
        assert_eq!(
            seen,
            [
                ("a", r#"[1, {"x":"}]\"" }, "s\u0041"]"#),
                ("b", "null"),
                ("c", r#"{"d":"e"}"#),
                ("n", "-12")
            ]
        );
    }

    #[test]
    fn gives_up_instead_of_guessing() {
        let bail = |text: &str, f: fn(&mut Scanner) -> Scan<()>| {
            assert_eq!(f(&mut Scanner::new(text)), Err(Bail), "{text}");
        };
        bail(r#""a\"b""#, |s| s.plain_string().map(drop));
        bail(r#"{"k\u0041":1}"#, |s| {
            s.object(|s, _| s.skip_value().map(drop)).map(drop)
        });
        for number in ["-0", "1.0", "1e3", "9223372036854775808", "", "-"] {
            bail(number, |s| s.integer().map(drop));
        }
        bail(r#"{"a":1"#, |s| {
            s.object(|s, _| s.skip_value().map(drop)).map(drop)
        });
        bail(r#"[1,2"#, |s| s.skip_value().map(drop));
        bail(r#""open"#, |s| s.skip_value().map(drop));
        bail("1 2", |s| {
            s.skip_value()?;
            s.end()
        });
        assert_eq!(Scanner::new("-9223372036854775808").integer(), Ok(i64::MIN));
    }

    #[test]
    fn never_panics_on_broken_text() {
        for text in [
            "", "{", "[", "}", "]", "\"", "{\"a\"", "{\"a\":", "[1,", "{]", "[}", "\\",
        ] {
            let mut s = Scanner::new(text);
            let _ = s.skip_value();
            let mut s = Scanner::new(text);
            let _ = s.object(|s, _| s.skip_value().map(drop));
            let mut s = Scanner::new(text);
            let _ = s.array(|s| s.skip_value().map(drop));
        }
    }
}
