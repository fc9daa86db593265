//! Evaluating a [`Query`] over borrowed JSON text, RFC 9535 semantics: a segment maps each node
//! of its input nodelist to the nodes its selectors select there, in order.

use std::borrow::Cow;

use serde_json::Value;

use super::parse::{Comparable, Expr, Function, Literal, Op, Query, Segment, Selector};
use super::scan::{
    blank, children, decode, key_is, malformed, number, rest, slice, string, string_end, subtree,
    too_deep, value_end, Child, Node, Result,
};

/// The nodes `q` selects, from `root` (`$`) or `current` (`@`).
pub fn query<'a>(q: &Query, root: Node<'a>, current: Node<'a>) -> Result<'a, Vec<Node<'a>>> {
    let start = if q.absolute { root } else { current };
    // Leading `.name` segments are followed in one pass over the text they lead through.
    let chain = q
        .segments
        .iter()
        .take(MAX_CHAIN)
        .take_while(|s| !s.descendant && matches!(s.selectors[..], [Selector::Name(_)]))
        .count();
    let mut nodes = if chain == 0 {
        vec![start]
    } else {
        follow(start.text, 0, start.depth, &q.segments[..chain])?
            .0
            .into_iter()
            .collect()
    };
    for segment in &q.segments[chain..] {
        let mut out = Vec::new();
        for node in &nodes {
            if segment.descendant {
                // One pass over the node's text lists it and all its descendants; each container
                // is then selected from with its children read off that list.
                let entries = subtree(*node)?;
                let mut kids = Vec::new();
                for (i, entry) in entries.iter().enumerate() {
                    if !is_container(entry.child.node) {
                        continue;
                    }
                    kids.clear();
                    let mut c = i + 1;
                    while c < entry.after {
                        kids.push(entries[c].child);
                        c = entries[c].after;
                    }
                    select(&segment.selectors, entry.child.node, &kids, root, &mut out)?;
                }
            } else if is_container(*node) {
                let kids = children(*node)?;
                select(&segment.selectors, *node, &kids, root, &mut out)?;
            }
        }
        nodes = out;
        if nodes.is_empty() {
            break;
        }
    }
    Ok(nodes)
}

/// The most leading `.name` segments [`follow`] takes at once: it recurses once per name.
const MAX_CHAIN: usize = 16;

/// Follows `names` (segments of one name selector each) from the value at `i` in `s`: the node
/// they lead to, if any, and the end of that value. Each byte is read once: the member a name
/// selects is scanned by following the next name into it, the others are skipped. The last
/// member of a name wins, as in [`select`].
fn follow<'a>(
    s: &'a str,
    i: usize,
    depth: usize,
    names: &[Segment],
) -> Result<'a, (Option<Node<'a>>, usize)> {
    let b = s.as_bytes();
    let (Some(b'{'), [Segment { selectors, .. }, then @ ..]) = (b.get(i), names) else {
        return Ok((None, value_end(s, i)?));
    };
    let [Selector::Name(name)] = &selectors[..] else {
        return Ok((None, value_end(s, i)?));
    };
    if depth + 1 > crate::json::MAX_NESTING {
        return Err(too_deep(rest(s, i)));
    }
    let mut found = None;
    let mut j = blank(b, i + 1);
    if b.get(j) == Some(&b'}') {
        return Ok((None, j + 1));
    }
    loop {
        if b.get(j) != Some(&b'"') {
            return Err(malformed(rest(s, j)));
        }
        let key_end = string_end(s, j)?;
        let key = slice(s, j, key_end)?;
        j = blank(b, key_end);
        if b.get(j) != Some(&b':') {
            return Err(malformed(rest(s, j)));
        }
        j = blank(b, j + 1);
        let end = if !key_is(key, name)? {
            value_end(s, j)?
        } else if then.is_empty() {
            let end = value_end(s, j)?;
            found = Some(Node {
                text: slice(s, j, end)?,
                depth: depth + 1,
            });
            end
        } else {
            let (inner, end) = follow(s, j, depth + 1, then)?;
            found = inner;
            end
        };
        j = blank(b, end);
        match b.get(j) {
            Some(b',') => j = blank(b, j + 1),
            Some(b'}') => return Ok((found, j + 1)),
            _ => return Err(malformed(rest(s, j))),
        }
    }
}

