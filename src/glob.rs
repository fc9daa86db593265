//! Shell-style globs for taint keys, principal names and namespaces.
//!
//! `*` matches any run of characters (`/` included), `?` one character, `[abc]`, `[a-z]` and
//! `[!abc]` one character of (or not of) a set, and `\` escapes the next character.
//! A pattern without metacharacters is an exact comparison.

use std::borrow::Cow;
use std::fmt;

use crate::byte_class::{self, all_in, Class};

/// A glob, read from settings as its pattern string and written back as the same string.
///
/// # Examples
///
/// ```
/// use taintguard::glob::Glob;
///
/// let glob = Glob::new("node.kubernetes.io/*").unwrap();
/// assert!(glob.matches("node.kubernetes.io/not-ready"));
/// assert!(!glob.matches("example.com/node.kubernetes.io/not-ready"));
/// assert!(Glob::new("gpu-[!0]").unwrap().matches("gpu-7"));
/// assert_eq!(Glob::new("gpu-[0-").unwrap_err().to_string(), "unclosed `[` character class");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Glob {
    /// The pattern as written: borrowed for the built-in globs, which settings defaults build
    /// on every request (each request gets a fresh instance): benchmarks/cost.md, "What each
    /// change bought".
    source: Cow<'static, str>,
    kind: Kind,
}

impl TryFrom<String> for Glob {
    type Error = String;
    fn try_from(text: String) -> Result<Glob, String> {
        match Kind::of(&text) {
            Ok(kind) => Ok(Glob {
                source: Cow::Owned(text),
                kind,
            }),
            Err(e) => Err(format!("{text:?} is not a valid glob: {e}")),
        }
    }
}

crate::settings::from_string!(Glob, into = String);

// Built-in globs of settings defaults (`checked!` types over a glob); here rather than beside
// the trait, so that settings reading knows nothing of the vocabulary built on it.
impl crate::settings::Builtin for Glob {
    fn builtin(text: &'static str) -> Glob {
        Glob::builtin(text)
    }
}

impl From<Glob> for String {
    fn from(glob: Glob) -> String {
        glob.source.into_owned()
    }
}

/// How a pattern is matched. The common shapes are parts of the pattern's own text, so that
/// building them allocates nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// No metacharacters: the pattern is the text it matches.
    Exact,
    /// Only escaped characters: the text they stand for.
    Literal(String),
    /// `prefix*`, the commonest shape (`node.kubernetes.io/*`), matched without the engine:
    /// the pattern's first this many bytes.
    Prefix(usize),
    /// `*suffix`, the next commonest (`*/not-ready`, `*/agent-not-ready` in the defaults): the
    /// pattern from this byte on.
    Suffix(usize),
    Tokens(Vec<Token>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Char(char),
    Any,
    Star,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

/// Why a pattern is not a glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobError(pub &'static str);

impl fmt::Display for GlobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// `text` written as a glob that matches `text` and nothing else: each metacharacter (`*`, `?`,
/// `[`, and `\` itself) escaped with `\`. For settings advice in messages that names a
/// principal, a namespace or a key in a list of globs (`owner.users`, `permitted.users`): a
/// username `ops-*` suggested as is would grant every `ops-` user. Borrowed when `text` has no
/// metacharacter, which is nearly always. Quote it for a message with
/// [`crate::verdict::quoted`], whose `\\` reads back as `\` in JSON and YAML's double quotes.
///
/// # Examples
///
/// ```
/// use taintguard::glob::{escape, Glob};
///
/// assert_eq!(escape("alice@example.com"), "alice@example.com");
/// assert_eq!(escape("ops-*"), r"ops-\*");
/// let only = Glob::new(&escape("ops-[admin]?")).unwrap();
/// assert!(only.matches("ops-[admin]?"));
/// assert!(!only.matches("ops-a!"));
/// ```
pub fn escape(text: &str) -> Cow<'_, str> {
    const META: [char; 4] = ['*', '?', '[', '\\'];
    if !text.contains(META) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 4);
    for c in text.chars() {
        if META.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
    Cow::Owned(out)
}

