//! Our nodelists against jsonpath-rust's (the oracle, a dev-dependency) on a table of paths and
//! documents and on generated ones; then what only we define: errors, duplicate names, numbers
//! inside containers, limits.

use jsonpath_rust::JsonPath as _;
use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;

/// Our nodelist on the document parsed into a `Value`, or the error of either parse.
fn ours(path: &str, text: &str) -> Result<Vec<Value>, String> {
    let path = JsonPath::parse(path).map_err(|e| e.to_string())?;
    let doc: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    Ok(path.select(&doc).into_iter().cloned().collect())
}

/// jsonpath-rust's nodelist, on the document parsed into a `Value`.
fn oracle(path: &str, text: &str) -> Result<Vec<Value>, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    doc.query(path)
        .map(|found| found.into_iter().cloned().collect())
        .map_err(|e| e.to_string())
}

fn sorted(mut values: Vec<Value>) -> Vec<String> {
    let mut out: Vec<String> = values.drain(..).map(|v| v.to_string()).collect();
    out.sort();
    out
}

const DOCUMENT: &str = r#"{
  "store": {"book": [
      {"category": "reference", "author": "Nigel Rees", "title": "Sayings", "price": 8.95},
      {"category": "fiction", "author": "Evelyn Waugh", "title": "Sword", "price": 12.99},
      {"category": "fiction", "author": "Herman Melville", "title": "Moby Dick", "isbn": "0-553", "price": 8.99},
      {"category": "fiction", "author": "J. R. R. Tolkien", "title": "Rings", "isbn": "0-395", "price": 22.99}],
    "bicycle": {"color": "red", "price": 399}},
  "spec": {"template": {"spec": {"priorityClassName": "system-node-critical",
      "nodeSelector": {"kubernetes.io/os": "linux", "it's": "q\"uote"},
      "containers": [{"name": "a", "image": "busybox:1", "ports": [1, 2, 3]}, {"name": "b\u00e9", "image": "x"}],
      "nil": null, "t": true, "f": false, "n": -0.5e1, "big": 12345678901234567890, "empty": {}, "none": []}}},
  "o": {"a": 1, "b": [1, 2], "c": {"a": 1}, "d": {"a": 1.0}, "e": "1", "f\u0041": "escaped key"},
  "list": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
}"#;

/// Paths from every part of the supported syntax, against the oracle, as multisets (unions: the
/// oracle applies each selector to every input node in turn, see `documents_only_we_define`).
#[test]
fn table_against_jsonpath_rust() {
    let paths = [
        "$",
        "$.store.book[*].author",
        "$..author",
        "$.store.*",
        "$.store..price",
        "$..book[2]",
        "$..book[-1]",
        "$..book[-5]",
        "$..book[0,1]",
        "$..book[:2]",
        "$..book[1:]",
        "$..book[::-1].title",
        "$.list[1:8:3]",
        "$.list[8:1:-3]",
        "$.list[-3:]",
        "$.list[:-8]",
        "$.list[::0]",
        "$.list[100:]",
        "$.list[-100:2]",
        "$.list[0, 0, 'a', 1:3, -1]",
        "$['store']['bicycle'][\"color\"]",
        "$.spec.template.spec.nodeSelector['kubernetes.io/os']",
        "$.spec.template.spec.nodeSelector['it\\'s']",
        "$.spec.template.spec.nodeSelector[\"it's\"]",
        "$.o['f\\u0041']",
        "$.o.fA",
        "$..book[?@.isbn]",
        "$..book[?!@.isbn]",
        "$..book[?@.price < 10].title",
        "$..book[?@.price <= 8.99].title",
        "$..book[?@.price > 10 && @.category == 'fiction'].title",
        "$..book[?@.price > 20 || @.author == \"Nigel Rees\"].title",
        "$..book[?!(@.price > 10)].title",
        "$..book[?(@.price > 10)]",
        "$..book[?@.category != 'fiction'].title",
        "$..book[?@.title >= 'S'].title",
        "$..book[?@.price == $.store.bicycle.price]",
        "$..book[?@.price < $.store.bicycle.price].price",
        "$..[?@.price > 300]",
        "$..*",
        "$..[*]",
        "$..[0]",
        "$..['a', 'price']",
        "$.o[?@ == 1]",
        "$.o[?@ == '1']",
        "$.o[?@ == @]",
        "$.o[?@.a == 1]",
        "$.o[?@ == $.o.b]",
        "$.o[?@.x == @.y]",
        "$.o[?@.x != 1]",
        "$.spec..[?@ == null]",
        "$.spec..[?@ == true]",
        "$.spec..[?@ == false]",
        "$.spec..[?@ == -5]",
        "$.spec..[?@ < 0]",
        "$.spec.template.spec.containers[?@.name == 'b\\u00e9'].image",
        "$.spec.template.spec.containers[?@.image == 'busybox:1'].ports[-1]",
        "$.spec.template.spec.containers[?length(@.ports) == 3].name",
        "$.spec.template.spec.containers[?length(@.name) == 2].name",
        "$.spec.template.spec[?length(@) == 2]",
        "$.spec.template.spec.containers[?count(@.*) == 3].name",
        "$.spec.template.spec.containers[?count(@..*) > 4].name",
        "$..book[?value(@.isbn) == '0-553'].title",
        "$.store.book[?@.price > 100]",
        "$.missing",
        "$.missing.deeper",
        "$.list.a",
        "$.o.a[0]",
        "$[0]",
        "$.spec.template.spec.empty.*",
        "$.spec.template.spec.none[*]",
        "$.spec.template.spec.big",
        "$ .store .bicycle",
        "$.store[ 'bicycle' , 'x' ]",
    ];
    for path in paths {
        let want = oracle(path, DOCUMENT).unwrap_or_else(|e| panic!("oracle on {path}: {e}"));
        let got = ours(path, DOCUMENT).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(sorted(got), sorted(want), "{path}");
    }
}