fn is_container(node: Node<'_>) -> bool {
    matches!(node.text.as_bytes().first(), Some(b'{' | b'['))
}

fn is_object(node: Node<'_>) -> bool {
    node.text.starts_with('{')
}

/// Applies `selectors` to `node`, whose children are `kids`.
fn select<'a>(
    selectors: &[Selector],
    node: Node<'a>,
    kids: &[Child<'a>],
    root: Node<'a>,
    out: &mut Vec<Node<'a>>,
) -> Result<'a, ()> {
    let object = is_object(node);
    // An object's members without those a later member of the same name replaces.
    let mut members: Option<Vec<Child<'a>>> = None;
    for selector in selectors {
        match selector {
            Selector::Name(name) => {
                if object {
                    // Every name is read, so that one a `Value` could not hold is an error
                    // wherever it is.
                    let mut last = None;
                    for kid in kids {
                        if key_is(kid.key.unwrap_or_default(), name)? {
                            last = Some(kid.node);
                        }
                    }
                    out.extend(last);
                }
            }
            Selector::Wildcard => {
                let all = distinct(object, kids, &mut members)?;
                out.extend(all.iter().map(|k| k.node));
            }
            Selector::Index(i) => {
                if !object {
                    if let Some(k) = index(*i, kids.len()) {
                        out.push(kids[k].node);
                    }
                }
            }
            Selector::Slice { start, end, step } => {
                if !object {
                    slice_indices(*start, *end, *step, kids.len(), |k| out.push(kids[k].node));
                }
            }
            Selector::Filter(expr) => {
                let all = distinct(object, kids, &mut members)?;
                for kid in all {
                    if test(expr, root, kid.node)? {
                        out.push(kid.node);
                    }
                }
            }
        }
    }
    Ok(())
}

/// The children as a `Value` has them: for an object, the last member of each name.
fn distinct<'a, 'k>(
    object: bool,
    kids: &'k [Child<'a>],
    cache: &'k mut Option<Vec<Child<'a>>>,
) -> Result<'a, &'k [Child<'a>]> {
    if !object {
        return Ok(kids);
    }
    if cache.is_none() {
        *cache = Some(distinct_members(kids)?);
    }
    Ok(cache.as_deref().unwrap_or_default())
}

fn distinct_members<'a>(kids: &[Child<'a>]) -> Result<'a, Vec<Child<'a>>> {
    let keys = kids
        .iter()
        .map(|k| string(k.key.unwrap_or_default()))
        .collect::<Result<'a, Vec<Cow<'a, str>>>>()?;
    let mut order: Vec<usize> = (0..kids.len()).collect();
    order.sort_by(|a, b| keys[*a].cmp(&keys[*b]).then(a.cmp(b)));
    let mut keep = vec![true; kids.len()];
    for pair in order.windows(2) {
        if keys[pair[0]] == keys[pair[1]] {
            keep[pair[0]] = false;
        }
    }
    Ok(kids
        .iter()
        .zip(keep)
        .filter(|(_, keep)| *keep)
        .map(|(k, _)| *k)
        .collect())
}

/// The element an index selects in an array of `len` elements.
fn index(i: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let n = if i < 0 { len + i } else { i };
    (0..len).contains(&n).then_some(n as usize)
}

/// The elements a slice selects, in its order (RFC 9535 2.3.4.2.2).
fn slice_indices(
    start: Option<i64>,
    end: Option<i64>,
    step: Option<i64>,
    len: usize,
    mut each: impl FnMut(usize),
) {
    let Ok(len) = i64::try_from(len) else { return };
    let step = step.unwrap_or(1);
    let norm = |i: i64| if i >= 0 { i } else { len + i };
    if step > 0 {
        let lower = norm(start.unwrap_or(0)).clamp(0, len);
        let upper = norm(end.unwrap_or(len)).clamp(0, len);
        let mut i = lower;
        while i < upper {
            each(i as usize);
            i += step;
        }
    } else if step < 0 {
        let upper = norm(start.unwrap_or(len - 1)).clamp(-1, len - 1);
        let lower = norm(end.unwrap_or(-len - 1)).clamp(-1, len - 1);
        let mut i = upper;
        while lower < i {
            each(i as usize);
            i += step;
        }
    }
}