impl Glob {
    /// The glob `pattern` stands for.
    ///
    /// # Errors
    ///
    /// Why `pattern` is not a glob: empty, an unclosed class, a trailing `\`, a range out of
    /// order.
    pub fn new(pattern: &str) -> Result<Glob, GlobError> {
        Ok(Glob {
            kind: Kind::of(pattern)?,
            source: Cow::Owned(pattern.to_owned()),
        })
    }

    /// A glob the code itself writes, borrowed rather than copied: a literal, `prefix*` or
    /// `*suffix`. `const`, so that a list of them is built while compiling.
    ///
    /// # Panics
    ///
    /// When `pattern` is empty or of another shape: a bug in the built-in lists, found while
    /// compiling where the glob is a constant, and by every test otherwise.
    pub const fn builtin(pattern: &'static str) -> Glob {
        assert!(!pattern.is_empty(), "a built-in glob is not empty");
        let Some(shape) = Shape::of(pattern) else {
            panic!("a built-in glob is a literal, `prefix*` or `*suffix`");
        };
        Glob {
            source: Cow::Borrowed(pattern),
            kind: shape.kind(),
        }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the pattern matches the whole of `text`.
    pub fn matches(&self, text: &str) -> bool {
        match &self.kind {
            Kind::Exact => self.source == text,
            Kind::Literal(literal) => literal == text,
            Kind::Prefix(end) => text.starts_with(&self.source[..*end]),
            Kind::Suffix(start) => text.ends_with(&self.source[*start..]),
            Kind::Tokens(tokens) => match_tokens(tokens, text),
        }
    }
}

impl Kind {
    fn of(pattern: &str) -> Result<Kind, GlobError> {
        if pattern.is_empty() {
            return Err(GlobError("empty pattern"));
        }
        match Shape::of(pattern) {
            Some(shape) => Ok(shape.kind()),
            None => Kind::tokenized(pattern),
        }
    }

    fn tokenized(pattern: &str) -> Result<Kind, GlobError> {
        let tokens = tokenize(pattern)?;
        let chars_only = |tokens: &[Token]| tokens.iter().all(|t| matches!(t, Token::Char(_)));
        // An escaped literal compares against its unescaped text. A prefix or suffix is one
        // only where it is the pattern's own text (unescaped); otherwise the engine matches it.
        Ok(if chars_only(&tokens) {
            let text = literal(&tokens);
            if text == pattern {
                Kind::Exact
            } else {
                Kind::Literal(text)
            }
        } else if let Some((Token::Star, head)) = tokens.split_last() {
            match chars_only(head).then(|| literal(head)) {
                Some(text) if pattern.starts_with(&text) => Kind::Prefix(text.len()),
                _ => Kind::Tokens(tokens),
            }
        } else if let Some((Token::Star, tail)) = tokens.split_first() {
            match chars_only(tail).then(|| literal(tail)) {
                Some(text) if pattern.ends_with(&text) => Kind::Suffix(pattern.len() - text.len()),
                _ => Kind::Tokens(tokens),
            }
        } else {
            Kind::Tokens(tokens)
        })
    }
}

impl fmt::Debug for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Glob({:?})", self.source)
    }
}

/// The kinds told without the tokenizer: what it would build for them.
#[derive(Clone, Copy)]
enum Shape {
    Exact,
    Prefix(usize),
    Suffix(usize),
}

impl Shape {
    /// The shape of `pattern`, or `None` where the tokenizer is needed. Every metacharacter is
    /// ASCII, so bytes tell. `const`, so that the built-in globs of the settings defaults are
    /// shaped while compiling.
    const fn of(pattern: &str) -> Option<Shape> {
        // The shapes told by where a `*` is and that no other byte is a metacharacter, with no
        // loop of a byte a turn (see `byte_class`).
        const PLAIN: Class = byte_class::class(&[
            (0, b'*' - 1),
            (b'*' + 1, b'?' - 1),
            (b'?' + 1, b'[' - 1),
            (b'\\' + 1, u8::MAX),
        ]);
        let bytes = pattern.as_bytes();
        let Some(last) = bytes.len().checked_sub(1) else {
            return Some(Shape::Exact);
        };
        if bytes[last] == b'*' && all_in(bytes.split_at(last).0, &PLAIN) {
            return Some(Shape::Prefix(last));
        }
        if bytes[0] == b'*' && all_in(bytes.split_at(1).1, &PLAIN) {
            return Some(Shape::Suffix(1));
        }
        if all_in(bytes, &PLAIN) {
            return Some(Shape::Exact);
        }
        None
    }