/// Where the order is the RFC's (arrays, descendants before their ancestors' later siblings),
/// the exact nodelist.
#[test]
fn nodelist_order() {
    let cases = [
        ("$.list[8:1:-3]", "[8, 5, 2]"),
        ("$.list[-1, 0, 0]", "[9, 0, 0]"),
        ("$..book[::-1].price", "[22.99, 8.99, 12.99, 8.95]"),
        ("$.o.b..*", "[1, 2]"),
        ("$.o..a", "[1, 1, 1.0]"),
        (
            "$.o[*]",
            r#"[1, [1, 2], {"a": 1}, {"a": 1.0}, "1", "escaped key"]"#,
        ),
    ];
    for (path, want) in cases {
        let want: Vec<Value> = serde_json::from_str(want).unwrap();
        assert_eq!(ours(path, DOCUMENT).unwrap(), want, "{path}");
    }
}

/// What jsonpath-rust cannot tell us: duplicate names, numbers inside containers, unions, deep
/// documents.
#[test]
fn documents_only_we_define() {
    let nested = |n: usize| format!("{{\"a\":{}1{}}}", "[".repeat(n), "]".repeat(n));
    let long_path = format!("${}", ".a".repeat(20));
    let long_doc = format!("{}1{}", r#"{"a":"#.repeat(20), "}".repeat(20));
    let cases: Vec<(&str, String, Result<&str, &str>)> = vec![
        (&long_path, long_doc, Ok("[1]")),
        // The last member of a name is the one there is, as in a `Value`, visited in name order.
        ("$.a", r#"{"a": 1, "a": 2}"#.into(), Ok("[2]")),
        ("$.*", r#"{"b": 0, "a": 1, "a": 2}"#.into(), Ok("[2, 0]")),
        ("$[?@ > 0]", r#"{"a": 1, "\u0061": 2}"#.into(), Ok("[2]")),
        (
            "$[?length(@) == 1]",
            r#"{"o": {"a": 1, "a": 2}}"#.into(),
            Ok(r#"[{"a": 1, "a": 2}]"#),
        ),
        // Numbers compare as numbers inside arrays and objects too (RFC 9535 2.3.5.2.2; the
        // oracle compares `Value`s there, where 1 and 1.0 differ).
        (
            "$[?@ == $.x]",
            r#"{"x": {"a": 1}, "y": {"a": 1.0}, "z": [1]}"#.into(),
            Ok(r#"[{"a": 1}, {"a": 1.0}]"#),
        ),
        (
            "$[?@ == $.x]",
            r#"{"x": [1, 2e0], "y": [1.0, 2], "z": [1]}"#.into(),
            Ok("[[1, 2e0], [1.0, 2]]"),
        ),
        // A union applies all of its selectors to one input node, then to the next (RFC 9535
        // 2.5.1.2); the oracle applies each selector to all nodes first.
        (
            "$..['b','k']",
            r#"[{"k": null}, {"b": false}]"#.into(),
            Ok("[null, false]"),
        ),
        (
            "$[*]['b','k']",
            r#"[{"k": 1, "b": 2}, {"b": 3}]"#.into(),
            Ok("[2, 1, 3]"),
        ),
        // As deep as a `Value` holds, every node visited and compared.
        ("$.a", nested(126), Ok("...")),
        ("$..x", nested(126), Ok("[]")),
        ("$..[?@ == 2]", nested(126), Ok("[]")),
        ("$..[?@ == 1]", nested(126), Ok("[1]")),
        ("$[?@ == $.a]", nested(126), Ok("...")),
        ("$.a.b", r#"{"a": [1], "a": {"b": 2}}"#.into(), Ok("[2]")),
        ("$.a.b", r#"{"a": {"b": 2}, "a": [1]}"#.into(), Ok("[]")),
        // What a `Value` cannot hold never reaches a query: serde_json refuses the text.
        ("$.b", nested(127), Err("recursion limit")),
        (
            "$.b",
            r#"{"a": "\ud800", "b": 1}"#.into(),
            Err("hex escape"),
        ),
        (
            "$.b",
            r#"{"a": 1e400, "b": 1}"#.into(),
            Err("number out of range"),
        ),
    ];
    for (path, text, want) in cases {
        let got = ours(path, &text);
        match want {
            Ok("...") => {
                let whole = serde_json::from_str::<Value>(&text).map(|v| v["a"].clone());
                assert_eq!(
                    got.map_err(drop),
                    whole.map(|a| vec![a]).map_err(drop),
                    "{path}"
                );
            }
            Ok(want) => assert_eq!(
                got,
                Ok(serde_json::from_str::<Vec<Value>>(want).unwrap()),
                "{path} on {text:.80}"
            ),
            Err(want) => {
                let err = got.expect_err(path);
                assert!(err.contains(want), "{path}: {want:?} not in {err:?}");
            }
        }
    }
}

#[test]
fn parse_errors() {
    let deep = format!("$[?{}@.a{}]", "(".repeat(20), ")".repeat(20));
    // wasm-tests/src/limits.rs evaluates 7 filters in filters, the most that parse.
    let filters = |n: usize| format!("$..[?{}@.name{}]", "@[?".repeat(n), "]".repeat(n));
    assert!(JsonPath::parse(&filters(7)).is_ok());
    let deep_filters = filters(8);
    let cases = [
        ("", "starts with `$`"),
        ("a", "starts with `$`"),
        ("$.", "expected a member name"),
        ("$.1a", "expected a member name"),
        ("$[", "unterminated"),
        ("$[1", "expected `,` or `]`"),
        ("$[01]", "leading zeros"),
        ("$[-0]", "leading zeros"),
        ("$[9007199254740992]", "out of range"),
        ("$['a]", "unterminated string"),
        ("$['\\x']", "invalid escape"),
        ("$['\\ud800']", "lone high surrogate"),
        ("$[?@.a == ]", "unexpected ']'"),
        ("$[?@.* == 1]", "must be singular"),
        ("$[?@..a == 1]", "must be singular"),
        ("$[?1 == 1 ||]", "unexpected ']'"),
        ("$[?1]", "must be compared"),
        ("$[?length(@.a)]", "length() must be compared"),
        ("$[?length(@.*) == 1]", "must be singular"),
        ("$[?count(1) == 1]", "must be a query"),
        ("$[?count(@.a, @.b) == 1]", "one argument"),
        ("$[?match(@.a, 'x')]", "function match() is not supported"),
        ("$[?search(@.a, 'x')]", "function search() is not supported"),
        ("$[?foo(@.a)]", "unknown function foo()"),
        ("$[?@.a == nul]", "unexpected `nul`"),
        ("$[?@.a == 1.]", "digits after"),
        ("$.a extra", "unexpected ' '"),
        (deep.as_str(), "nest more than 16"),
        (deep_filters.as_str(), "nest more than 16"),
        ("$$", "unexpected '$'"),
    ];
    for (path, want) in cases {
        let err = JsonPath::parse(path).expect_err(path).to_string();
        assert!(err.contains(want), "{path}: {want:?} not in {err:?}");
    }
}

fn document() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..5).prop_map(|n| json!(n)),
        Just(json!(1.5)),
        prop::sample::select(vec!["", "a", "b", "x y", "é", "1"]).prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(4, 40, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec!["a", "b", "c", "k"]).prop_map(String::from),
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Filter expressions from the supported subset.
fn expression() -> impl Strategy<Value = String> {
    let atom = prop::sample::select(vec![
        "@.a",
        "@.b",
        "@[0]",
        "!@.k",
        "$.a",
        "@.a == 1",
        "@.a == @.b",
        "@ == 'a'",
        "@ > 0",
        "@.a <= 1.5",
        "@.c != null",
        "@.b == true",
        "@.a < 'b'",
        "@[0] >= @[1]",
        "$.k == @.k",
        "@.a == $.b",
        "length(@) == 2",
        "length(@.a) > 0",
        "count(@.*) == 1",
        "count(@..a) >= 2",
        "value(@..k) == 1",
        "@.x == @.y",
        "@.a == @.a",
    ])
    .prop_map(String::from);
    atom.prop_recursive(2, 8, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} && {b}")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} || {b}")),
            inner.prop_map(|a| format!("!({a})")),
        ]
    })
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            ".a", ".b", ".c", ".k", ".*", "['a']", "[\"b\"]", "[*]", "[0]", "[1]", "[-1]", "[-4]",
            "[0:2]", "[1:]", "[::-1]", "[-2:]", "[3:0:-2]", "[::2]", "[0,'a',1:3]", "['c', 'a']",
            "..a", "..*", "..[0]", "..['b','k']", "..[-1:]",
        ])
        .prop_map(String::from),
        1 => expression().prop_map(|e| format!("[?{e}]")),
        1 => expression().prop_map(|e| format!("..[?{e}]")),
    ]
}