fn test<'a>(expr: &Expr, root: Node<'a>, current: Node<'a>) -> Result<'a, bool> {
    Ok(match expr {
        Expr::Or(all) => {
            for e in all {
                if test(e, root, current)? {
                    return Ok(true);
                }
            }
            false
        }
        Expr::And(all) => {
            for e in all {
                if !test(e, root, current)? {
                    return Ok(false);
                }
            }
            true
        }
        Expr::Not(e) => !test(e, root, current)?,
        Expr::Exists(q) => !query(q, root, current)?.is_empty(),
        Expr::Compare(left, op, right) => {
            let l = operand(left, root, current)?;
            let r = operand(right, root, current)?;
            match op {
                Op::Eq => equal(&l, &r)?,
                Op::Ne => !equal(&l, &r)?,
                Op::Lt => less(&l, &r),
                Op::Le => less(&l, &r) || equal(&l, &r)?,
                Op::Gt => less(&r, &l),
                Op::Ge => less(&r, &l) || equal(&l, &r)?,
            }
        }
    })
}

/// A compared value; `Nothing` when a query selects no node.
enum Val<'a> {
    Nothing,
    Number(f64),
    String(Cow<'a, str>),
    Bool(bool),
    Null,
    Array(Node<'a>),
    Object(Node<'a>),
}

fn value_of(node: Node<'_>) -> Result<'_, Val<'_>> {
    Ok(match node.text.as_bytes().first() {
        Some(b'"') => Val::String(string(node.text)?),
        Some(b't') => Val::Bool(true),
        Some(b'f') => Val::Bool(false),
        Some(b'n') => Val::Null,
        Some(b'[') => Val::Array(node),
        Some(b'{') => Val::Object(node),
        _ => Val::Number(number(node.text)?),
    })
}

fn operand<'a>(c: &Comparable, root: Node<'a>, current: Node<'a>) -> Result<'a, Val<'a>> {
    let single = |nodes: Vec<Node<'a>>| match nodes.as_slice() {
        [node] => value_of(*node),
        _ => Ok(Val::Nothing),
    };
    Ok(match c {
        Comparable::Literal(Literal::String(s)) => Val::String(Cow::Owned(s.clone())),
        Comparable::Literal(Literal::Number(n)) => Val::Number(*n),
        Comparable::Literal(Literal::Bool(b)) => Val::Bool(*b),
        Comparable::Literal(Literal::Null) => Val::Null,
        Comparable::Query(q) => single(query(q, root, current)?)?,
        Comparable::Function(Function::Count(q)) => {
            Val::Number(query(q, root, current)?.len() as f64)
        }
        Comparable::Function(Function::Value(q)) => single(query(q, root, current)?)?,
        Comparable::Function(Function::Length(arg)) => match operand(arg, root, current)? {
            Val::String(s) => Val::Number(s.chars().count() as f64),
            Val::Array(node) => Val::Number(children(node)?.len() as f64),
            Val::Object(node) => {
                let kids = children(node)?;
                let mut cache = None;
                Val::Number(distinct(true, &kids, &mut cache)?.len() as f64)
            }
            _ => Val::Nothing,
        },
    })
}

fn less(l: &Val<'_>, r: &Val<'_>) -> bool {
    match (l, r) {
        (Val::Number(a), Val::Number(b)) => a < b,
        (Val::String(a), Val::String(b)) => a < b,
        _ => false,
    }
}

fn equal<'a>(l: &Val<'a>, r: &Val<'a>) -> Result<'a, bool> {
    Ok(match (l, r) {
        (Val::Nothing, Val::Nothing) | (Val::Null, Val::Null) => true,
        (Val::Number(a), Val::Number(b)) => a == b,
        (Val::String(a), Val::String(b)) => a == b,
        (Val::Bool(a), Val::Bool(b)) => a == b,
        (Val::Array(a), Val::Array(b)) | (Val::Object(a), Val::Object(b)) => {
            deep_equal(&decode(*a)?, &decode(*b)?)
        }
        _ => false,
    })
}

/// Structural equality with numbers compared as numbers (`1 == 1.0`).
fn deep_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| deep_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| deep_equal(v, w)))
        }
        _ => a == b,
    }
}
