//! RFC 9535 JSONPath syntax into a [`Query`], with the RFC's well-typedness rules for function
//! expressions. A path is parsed once (a policy's, when its settings load) and then selects from
//! any number of values.

use std::fmt;

/// `$` or `@` followed by segments.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// `$` (the root) rather than `@` (the current node of a filter).
    pub absolute: bool,
    pub segments: Vec<Segment>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// `..`: the selectors apply to the input node and all of its descendants.
    pub descendant: bool,
    pub selectors: Vec<Selector>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Selector {
    Name(String),
    Wildcard,
    Index(i64),
    Slice(Slice),
    Filter(Box<Expr>),
}

/// A slice's bounds as written, each `None` when left out (RFC 9535 2.3.4).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slice {
    /// The first index selected, counted from the end when negative.
    pub start: Option<i64>,
    /// The index the slice stops before, counted from the end when negative.
    pub end: Option<i64>,
    /// The distance from one selected index to the next; 1 when absent.
    pub step: Option<i64>,
}

/// A logical expression of a filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Or(Vec<Expr>),
    And(Vec<Expr>),
    Not(Box<Expr>),
    /// A test expression: the query selects at least one node.
    Exists(Query),
    Compare(Comparable, Op, Comparable),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// An operand of a comparison; queries here are singular.
#[derive(Debug, Clone, PartialEq)]
pub enum Comparable {
    Literal(Literal),
    Query(Query),
    Function(Function),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    String(String),
    Number(f64),
    Bool(bool),
    Null,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Function {
    /// `length(value)`: characters of a string, elements of an array, members of an object.
    Length(Box<Comparable>),
    /// `count(nodes)`: how many nodes the query selects.
    Count(Query),
    /// `value(nodes)`: the node's value when the query selects exactly one.
    Value(Query),
}

/// Why a path was refused, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Character offset in the path.
    pub at: usize,
    /// What is wrong with the path, for the settings error that quotes it.
    pub message: String,
    /// The path is valid RFC 9535 but uses what this implementation leaves out.
    pub unsupported: bool,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at character {})", self.message, self.at)
    }
}

/// Filters and parentheses nest at most this deep: evaluation recurses on them, and the
/// gatekeeper build runs on a 64 KiB stack.
pub const MAX_FILTER_NESTING: usize = 16;

/// I-JSON's exact integer range, which RFC 9535 requires of indices and slice bounds.
const MAX_INT: i64 = (1 << 53) - 1;

pub(crate) fn parse(path: &str) -> Result<Query, ParseError> {
    let mut p = Parser::new(path);
    if p.peek() != Some('$') {
        return Err(p.error("a JSONPath starts with `$`"));
    }
    let query = p.query()?;
    if let Some(c) = p.peek() {
        return Err(p.error(format!("unexpected {c:?}")));
    }
    Ok(query)
}

/// A cursor over a path's characters; `pos` counts characters, as [`ParseError::at`] does.
struct Parser<'a> {
    /// The path; indexed by `pos` directly when it is ASCII, as nearly every path is.
    text: &'a str,
    /// The path's characters when it is not ASCII (empty when it is): decoding every path into
    /// characters, and collecting names back from them, was most of what parsing a member
    /// path cost a request (benchmarks/cost.md, "JSONPath's text, a rule's reason and the
    /// arena's fitting path").
    chars: Vec<char>,
    pos: usize,
    nesting: usize,
}

