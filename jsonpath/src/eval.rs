//! Evaluating a [`Query`] over a `Value`, RFC 9535 semantics: a segment maps each node of its
//! input nodelist to the nodes its selectors select there, in order.

use serde_json::Value;

use super::parse::{Comparable, Expr, Function, Literal, Op, Query, Selector, Slice};

/// The nodes `q` selects, from `root` (`$`) or `current` (`@`).
pub fn query<'v>(q: &Query, root: &'v Value, current: &'v Value) -> Vec<&'v Value> {
    let mut nodes = vec![if q.absolute { root } else { current }];
    for segment in &q.segments {
        let mut out = Vec::new();
        for node in nodes {
            if segment.descendant {
                for_each_descendant(node, |n| select(&segment.selectors, n, root, &mut out));
            } else {
                select(&segment.selectors, node, root, &mut out);
            }
        }
        nodes = out;
        if nodes.is_empty() {
            break;
        }
    }
    nodes
}

/// `node` and everything below it, each before its descendants and children in order (RFC 9535
/// 2.5.2.2). A stack of its own rather than recursion: the subtree may nest 127 levels deep, and
/// the gatekeeper build of a policy runs on a 64 KiB stack.
fn for_each_descendant<'v>(node: &'v Value, mut each: impl FnMut(&'v Value)) {
    let mut pending = vec![node];
    while let Some(node) = pending.pop() {
        each(node);
        match node {
            Value::Array(elements) => pending.extend(elements.iter().rev()),
            Value::Object(members) => pending.extend(members.values().rev()),
            _ => {}
        }
    }
}

/// The members of an object or the elements of an array, in order; nothing for other values.
fn children(node: &Value) -> impl Iterator<Item = &Value> {
    let (elements, members) = match node {
        Value::Array(elements) => (Some(elements.iter()), None),
        Value::Object(members) => (None, Some(members.values())),
        _ => (None, None),
    };
    elements
        .into_iter()
        .flatten()
        .chain(members.into_iter().flatten())
}

/// Applies `selectors` to `node`, appending what they select to `out`.
fn select<'v>(selectors: &[Selector], node: &'v Value, root: &'v Value, out: &mut Vec<&'v Value>) {
    for selector in selectors {
        match (selector, node) {
            (Selector::Name(name), Value::Object(members)) => out.extend(members.get(name)),
            (Selector::Wildcard, _) => out.extend(children(node)),
            (Selector::Index(i), Value::Array(elements)) => {
                out.extend(index(*i, elements.len()).map(|k| &elements[k]));
            }
            (Selector::Slice(slice), Value::Array(elements)) => {
                slice_indices(*slice, elements.len(), |k| {
                    out.push(&elements[k]);
                });
            }
            (Selector::Filter(expr), _) => {
                out.extend(children(node).filter(|kid| test(expr, root, kid)));
            }
            _ => {}
        }
    }
}

/// The element an index selects in an array of `len` elements.
fn index(i: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let n = if i < 0 { len + i } else { i };
    (0..len).contains(&n).then_some(n as usize)
}

/// The elements a slice selects, in its order (RFC 9535 2.3.4.2.2).
fn slice_indices(Slice { start, end, step }: Slice, len: usize, mut each: impl FnMut(usize)) {
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

/// Whether the filter expression holds on `current`.
fn test(expr: &Expr, root: &Value, current: &Value) -> bool {
    match expr {
        Expr::Or(all) => all.iter().any(|e| test(e, root, current)),
        Expr::And(all) => all.iter().all(|e| test(e, root, current)),
        Expr::Not(e) => !test(e, root, current),
        Expr::Exists(q) => !query(q, root, current).is_empty(),
        Expr::Compare(left, op, right) => {
            let l = operand(left, root, current);
            let r = operand(right, root, current);
            match op {
                Op::Eq => equal(&l, &r),
                Op::Ne => !equal(&l, &r),
                Op::Lt => less(&l, &r),
                Op::Le => less(&l, &r) || equal(&l, &r),
                Op::Gt => less(&r, &l),
                Op::Ge => less(&r, &l) || equal(&l, &r),
            }
        }
    }
}

/// A compared value: a literal, a function's result or a node, its scalars unwrapped so that
/// literals and nodes compare alike; `Nothing` when a query selects no node.
enum Val<'a> {
    Nothing,
    Number(f64),
    String(&'a str),
    Bool(bool),
    Null,
    /// An array or an object.
    Container(&'a Value),
}

fn value_of(node: &Value) -> Val<'_> {
    match node {
        // Without serde_json's `arbitrary_precision` every number has an `f64`.
        Value::Number(n) => Val::Number(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => Val::String(s),
        Value::Bool(b) => Val::Bool(*b),
        Value::Null => Val::Null,
        Value::Array(_) | Value::Object(_) => Val::Container(node),
    }
}

fn operand<'a>(c: &'a Comparable, root: &'a Value, current: &'a Value) -> Val<'a> {
    let single = |nodes: Vec<&'a Value>| match nodes.as_slice() {
        [node] => value_of(node),
        _ => Val::Nothing,
    };
    match c {
        Comparable::Literal(Literal::String(s)) => Val::String(s),
        Comparable::Literal(Literal::Number(n)) => Val::Number(*n),
        Comparable::Literal(Literal::Bool(b)) => Val::Bool(*b),
        Comparable::Literal(Literal::Null) => Val::Null,
        Comparable::Query(q) | Comparable::Function(Function::Value(q)) => {
            single(query(q, root, current))
        }
        Comparable::Function(Function::Count(q)) => {
            Val::Number(query(q, root, current).len() as f64)
        }
        Comparable::Function(Function::Length(arg)) => match operand(arg, root, current) {
            Val::String(s) => Val::Number(s.chars().count() as f64),
            Val::Container(Value::Array(elements)) => Val::Number(elements.len() as f64),
            Val::Container(Value::Object(members)) => Val::Number(members.len() as f64),
            _ => Val::Nothing,
        },
    }
}

fn less(l: &Val<'_>, r: &Val<'_>) -> bool {
    match (l, r) {
        (Val::Number(a), Val::Number(b)) => a < b,
        (Val::String(a), Val::String(b)) => a < b,
        _ => false,
    }
}

fn equal(l: &Val<'_>, r: &Val<'_>) -> bool {
    match (l, r) {
        (Val::Nothing, Val::Nothing) | (Val::Null, Val::Null) => true,
        (Val::Number(a), Val::Number(b)) => a == b,
        (Val::String(a), Val::String(b)) => a == b,
        (Val::Bool(a), Val::Bool(b)) => a == b,
        (Val::Container(a), Val::Container(b)) => deep_equal(a, b),
        _ => false,
    }
}

/// Structural equality with numbers compared as numbers (`1 == 1.0`). It recurses as deep as the
/// values nest, as parsing them did: serde_json bounds that depth.
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