fn path() -> impl Strategy<Value = String> {
    prop::collection::vec(segment(), 0..4).prop_map(|s| format!("${}", s.concat()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Same nodes in the same order: both visit a `Value`'s members in name order. Unions only
    /// as multisets: the oracle orders their results by selector rather than by input node.
    #[test]
    fn generated_against_jsonpath_rust(doc in document(), path in path()) {
        let text = doc.to_string();
        let want = oracle(&path, &text);
        prop_assume!(want.is_ok());
        let got = ours(&path, &text);
        if path.contains(',') {
            prop_assert_eq!(got.map(sorted), want.map(sorted), "{} on {}", path, text);
        } else {
            prop_assert_eq!(got, want, "{} on {}", path, text);
        }
    }
}

/// Strings made of JSONPath's tokens, most of them not valid paths.
fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "$", "@", ".", "..", "*", "[", "]", "?", "(", ")", "!", "&&", "||", "==", "<", ">=",
            ",", ":", "-", "0", "1", "-1", "'a'", "\"b\"", "'\\u", "d800'", "a", "length(",
            "count(", "value(", "match(", "true", "null", " ", "\\", "1e999", "é",
        ]),
        0..24,
    )
    .prop_map(|t| t.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any path text parses or is refused without panicking, and a parsed one selects from any
    /// document without panicking.
    #[test]
    fn hostile_paths_never_panic(path in token_soup(), doc in document()) {
        if let Ok(p) = JsonPath::parse(&path) {
            let _ = p.select(&doc);
        }
    }
}