    const fn kind(self) -> Kind {
        match self {
            Shape::Exact => Kind::Exact,
            Shape::Prefix(end) => Kind::Prefix(end),
            Shape::Suffix(start) => Kind::Suffix(start),
        }
    }
}

fn literal(tokens: &[Token]) -> String {
    tokens
        .iter()
        .map(|t| match t {
            Token::Char(c) => *c,
            _ => unreachable!("literal() is only called on character tokens"),
        })
        .collect()
}

fn tokenize(pattern: &str) -> Result<Vec<Token>, GlobError> {
    let mut tokens = Vec::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        tokens.push(match c {
            '*' => {
                if tokens.last() == Some(&Token::Star) {
                    continue;
                }
                Token::Star
            }
            '?' => Token::Any,
            '\\' => Token::Char(
                chars
                    .next()
                    .ok_or(GlobError("trailing `\\` escapes nothing"))?,
            ),
            '[' => class(&mut chars)?,
            c => Token::Char(c),
        });
    }
    Ok(tokens)
}

fn class(chars: &mut std::str::Chars<'_>) -> Result<Token, GlobError> {
    const UNCLOSED: GlobError = GlobError("unclosed `[` character class");
    let mut negated = false;
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let c = chars.next().ok_or(UNCLOSED)?;
        match c {
            '!' if first && !negated => {
                negated = true;
                continue;
            }
            ']' if !first => break,
            _ => {}
        }
        first = false;
        let low = if c == '\\' {
            chars.next().ok_or(UNCLOSED)?
        } else {
            c
        };
        let mut lookahead = chars.clone();
        if lookahead.next() == Some('-') && lookahead.clone().next().is_some_and(|n| n != ']') {
            chars.next();
            let mut high = chars.next().ok_or(UNCLOSED)?;
            if high == '\\' {
                high = chars.next().ok_or(UNCLOSED)?;
            }
            if high < low {
                return Err(GlobError("character range is out of order"));
            }
            ranges.push((low, high));
        } else {
            ranges.push((low, low));
        }
    }
    Ok(Token::Class { negated, ranges })
}

fn token_matches(token: &Token, c: char) -> bool {
    match token {
        Token::Char(t) => *t == c,
        Token::Any => true,
        Token::Star => unreachable!("stars are handled by the matcher"),
        Token::Class { negated, ranges } => {
            ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c)) != *negated
        }
    }
}

