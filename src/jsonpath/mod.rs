//! JSONPath (RFC 9535) over borrowed JSON text.
//!
//! A query reads only what its path leads to: member names and indices are followed through the
//! text, and no `Value` of the object is built. A descendant segment (`..`) reads the subtree it
//! starts from once, so its cost is linear in that subtree's size.
//!
//! Supported: `$`, `@`; `.name`, `.*`, `['name']` and `["name"]` with escapes, `[*]`, indices
//! (negative from the end), slices `[start:end:step]`, unions `[0,'a',1:3]`; `..name`, `..*`,
//! `..[…]`; filters `[?…]` with existence tests, comparisons (`== != < <= > >=`) of literals and
//! singular queries, `&&`, `||`, `!` and parentheses; the functions `length()`, `count()` and
//! `value()`. `match()` and `search()` need I-Regexp (a regular-expression engine, most of the
//! size of a policy module) and are refused when the path is parsed. Filters and parentheses
//! nest at most [`parse::MAX_FILTER_NESTING`] levels.
//!
//! Semantics are RFC 9535's, with these choices where it leaves them open:
//! - an object with a member name twice has the last one, as a `serde_json::Value` (and the
//!   Kubernetes API server) keep it; `*` and filters visit each name once;
//! - an object's members are visited in document order;
//! - numbers compare as `f64`.
//!
//! Reading into an array or object nested more than 127 levels deep (serde_json's recursion
//! limit, counted from the root), or decoding a string or number that a `Value` cannot hold, is
//! an error, never a silent `null`.

mod eval;
pub mod parse;
mod scan;
mod skip;

use std::borrow::Cow;

use serde_json::Value;

pub use parse::ParseError;
pub use scan::Node;

/// A parsed path.
#[derive(Debug, Clone)]
pub struct JsonPath {
    query: parse::Query,
}

impl JsonPath {
    pub fn parse(path: &str) -> Result<JsonPath, ParseError> {
        parse::parse(path).map(|query| JsonPath { query })
    }

    /// The nodes the path selects in the JSON text `object`, in RFC 9535 order; an error says
    /// what could not be read and where.
    pub fn select<'a>(&self, object: &'a str) -> Result<Vec<Node<'a>>, String> {
        let root = Node {
            text: object.trim_matches([' ', '\t', '\n', '\r']),
            depth: 0,
        };
        eval::query(&self.query, root, root).map_err(|e| e.describe(object))
    }
}

/// A selected node as a `Value`, refused where parsing the whole object would refuse it.
pub fn value(node: Node<'_>, object: &str) -> Result<Value, String> {
    scan::decode(node).map_err(|e| e.describe(object))
}

/// A selected node's string, unescaped; `None` when it is not a string.
pub fn string<'a>(node: Node<'a>, object: &str) -> Result<Option<Cow<'a, str>>, String> {
    if !node.text.starts_with('"') {
        return Ok(None);
    }
    scan::string(node.text)
        .map(Some)
        .map_err(|e| e.describe(object))
}

#[cfg(test)]
mod tests;
