//! JSONPath (RFC 9535) over a `serde_json::Value`.
//!
//! Supported: `$`, `@`; `.name`, `.*`, `['name']` and `["name"]` with escapes, `[*]`, indices
//! (negative from the end), slices `[start:end:step]`, unions `[0,'a',1:3]`; `..name`, `..*`,
//! `..[…]`; filters `[?…]` with existence tests, comparisons (`== != < <= > >=`) of literals and
//! singular queries, `&&`, `||`, `!` and parentheses; the functions `length()`, `count()` and
//! `value()`. `match()` and `search()` need I-Regexp (a regular-expression engine, most of the
//! size of a policy module) and are refused when the path is parsed. Filters and parentheses
//! nest at most [`MAX_FILTER_NESTING`] levels.
//!
//! Semantics are RFC 9535's, with these choices where it leaves them open:
//! - an object's members are visited in the order its `Value` keeps them: by name, serde_json's
//!   map without its `preserve_order` feature;
//! - an object with a member name twice has the last one, as a `Value` (and the Kubernetes API
//!   server) keep it;
//! - numbers compare as `f64`, inside arrays and objects too (`[1] == [1.0]`).
//!
//! Evaluation cannot fail: what JSON text a `Value` cannot hold (nesting past serde_json's
//! recursion limit, a lone surrogate escape, `1e400`) is refused when the text is parsed, before
//! any query sees it. Evaluation recurses on a filter's nesting, which the parser bounds, and on
//! the nesting of arrays and objects it compares for equality, which parsing bounded; `..` walks
//! its subtree with a stack of its own.

#![forbid(unsafe_code)]
// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

mod eval;
mod parse;

use serde_json::Value;

pub use parse::{ParseError, MAX_FILTER_NESTING};

/// A parsed path, ready to select from any number of values.
#[derive(Debug, Clone)]
pub struct JsonPath {
    query: parse::Query,
}

impl JsonPath {
    /// Parses `path`, RFC 9535 syntax starting at `$`, with its well-typedness rules for
    /// function expressions.
    ///
    /// # Errors
    ///
    /// A [`ParseError`] with the character offset where the path stops being valid; its
    /// `unsupported` is `true` when the path is valid RFC 9535 but uses `match()` or `search()`,
    /// which this implementation leaves out.
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::json;
    /// use taintguard_jsonpath::JsonPath;
    ///
    /// let pod = json!({"spec": {"priorityClassName": "system-node-critical",
    ///     "containers": [{"name": "app"}, {"name": "sidecar", "image": "proxy:1"}]}});
    /// let path = JsonPath::parse("$.spec.containers[?@.image].name")?;
    /// assert_eq!(path.select(&pod), [&json!("sidecar")]);
    ///
    /// let refused = JsonPath::parse("$[?match(@.name, 'a.*')]").unwrap_err();
    /// assert!(refused.unsupported);
    /// # Ok::<(), taintguard_jsonpath::ParseError>(())
    /// ```
    pub fn parse(path: &str) -> Result<JsonPath, ParseError> {
        parse::parse(path).map(|query| JsonPath { query })
    }

    /// The member names of a path made of single-name child segments only
    /// (`$.spec.template['spec']`), in order; `None` for any other path, `$` alone included.
    /// Such a path selects at most the one node these names lead to from member to member, so a
    /// caller may read only those members rather than the whole value (a `Value` keeps a name's
    /// last member; so must the caller).
    ///
    /// # Examples
    ///
    /// ```
    /// use taintguard_jsonpath::JsonPath;
    ///
    /// let path = JsonPath::parse("$.spec['template'].spec.priorityClassName")?;
    /// assert_eq!(path.member_names(), Some(vec!["spec", "template", "spec", "priorityClassName"]));
    /// assert_eq!(JsonPath::parse("$..priorityClassName")?.member_names(), None);
    /// # Ok::<(), taintguard_jsonpath::ParseError>(())
    /// ```
    pub fn member_names(&self) -> Option<Vec<&str>> {
        if !self.query.absolute || self.query.segments.is_empty() {
            return None;
        }
        (self.query.segments.iter())
            .map(
                |segment| match (segment.descendant, &segment.selectors[..]) {
                    (false, [parse::Selector::Name(name)]) => Some(name.as_str()),
                    _ => None,
                },
            )
            .collect()
    }

    /// The nodes the path selects in `value`, in RFC 9535 order.
    pub fn select<'v>(&self, value: &'v Value) -> Vec<&'v Value> {
        eval::query(&self.query, value, value)
    }
}

#[cfg(test)]
mod tests;
