//! The annotations' reader ([`super::annotations::read`]) against the reader it imitates: Go's
//! `encoding/json` unmarshalling into `[]v1.Toleration`, as the plugin does, built from
//! `tests/go/annotations.go` with the machine's Go (Debian's `golang-go`; `./build.sh test`
//! installs it). Both are fed the same values: generated ones (shapes Kubernetes writes and
//! shapes only a hand or an attacker writes: names in other cases, Unicode's other `k` and `s`,
//! escapes, halves of surrogate pairs, duplicates, `null`s, numbers at int64's edges, nesting at
//! Go's depth limit, damaged text) and every string of the fuzz corpus. What each read must be
//! equal, and where one refuses the other must too; the words of a refusal are each reader's own.
//!
//! Each seed of `tests/go/seeds` runs on every `cargo test`; `TAINTGUARD_GO_SEED=N` runs seed N
//! and `TAINTGUARD_GO_VALUES=N` sets the values a seed makes (docs/testing.md, "The Go
//! differential"). A difference names its seed: add the seed to the file with the fix.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use super::annotations::read;

/// The values one seed makes unless `TAINTGUARD_GO_VALUES` says otherwise: a few seconds for
/// all the kept seeds together.
const VALUES_PER_SEED: usize = 1500;

/// splitmix64: small, and the same sequence for a seed everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn space(&mut self) -> &'static str {
        if self.chance(80) {
            ""
        } else {
            self.pick(&[" ", "\n", "\t", "\r\n  "])
        }
    }
}

const NAMES: &[&str] = &[
    "key",
    "operator",
    "value",
    "effect",
    "tolerationSeconds",
    "other",
    "keys",
    "ke",
    "toleration_seconds",
    "",
];

const STRING_PIECES: &[&str] = &[
    "NoSchedule",
    "NoExecute",
    "Exists",
    "Equal",
    "node.kubernetes.io/not-ready",
    "dedicated",
    "a",
    "é",
    "\\u00e9",
    "\\ud800",
    "\\udc00",
    "\\ud83d\\ude00",
    "\\ud83d",
    "\\ud83d\\u0041",
    "\\n",
    "\\/",
    "\\\"",
    "\\\\ud800",
    "K",
    "ſ",
    "\\u212a",
    "\\u0000",
];

const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "60",
    "-5",
    "300",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "1.0",
    "1e2",
    "1E+2",
    "0.5",
    "1e400",
    "12345678901234567890123",
];

/// A member name as a JSON literal: one Go's matching may or may not take for a field.
fn name(rng: &mut Rng) -> String {
    let mut literal = String::from("\"");
    for c in rng.pick(NAMES).chars() {
        let c = if rng.chance(20) {
            c.to_ascii_uppercase()
        } else {
            c
        };
        match c {
            'k' | 'K' if rng.chance(15) => literal.push_str(rng.pick(&["\u{212a}", "\\u212a"])),
            's' | 'S' if rng.chance(15) => literal.push_str(rng.pick(&["\u{17f}", "\\u017f"])),
            _ if rng.chance(5) => literal.push_str(&format!("\\u{:04x}", c as u32)),
            _ => literal.push(c),
        }
        if rng.chance(1) {
            literal.push_str(rng.pick(&["\\ud800", "\\udfff"]));
        }
    }
    literal.push('"');
    literal
}

fn string(rng: &mut Rng) -> String {
    let mut literal = String::from("\"");
    for _ in 0..rng.below(4) {
        literal.push_str(rng.pick(STRING_PIECES));
    }
    if rng.chance(1) {
        literal.push('\u{1}');
    }
    literal.push('"');
    literal
}

/// A member's value, nesting at most `depth` more levels.
fn value(rng: &mut Rng, depth: usize) -> String {
    match rng.below(20) {
        0..=10 => string(rng),
        11 | 12 => "null".to_owned(),
        13..=15 => rng.pick(NUMBERS).to_owned(),
        16 => rng.pick(&["true", "false"]).to_owned(),
        17 if depth > 0 => format!("[{}]", value(rng, depth - 1)),
        18 if depth > 0 => object(rng, depth - 1),
        _ => "{}".to_owned(),
    }
}

fn object(rng: &mut Rng, depth: usize) -> String {
    let members: Vec<String> = (0..rng.below(7))
        .map(|_| {
            let (a, b, c) = (rng.space(), rng.space(), rng.space());
            format!("{a}{}{b}:{c}{}", name(rng), value(rng, depth))
        })
        .collect();
    format!("{{{}}}", members.join(","))
}

fn entry(rng: &mut Rng) -> String {
    if rng.chance(88) {
        object(rng, 2)
    } else {
        rng.pick(&["null", "1", "\"x\"", "[]", "true"]).to_owned()
    }
}

fn list(rng: &mut Rng) -> String {
    let entries: Vec<String> = (0..rng.below(4))
        .map(|_| format!("{}{}{}", rng.space(), entry(rng), rng.space()))
        .collect();
    format!("{}[{}]{}", rng.space(), entries.join(","), rng.space())
}

/// One annotation value.
fn annotation(rng: &mut Rng) -> String {
    match rng.below(40) {
        0 => rng
            .pick(&[
                "", " ", "null", " null ", "{}", "\"x\"", "1", "true", "[] x",
            ])
            .to_owned(),
        1 => {
            let text = list(rng);
            let cut = rng.below(text.len() + 1);
            text.char_indices()
                .map(|(at, _)| at)
                .chain([text.len()])
                .take_while(|&at| at <= cut)
                .last()
                .map_or(text.clone(), |at| text[..at].to_owned())
        }
        // Around Go's limit of 10,000 levels: the list, its object and the arrays.
        2 => {
            let arrays = 9_995 + rng.below(8);
            format!(
                r#"[{{"other":{}{}}}]"#,
                "[".repeat(arrays),
                "]".repeat(arrays)
            )
        }
        _ => list(rng),
    }
}