/// Iterative wildcard matching with single-star backtracking: linear in practice, no recursion.
fn match_tokens(tokens: &[Token], text: &str) -> bool {
    let (mut t, mut s) = (0usize, 0usize);
    let mut resume: Option<(usize, usize)> = None;
    while s < text.len() {
        let c = text[s..].chars().next().expect("s is on a char boundary");
        match tokens.get(t) {
            Some(Token::Star) => {
                resume = Some((t, s));
                t += 1;
                continue;
            }
            Some(token) if token_matches(token, c) => {
                t += 1;
                s += c.len_utf8();
                continue;
            }
            _ => {}
        }
        match resume {
            Some((star, from)) => {
                let skipped = text[from..].chars().next().expect("from < len").len_utf8();
                resume = Some((star, from + skipped));
                t = star + 1;
                s = from + skipped;
            }
            None => return false,
        }
    }
    tokens[t..].iter().all(|tok| *tok == Token::Star)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An escaped name, as settings advice quotes it, matches that name and nothing else,
    /// whatever glob characters it holds.
    #[test]
    fn an_escaped_name_matches_only_itself() {
        let names = [
            "alice@example.com",
            "ops-*",
            "*",
            "a?b",
            "team[1]",
            "team[!1]",
            "back\\slash",
            "trailing\\",
            "x]y",
            "[",
            "system:serviceaccount:ns:*",
            "ünï*?",
        ];
        let others = [
            "ops-",
            "ops-x",
            "ops-**",
            "a",
            "axb",
            "team1",
            "team[1",
            "back\\\\slash",
            "backslash",
            "trailing",
            "x",
            "xy",
            "",
            "ünï",
            "ünïx?",
        ];
        for name in names {
            let escaped = escape(name);
            let glob = Glob::new(&escaped).unwrap_or_else(|e| panic!("{name:?}: {e}"));
            assert!(glob.matches(name), "{name:?} as {escaped:?}");
            for other in others.iter().chain(&names).filter(|o| **o != name) {
                assert!(
                    !glob.matches(other),
                    "{name:?} as {escaped:?} matches {other:?}"
                );
            }
            let plain = !name.contains(['*', '?', '[', '\\']);
            assert_eq!(matches!(escaped, Cow::Borrowed(_)), plain, "{name:?}");
        }
    }

    #[test]
    fn common_shapes_build_what_the_tokenizer_builds() {
        for pattern in [
            "a",
            "node.kubernetes.io/*",
            "*",
            "**",
            "a**",
            "a*b",
            "a\\*",
            "\\a*",
            "a?*",
            "a[b]*",
            "ü*",
            "a]*",
            "a!*",
            "system:masters",
            "*/not-ready",
            "**a",
            "*a\\*",
            "*\\a",
            "*a?",
        ] {
            assert_eq!(Kind::of(pattern), Kind::tokenized(pattern), "{pattern}");
        }
        // A metacharacter at every place of a longer pattern, alone or after a `*` at either end.
        let base = "node.kubernetes.io/not-ready";
        for meta in ["*", "?", "[a]", "\\a"] {
            for at in 0..=base.len() {
                let one = format!("{}{meta}{}", &base[..at], &base[at..]);
                for pattern in [one.clone(), format!("*{one}"), format!("{one}*")] {
                    assert_eq!(Kind::of(&pattern), Kind::tokenized(&pattern), "{pattern}");
                }
            }
        }
    }

    #[test]
    fn matching_table() {
        let cases: &[(&str, &str, bool)] = &[
            ("node.kubernetes.io/*", "node.kubernetes.io/not-ready", true),
            ("node.kubernetes.io/*", "node.kubernetes.io", false),
            ("node.kubernetes.io/*", "xnode.kubernetes.io/a", false),
            ("*", "", true),
            ("*", "anything/at:all", true),
            ("exact", "exact", true),
            ("exact", "Exact", false),
            ("a?c", "abc", true),
            ("a?c", "aüc", true),
            ("a?c", "ac", false),
            (
                "*.csi.*/agent-not-ready",
                "ebs.csi.aws.com/agent-not-ready",
                true,
            ),
            (
                "*.csi.*/agent-not-ready",
                "ebs.csi.aws.com/agent-ready",
                false,
            ),
            ("[a-c]x", "bx", true),
            ("[a-c]x", "dx", false),
            ("[!a-c]x", "dx", true),
            ("[]]", "]", true),
            ("[a-]", "-", true),
            ("a\\*", "a*", true),
            ("a\\*", "ab", false),
            // Escaped prefixes and suffixes: matched by the engine, as they are not the
            // pattern's own text.
            ("\\a*", "ab", true),
            ("\\a*", "ba", false),
            ("a\\**", "a*b", true),
            ("a\\**", "ab", false),
            ("*\\a", "ba", true),
            ("*\\a", "a\\", false),
            ("*a*b*c*", "xxaxxbxxcxx", true),
            ("*/not-ready", "cni.istio.io/not-ready", true),
            ("*/not-ready", "cni.istio.io/not-ready-yet", false),
            ("*-not-ready", "-not-ready", true),
            ("**a", "ba", true),
            ("*a*b*c*", "xxaxxcxxbxx", false),
            (
                "system:serviceaccount:*:karpenter",
                "system:serviceaccount:kube-system:karpenter",
                true,
            ),
            (
                "kube-*/hostpath-*",
                "kube-system/hostpath-provisioner",
                true,
            ),
        ];
        for (pattern, text, want) in cases {
            let glob = Glob::new(pattern).unwrap();
            assert_eq!(glob.matches(text), *want, "{pattern:?} ~ {text:?}");
        }
    }

    #[test]
    fn invalid_patterns() {
        for (pattern, why) in [
            ("", "empty pattern"),
            ("[abc", "unclosed `[` character class"),
            ("abc\\", "trailing `\\` escapes nothing"),
            ("[z-a]", "character range is out of order"),
        ] {
            assert_eq!(Glob::new(pattern).unwrap_err().0, why, "{pattern:?}");
        }
    }
}