/// A number literal in a path is the `f64` a `Value` of the same digits holds, whatever the
/// rounding (serde_json reads both); JSON's grammar is enforced, and what no `f64` holds is out
/// of range.
#[test]
fn number_literals_are_read_as_serde_json_reads_numbers() {
    let cases = [
        "0",
        "-0",
        "1.5",
        "1E+3",
        "-2.5e-3",
        "123456789012345678901234567890",
        "0.1000000000000000055511151231257827",
        "2.2250738585072011e-308",
        "1e-400",
    ];
    for text in cases {
        let doc: Value = serde_json::from_str(&format!("[{text}]")).unwrap();
        let path = JsonPath::parse(&format!("$[?@ == {text}]")).unwrap();
        assert_eq!(path.select(&doc), [&doc[0]], "{text}");
    }
    for (literal, want) in [
        ("1e400", "number out of range"),
        ("-1e400", "number out of range"),
        ("01", "malformed number"),
        ("-", "malformed number"),
        ("1.", "digits after `.`"),
        ("1e", "digits in the exponent"),
        ("1e+", "digits in the exponent"),
        ("+1", "unexpected '+'"),
        (".5", "unexpected '.'"),
    ] {
        let err = JsonPath::parse(&format!("$[?@ == {literal}]")).expect_err(literal);
        assert!(
            err.to_string().contains(want),
            "{literal}: {want:?} not in {err}"
        );
    }
}

/// The paths a caller may follow member by member, and those it may not.
#[test]
fn member_names_of_single_name_paths_only() {
    let cases: [(&str, Option<&[&str]>); 9] = [
        ("$.a", Some(&["a"])),
        (
            "$.spec['tem\\'plate'][\"spec\"]",
            Some(&["spec", "tem'plate", "spec"]),
        ),
        ("$['\\u0061']", Some(&["a"])),
        ("$", None),
        ("$..a", None),
        ("$.a[0]", None),
        ("$.a.*", None),
        ("$['a','b']", None),
        ("$.a[?@.b]", None),
    ];
    for (path, want) in cases {
        let parsed = JsonPath::parse(path).unwrap();
        assert_eq!(parsed.member_names().as_deref(), want, "{path}");
    }
}