type Result<T, E = ParseError> = std::result::Result<T, E>;

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Parser<'a> {
        Parser {
            text,
            chars: if text.is_ascii() {
                Vec::new()
            } else {
                text.chars().collect()
            },
            pos: 0,
            nesting: 0,
        }
    }

    /// The character at `i`.
    fn char_at(&self, i: usize) -> Option<char> {
        if self.chars.is_empty() {
            self.text.as_bytes().get(i).copied().map(char::from)
        } else {
            self.chars.get(i).copied()
        }
    }

    /// The characters from `start` up to `pos`.
    fn taken(&self, start: usize) -> String {
        if self.chars.is_empty() {
            self.text[start..self.pos].to_owned()
        } else {
            self.chars[start..self.pos].iter().collect()
        }
    }

    fn error(&self, message: impl Into<String>) -> ParseError {
        ParseError {
            at: self.pos,
            message: message.into(),
            unsupported: false,
        }
    }

    fn peek(&self) -> Option<char> {
        self.char_at(self.pos)
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.char_at(self.pos + ahead)
    }

    fn eat(&mut self, c: char) -> bool {
        let hit = self.peek() == Some(c);
        if hit {
            self.pos += 1;
        }
        hit
    }

    fn eat_str(&mut self, s: &str) -> bool {
        let n = s.chars().count();
        let hit = (0..n).map(|i| self.peek_at(i)).eq(s.chars().map(Some));
        if hit {
            self.pos += n;
        }
        hit
    }

    fn expect(&mut self, c: char) -> Result<()> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(match self.peek() {
                Some(got) => self.error(format!("expected `{c}`, found {got:?}")),
                None => self.error(format!("expected `{c}`, found the end of the path")),
            })
        }
    }

    /// Blank space: space, tab, line feed, carriage return.
    fn blank(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t' | '\n' | '\r')) {
            self.pos += 1;
        }
    }

    fn nest(&mut self) -> Result<()> {
        self.nesting += 1;
        if self.nesting > MAX_FILTER_NESTING {
            return Err(self.error(format!(
                "filters and parentheses nest more than {MAX_FILTER_NESTING} levels deep"
            )));
        }
        Ok(())
    }

    /// `$` or `@`, then segments. Blank space is allowed before each segment, so the caller
    /// checks what follows.
    fn query(&mut self) -> Result<Query> {
        let absolute = match self.peek() {
            Some('$') => true,
            Some('@') => false,
            _ => return Err(self.error("expected a query (`$` or `@`)")),
        };
        self.pos += 1;
        let mut segments = Vec::new();
        loop {
            let save = self.pos;
            self.blank();
            match self.peek() {
                Some('.') if self.peek_at(1) == Some('.') => {
                    self.pos += 2;
                    let selectors = match self.peek() {
                        Some('[') => self.bracketed()?,
                        Some('*') => {
                            self.pos += 1;
                            vec![Selector::Wildcard]
                        }
                        _ => vec![Selector::Name(self.shorthand()?)],
                    };
                    segments.push(Segment {
                        descendant: true,
                        selectors,
                    });
                }
                Some('.') => {
                    self.pos += 1;
                    let selector = if self.eat('*') {
                        Selector::Wildcard
                    } else {
                        Selector::Name(self.shorthand()?)
                    };
                    segments.push(Segment {
                        descendant: false,
                        selectors: vec![selector],
                    });
                }
                Some('[') => {
                    let selectors = self.bracketed()?;
                    segments.push(Segment {
                        descendant: false,
                        selectors,
                    });
                }
                _ => {
                    self.pos = save;
                    return Ok(Query { absolute, segments });
                }
            }
        }
    }

    /// A member name shorthand: `name-first *name-char`.
    fn shorthand(&mut self) -> Result<String> {
        let first = |c: char| c.is_ascii_alphabetic() || c == '_' || c >= '\u{80}';
        match self.peek() {
            Some(c) if first(c) => {}
            _ => return Err(self.error("expected a member name, `*` or `[` after `.`")),
        }
        let start = self.pos;
        while self.peek().is_some_and(|c| first(c) || c.is_ascii_digit()) {
            self.pos += 1;
        }
        Ok(self.taken(start))
    }

    /// `[` selector, ... `]`.
    fn bracketed(&mut self) -> Result<Vec<Selector>> {
        self.expect('[')?;
        let mut selectors = Vec::new();
        loop {
            self.blank();
            selectors.push(self.selector()?);
            self.blank();
            if self.eat(']') {
                return Ok(selectors);
            }
            if !self.eat(',') {
                return Err(self.error("expected `,` or `]` after a selector"));
            }
        }
    }

    fn selector(&mut self) -> Result<Selector> {
        match self.peek() {
            Some('\'' | '"') => Ok(Selector::Name(self.string()?)),
            Some('*') => {
                self.pos += 1;
                Ok(Selector::Wildcard)
            }
            Some('?') => {
                self.pos += 1;
                self.blank();
                self.nest()?;
                let expr = self.or()?;
                self.nesting -= 1;
                Ok(Selector::Filter(Box::new(expr)))
            }
            Some(':') | Some('-') | Some('0'..='9') => {
                let start = if self.peek() == Some(':') {
                    None
                } else {
                    Some(self.int()?)
                };
                self.blank();
                if !self.eat(':') {
                    return match start {
                        Some(i) => Ok(Selector::Index(i)),
                        None => Err(self.error("expected an index")),
                    };
                }
                self.blank();
                let end = self.optional_int()?;
                self.blank();
                let mut step = None;
                if self.eat(':') {
                    self.blank();
                    step = self.optional_int()?;
                }
                Ok(Selector::Slice(Slice { start, end, step }))
            }
            Some(c) => Err(self.error(format!("unexpected {c:?} in a selector"))),
            None => Err(self.error("unterminated `[`")),
        }
    }

    fn optional_int(&mut self) -> Result<Option<i64>> {
        match self.peek() {
            Some('-' | '0'..='9') => self.int().map(Some),
            _ => Ok(None),
        }
    }

    /// `0` or `-`? a digit 1-9 and more digits, within I-JSON's exact range.
    fn int(&mut self) -> Result<i64> {
        let start = self.pos;
        let negative = self.eat('-');
        let digits = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let text = self.taken(digits);
        if text.is_empty() || (text.starts_with('0') && (text.len() > 1 || negative)) {
            self.pos = start;
            return Err(self.error("expected an integer (no leading zeros, no `-0`)"));
        }
        match text.parse::<i64>() {
            Ok(n) if n <= MAX_INT => Ok(if negative { -n } else { n }),
            _ => {
                self.pos = start;
                Err(self.error(format!("integer out of range ±{MAX_INT}")))
            }
        }
    }

    /// A single- or double-quoted string literal, unescaped.
    fn string(&mut self) -> Result<String> {
        let quote = self.peek().filter(|c| *c == '\'' || *c == '"');
        let Some(quote) = quote else {
            return Err(self.error("expected a string literal"));
        };
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.error("unterminated string literal"));
            };
            self.pos += 1;
            match c {
                _ if c == quote => return Ok(out),
                '\\' => out.push(self.escape(quote)?),
                '\u{0}'..='\u{1f}' => {
                    self.pos -= 1;
                    return Err(self.error("control character in a string literal"));
                }
                _ => out.push(c),
            }
        }
    }

    fn escape(&mut self, quote: char) -> Result<char> {
        let c = self.peek();
        self.pos += 1;
        Ok(match c {
            Some('b') => '\u{8}',
            Some('f') => '\u{c}',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some('/') => '/',
            Some('\\') => '\\',
            Some(q) if q == quote => q,
            Some('u') => {
                let high = self.hex4()?;
                if (0xDC00..0xE000).contains(&high) {
                    return Err(self.error("lone low surrogate in a \\u escape"));
                }
                if (0xD800..0xDC00).contains(&high) {
                    if !self.eat_str("\\u") {
                        return Err(self.error("lone high surrogate in a \\u escape"));
                    }
                    let low = self.hex4()?;
                    if !(0xDC00..0xE000).contains(&low) {
                        return Err(self.error("expected a low surrogate"));
                    }
                    let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                    char::from_u32(code).ok_or_else(|| self.error("bad surrogate pair"))?
                } else {
                    char::from_u32(high).ok_or_else(|| self.error("bad \\u escape"))?
                }
            }
            _ => {
                self.pos -= 1;
                return Err(self.error("invalid escape in a string literal"));
            }
        })
    }

    fn hex4(&mut self) -> Result<u32> {
        let mut n = 0;
        for _ in 0..4 {
            let Some(d) = self.peek().and_then(|c| c.to_digit(16)) else {
                return Err(self.error("expected 4 hex digits after \\u"));
            };
            n = n * 16 + d;
            self.pos += 1;
        }
        Ok(n)
    }

    fn or(&mut self) -> Result<Expr> {
        let mut all = vec![self.and()?];
        loop {
            let save = self.pos;
            self.blank();
            if !self.eat_str("||") {
                self.pos = save;
                break;
            }
            self.blank();
            all.push(self.and()?);
        }
        Ok(if all.len() == 1 {
            all.remove(0)
        } else {
            Expr::Or(all)
        })
    }

    fn and(&mut self) -> Result<Expr> {
        let mut all = vec![self.basic()?];
        loop {
            let save = self.pos;
            self.blank();
            if !self.eat_str("&&") {
                self.pos = save;
                break;
            }
            self.blank();
            all.push(self.basic()?);
        }
        Ok(if all.len() == 1 {
            all.remove(0)
        } else {
            Expr::And(all)
        })
    }

    /// A parenthesised expression, a comparison or a test, any of them negated by `!`
    /// (a comparison only inside parentheses).
    fn basic(&mut self) -> Result<Expr> {
        if self.eat('!') {
            self.blank();
            if self.eat('(') {
                return Ok(Expr::Not(Box::new(self.parenthesised()?)));
            }
            let at = self.pos;
            let operand = self.operand()?;
            return match operand {
                Comparable::Query(q) => Ok(Expr::Not(Box::new(Expr::Exists(q)))),
                Comparable::Function(f) => Err(self.not_a_test(at, &f)),
                Comparable::Literal(_) => Err(ParseError {
                    at,
                    message: "`!` applies to a query or a parenthesised expression".into(),
                    unsupported: false,
                }),
            };
        }
        if self.eat('(') {
            return self.parenthesised();
        }
        let at = self.pos;
        let left = self.operand()?;
        let save = self.pos;
        self.blank();
        let Some(op) = self.op() else {
            self.pos = save;
            return match left {
                Comparable::Query(q) => Ok(Expr::Exists(q)),
                Comparable::Function(f) => Err(self.not_a_test(at, &f)),
                Comparable::Literal(_) => Err(ParseError {
                    at,
                    message: "a literal must be compared with something".into(),
                    unsupported: false,
                }),
            };
        };
        self.blank();
        let right_at = self.pos;
        let right = self.operand()?;
        singular(&left, at)?;
        singular(&right, right_at)?;
        Ok(Expr::Compare(left, op, right))
    }

    fn not_a_test(&self, at: usize, f: &Function) -> ParseError {
        let name = match f {
            Function::Length(_) => "length",
            Function::Count(_) => "count",
            Function::Value(_) => "value",
        };
        ParseError {
            at,
            message: format!("the result of {name}() must be compared, it is not true or false"),
            unsupported: false,
        }
    }

    fn parenthesised(&mut self) -> Result<Expr> {
        self.nest()?;
        self.blank();
        let expr = self.or()?;
        self.blank();
        self.expect(')')?;
        self.nesting -= 1;
        Ok(expr)
    }

    fn op(&mut self) -> Option<Op> {
        for (text, op) in [
            ("==", Op::Eq),
            ("!=", Op::Ne),
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("<", Op::Lt),
            (">", Op::Gt),
        ] {
            if self.eat_str(text) {
                return Some(op);
            }
        }
        None
    }

    /// A literal, a query (not yet checked to be singular) or a function expression.
    fn operand(&mut self) -> Result<Comparable> {
        match self.peek() {
            Some('$' | '@') => {
                self.nest()?;
                let q = self.query()?;
                self.nesting -= 1;
                Ok(Comparable::Query(q))
            }
            Some('\'' | '"') => Ok(Comparable::Literal(Literal::String(self.string()?))),
            Some('-' | '0'..='9') => Ok(Comparable::Literal(Literal::Number(self.number()?))),
            Some('a'..='z') => {
                let start = self.pos;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                {
                    self.pos += 1;
                }
                let name = self.taken(start);
                if self.peek() == Some('(') {
                    return self.function(start, &name);
                }
                match name.as_str() {
                    "true" => Ok(Comparable::Literal(Literal::Bool(true))),
                    "false" => Ok(Comparable::Literal(Literal::Bool(false))),
                    "null" => Ok(Comparable::Literal(Literal::Null)),
                    _ => {
                        self.pos = start;
                        Err(self.error(format!("unexpected `{name}`")))
                    }
                }
            }
            Some(c) => Err(self.error(format!("unexpected {c:?} in a filter"))),
            None => Err(self.error("unexpected end of the path in a filter")),
        }
    }

    fn function(&mut self, at: usize, name: &str) -> Result<Comparable> {
        if matches!(name, "match" | "search") {
            return Err(ParseError {
                at,
                message: format!(
                    "JSONPath function {name}() is not supported; use the condition's `matches` glob"
                ),
                unsupported: true,
            });
        }
        if !matches!(name, "length" | "count" | "value") {
            return Err(ParseError {
                at,
                message: format!(
                    "unknown function {name}() (supported: length(), count(), value())"
                ),
                unsupported: false,
            });
        }
        self.nest()?;
        self.expect('(')?;
        self.blank();
        let arg_at = self.pos;
        let arg = self.operand()?;
        self.blank();
        if self.peek() == Some(',') {
            return Err(self.error(format!("{name}() takes one argument")));
        }
        self.expect(')')?;
        self.nesting -= 1;
        let nodes = |arg: Comparable| match arg {
            Comparable::Query(q) => Ok(q),
            _ => Err(ParseError {
                at: arg_at,
                message: format!("the argument of {name}() must be a query"),
                unsupported: false,
            }),
        };
        Ok(Comparable::Function(match name {
            "length" => {
                singular(&arg, arg_at)?;
                Function::Length(Box::new(arg))
            }
            "count" => Function::Count(nodes(arg)?),
            _ => Function::Value(nodes(arg)?),
        }))
    }

    /// A JSON number: `-`? int frac? exp?, `-0` allowed.
    fn number(&mut self) -> Result<f64> {
        let start = self.pos;
        self.eat('-');
        let int_start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let int_len = self.pos - int_start;
        if int_len == 0 || (int_len > 1 && self.char_at(int_start) == Some('0')) {
            self.pos = start;
            return Err(self.error("malformed number"));
        }
        if self.eat('.') {
            let frac = self.pos;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1;
            }
            if self.pos == frac {
                return Err(self.error("expected digits after `.`"));
            }
        }
        if self.eat('e') || self.eat('E') {
            if !self.eat('+') {
                self.eat('-');
            }
            let exp = self.pos;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1;
            }
            if self.pos == exp {
                return Err(self.error("expected digits in the exponent"));
            }
        }
        // serde_json reads the digits, so a literal is the very `f64` a `Value` of the same
        // digits holds; the grammar above is JSON's, so it refuses only what no `f64` holds.
        let text = self.taken(start);
        match serde_json::from_str::<f64>(&text) {
            Ok(n) if n.is_finite() => Ok(n),
            _ => {
                self.pos = start;
                Err(self.error("number out of range"))
            }
        }
    }
}

/// Comparisons and `length()` take singular queries: names and indices only, no `..`.
fn singular(c: &Comparable, at: usize) -> Result<()> {
    let Comparable::Query(q) = c else {
        return Ok(());
    };
    let ok = q.segments.iter().all(|s| {
        !s.descendant
            && s.selectors.len() == 1
            && matches!(s.selectors[0], Selector::Name(_) | Selector::Index(_))
    });
    if ok {
        Ok(())
    } else {
        Err(ParseError {
            at,
            message:
                "a query compared or given to length() must be singular (names and indices only)"
                    .into(),
            unsupported: false,
        })
    }
}