/// What a reader made of an annotation: `{"read": [[key, operator, value, effect, seconds]]}`,
/// or `{"refused": why}`.
fn ours(annotation: &str) -> Value {
    match read(Some(annotation)) {
        Ok(tolerations) => {
            let read: Vec<Value> = (tolerations.unwrap_or_default().iter())
                .map(|t| json!([t.key, t.operator, t.value, t.effect, t.toleration_seconds]))
                .collect();
            json!({ "read": read })
        }
        Err(why) => json!({ "refused": why }),
    }
}

/// Go's reading of each value, one process for them all.
fn go(reader: &Path, values: &[String]) -> Vec<Value> {
    let mut child = Command::new(reader)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the Go reader runs");
    let mut input = String::new();
    for value in values {
        input.push_str(&serde_json::to_string(value).unwrap());
        input.push('\n');
    }
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(output.status.success(), "the Go reader failed");
    let lines = String::from_utf8(output.stdout).unwrap();
    let read: Vec<Value> = lines
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        read.len(),
        values.len(),
        "the Go reader answered every value"
    );
    read
}

/// `tests/go/annotations.go`, built into the target directory.
fn go_reader() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = manifest.join("../../target/go-differential");
    std::fs::create_dir_all(&out).unwrap();
    let binary = out.join("annotations");
    let built = Command::new("go")
        .arg("build")
        .arg("-o")
        .arg(&binary)
        .arg(manifest.join("tests/go/annotations.go"))
        .env("CGO_ENABLED", "0")
        .status();
    match built {
        Ok(status) => assert!(
            status.success(),
            "`go build` of tests/go/annotations.go failed"
        ),
        Err(e) => panic!(
            "the Go differential needs Go on PATH (Debian's golang-go, which `./build.sh test` \
             installs): {e}. It did not run."
        ),
    }
    binary
}

/// Every string of the fuzz corpus (the seeds, the regressions and a local corpus), and each
/// input as a whole after the byte that picks its settings: text an annotation may hold.
fn corpus() -> Vec<String> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut values = Vec::new();
    for kind in ["seeds", "regressions", "corpus"] {
        let Ok(targets) = std::fs::read_dir(fuzz.join(kind)) else {
            continue;
        };
        for target in targets.flatten().filter(|t| t.path().is_dir()) {
            for file in std::fs::read_dir(target.path()).unwrap().flatten() {
                let bytes = std::fs::read(file.path()).unwrap();
                let Some(Ok(text)) = bytes.get(1..).map(std::str::from_utf8) else {
                    continue;
                };
                if let Ok(document) = serde_json::from_str::<Value>(text) {
                    strings(&document, &mut values);
                }
                values.push(text.to_owned());
            }
        }
    }
    values
}

fn strings(value: &Value, into: &mut Vec<String>) {
    match value {
        Value::String(s) => into.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings(v, into)),
        Value::Object(members) => members.values().for_each(|v| strings(v, into)),
        _ => {}
    }
}

fn seeds() -> Vec<u64> {
    if let Ok(seed) = std::env::var("TAINTGUARD_GO_SEED") {
        return vec![seed.parse().expect("TAINTGUARD_GO_SEED is a number")];
    }
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/go/seeds");
    let kept = std::fs::read_to_string(file).unwrap();
    let seeds: Vec<u64> = kept
        .lines()
        .map(|line| line.split('#').next().unwrap().trim())
        .filter(|line| !line.is_empty())
        .map(|line| line.parse().unwrap())
        .collect();
    assert!(!seeds.is_empty(), "tests/go/seeds keeps no seed");
    seeds
}

/// `value` quoted, cut short past 300 characters (a nesting case is 20,000).
fn shown(value: &str) -> String {
    match value.char_indices().nth(300) {
        Some((at, _)) => format!("{:?}… ({} bytes)", &value[..at], value.len()),
        None => format!("{value:?}"),
    }
}

/// Where the two readers differ: both refuse, or both read the same tolerations.
fn differences(values: &[String], go: &[Value]) -> Vec<String> {
    values
        .iter()
        .zip(go)
        .filter_map(|(value, go)| {
            let ours = ours(value);
            let agree = match (ours.get("read"), go.get("read")) {
                (Some(ours), Some(go)) => ours == go,
                (None, None) => true,
                _ => false,
            };
            (!agree).then(|| format!("value {}\n  Go:   {go}\n  ours: {ours}", shown(value)))
        })
        .collect()
}

#[test]
fn annotations_are_read_as_go_reads_them() {
    let reader = go_reader();
    let per_seed = std::env::var("TAINTGUARD_GO_VALUES")
        .map(|n| n.parse().expect("TAINTGUARD_GO_VALUES is a number"))
        .unwrap_or(VALUES_PER_SEED);
    let mut batches = vec![("the fuzz corpus".to_owned(), corpus())];
    for seed in seeds() {
        let mut rng = Rng(seed);
        let values = (0..per_seed).map(|_| annotation(&mut rng)).collect();
        batches.push((format!("seed {seed}"), values));
    }
    let mut found = Vec::new();
    let mut compared = 0;
    for (source, values) in &batches {
        compared += values.len();
        let differences = differences(values, &go(&reader, values));
        found.extend(differences.into_iter().map(|d| format!("{source}: {d}")));
    }
    assert!(compared > 1000, "only {compared} values compared");
    assert!(
        found.is_empty(),
        "{} of {compared} values read differently from Go:\n{}",
        found.len(),
        found[..found.len().min(20)].join("\n")
    );
}
