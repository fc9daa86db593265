//! The seal over the records (docs/records.md, "Sealed records"): a copy of the records the
//! policy accepted, with an HMAC-SHA256 over the node's name and that copy, kept in an annotation
//! of its own. A record that differs from the sealed copy was written where the policy did not
//! judge it (through `nodes/status` while the guard was skipped, or through `nodes` while the
//! policy server was down): the copy counts, and the policy's patch puts it back. A seal that does
//! not verify, or none where `unsealed: refuse`, leaves no record counting.
//!
//! Reading happens once per judged request, after the short cut for writes that change nothing
//! judged; a policy whose `recordSeal` has no key never gets here.

use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use taintguard::json::{members, write_str, JsonStr};

use super::judging::{Gathered, Judging};
use super::node::NodeView;
use super::settings::{RecordSeal, Settings, Unsealed};

/// The seal's format version, in its text and in what its MAC covers.
const VERSION: u32 = 1;

/// How many bytes of the HMAC the seal keeps: 128 bits, as RFC 2104 allows and a forger cannot
/// guess.
const MAC_BYTES: usize = 16;

/// A seal as the annotation holds it: `{"v":1,"key":ID,"mac":MAC,"records":{KEY:VALUE,...}}`.
/// `records` names every record annotation the settings named when it was written, with its
/// value or `null` where the Node had none, so that one the settings named later is read as
/// unsealed rather than as forged. In key order, so the same records always write the same text.
/// Read and written with the request's own JSON reader and writer rather than serde's derive
/// (benchmarks/cost.md, "The record seal").
struct SealText<'t> {
    v: &'t str,
    key: JsonStr<'t>,
    mac: JsonStr<'t>,
    records: Records,
}

impl<'t> SealText<'t> {
    /// The seal in `text`, or why it is none.
    fn read(text: &'t str) -> Result<SealText<'t>, String> {
        let (mut v, mut key, mut mac, mut records) = (None, None, None, None);
        for (name, value) in members(text).map_err(|e| e.to_string())? {
            let string = || JsonStr::read(value).map_err(|e| format!("{}: {e}", name.as_str()));
            match name.as_str() {
                "v" => v = Some(value),
                "key" => key = Some(string()?),
                "mac" => mac = Some(string()?),
                "records" => records = Some(record_map(value)?),
                other => return Err(format!("unknown member {other:?}")),
            }
        }
        match (v, key, mac, records) {
            (Some(v), Some(key), Some(mac), Some(records)) => Ok(SealText {
                v,
                key,
                mac,
                records,
            }),
            _ => Err("it lacks one of v, key, mac and records".to_owned()),
        }
    }
}

/// The records of a seal: an object of strings and `null`s.
fn record_map(text: &str) -> Result<Records, String> {
    let mut records = Records::default();
    for (key, value) in members(text).map_err(|e| format!("records: {e}"))? {
        let value = match value {
            "null" => None,
            value => Some(
                JsonStr::read(value)
                    .map_err(|e| format!("records.{}: {e}", key.as_str()))?
                    .0
                    .into_owned(),
            ),
        };
        records.insert(key.as_str(), value);
    }
    Ok(records)
}

/// The record annotations a seal covers, each once and in key order, with the value the Node
/// had (`None`: none). A sorted list kept by binary search rather than a `BTreeMap` or a sort:
/// a seal covers a handful, and either would link code of its own (benchmarks/cost.md, "The
/// record seal").
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Records(Vec<(String, Option<String>)>);

impl Records {
    /// Covers annotation `key` with `value`, in its place.
    pub(crate) fn insert(&mut self, key: &str, value: Option<String>) {
        match self.0.binary_search_by(|(k, _)| k.as_str().cmp(key)) {
            Ok(i) => self.0[i].1 = value,
            Err(i) => self.0.insert(i, (key.to_owned(), value)),
        }
    }

    /// What the seal says of annotation `key`: `None` when it does not cover it, else its value.
    pub(crate) fn get(&self, key: &str) -> Option<Option<&String>> {
        let found = self.0.binary_search_by(|(k, _)| k.as_str().cmp(key));
        found.ok().map(|i| self.0[i].1.as_ref())
    }

    /// Whether no covered annotation has a value.
    fn none_present(&self) -> bool {
        self.0.iter().all(|(_, v)| v.is_none())
    }
}

/// What the stored seal says of the stored records.
pub(crate) enum Stored {
    /// No seal: each record counts as `unsealed` says.
    Unsealed,
    /// The records the policy last accepted, of the annotations the seal covers.
    Sealed(Records),
    /// No record counts, for this reason.
    Refused(String),
}

/// The HMAC over `node` and `records` under `secret`, before it is finished: the version, the
/// node's name, how many annotations the seal covers, and each with its value or none; every
/// text length-prefixed and each value tagged present or not, so no two inputs share a text.
fn hmac(secret: &[u8], node: &str, records: &Records) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256>>::new_from_slice(secret).expect("HMAC takes a key of any length");
    let length = |n: usize| (n as u64).to_be_bytes();
    mac.update(&VERSION.to_be_bytes());
    mac.update(&length(node.len()));
    mac.update(node.as_bytes());
    mac.update(&length(records.0.len()));
    for (key, value) in &records.0 {
        mac.update(&length(key.len()));
        mac.update(key.as_bytes());
        match value {
            Some(value) => {
                mac.update(&[1]);
                mac.update(&length(value.len()));
                mac.update(value.as_bytes());
            }
            None => mac.update(&[0]),
        }
    }
    mac
}

/// The MAC a seal carries: the HMAC's first [`MAC_BYTES`], base64url.
fn mac(secret: &[u8], node: &str, records: &Records) -> String {
    let tag = hmac(secret, node, records).finalize().into_bytes();
    BASE64URL.encode(&tag[..MAC_BYTES])
}

/// Whether `carried` is the MAC over `node` and `records` under `secret`: exactly
/// [`MAC_BYTES`], compared in constant time, so that how long a refusal takes tells a forger
/// nothing about how much of a guess was right.
fn verifies(secret: &[u8], node: &str, records: &Records, carried: &str) -> bool {
    match BASE64URL.decode(carried) {
        Ok(tag) if tag.len() == MAC_BYTES => hmac(secret, node, records)
            .verify_truncated_left(&tag)
            .is_ok(),
        _ => false,
    }
}

const BASE64URL: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// The seal's text over `records` on `node`, under the first key.
pub(crate) fn write(seal: &RecordSeal, node: &str, records: &Records) -> String {
    let key = &seal.keys[0];
    let mac = mac(key.secret.bytes(), node, records);
    let mut out = format!("{{\"v\":{VERSION},\"key\":");
    write_str(&mut out, key.id.as_str());
    out.push_str(",\"mac\":");
    write_str(&mut out, &mac);
    out.push_str(",\"records\":{");
    for (i, (k, v)) in records.0.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str(&mut out, k);
        out.push(':');
        match v {
            Some(v) => write_str(&mut out, v),
            None => out.push_str("null"),
        }
    }
    out.push_str("}}");
    out
}

/// What the seal `text` stored on `node` says, under `seal`'s keys.
pub(crate) fn read(seal: &RecordSeal, node: &str, text: Option<&str>) -> Stored {
    let Some(text) = text else {
        return Stored::Unsealed;
    };
    let parsed = match SealText::read(text) {
        Ok(parsed) => parsed,
        Err(e) => return Stored::Refused(format!("the seal is not one: {e}")),
    };
    if parsed.v != VERSION.to_string() {
        return Stored::Refused(format!(
            "the seal is of version {}, not {VERSION}",
            parsed.v
        ));
    }
    let named = parsed.key.as_str();
    let Some(key) = seal.keys.iter().find(|k| k.id.as_str() == named) else {
        return Stored::Refused(format!(
            "the seal names key {named:?}, which recordSeal.keys does not hold"
        ));
    };
    if !verifies(
        key.secret.bytes(),
        node,
        &parsed.records,
        parsed.mac.as_str(),
    ) {
        return Stored::Refused(format!(
            "the seal does not verify under key {named:?}: it was not written by this policy for \
             node {node}"
        ));
    }
    Stored::Sealed(parsed.records)
}

/// Why a record no seal covers counts for nothing under `unsealed: refuse`.
fn unsealed_refused(seal: &RecordSeal, stored: &Stored) -> String {
    let annotation = seal.annotation.as_str();
    match stored {
        Stored::Unsealed => {
            format!("the node carries no seal ({annotation}) and recordSeal.unsealed is \"refuse\"")
        }
        _ => format!(
            "the seal ({annotation}) does not cover it, the settings having named it since, and \
             recordSeal.unsealed is \"refuse\""
        ),
    }
}

/// A stored record the seal does not vouch for, and what counts in its place.
pub(crate) struct Unvouched {
    /// The record's annotation.
    pub key: String,
    /// What the node stores.
    pub stored: Option<String>,
    /// What counts: the sealed value, or none.
    pub counts: Option<String>,
    /// Why the stored value does not count.
    pub why: String,
}

/// The stored records on `view` that the seal does not vouch for; none without a seal setting.
///
/// # Errors
///
/// An annotation the view cannot read.
pub(crate) fn unvouched(
    view: &NodeView<'_>,
    settings: &Settings,
    node: &str,
) -> Result<Vec<Unvouched>, String> {
    let Some(seal) = settings.record_seal.on() else {
        return Ok(Vec::new());
    };
    let stored_seal = view.annotation(seal.annotation.as_str())?;
    let said = read(seal, node, stored_seal.as_deref());
    let mut found = Vec::new();
    for key in settings.records() {
        let sealed = match &said {
            Stored::Sealed(records) => records.get(key),
            _ => None,
        };
        let (counts, why) = match (sealed, &said) {
            (Some(value), _) => (
                value.cloned(),
                "it differs from the sealed copy, so a write the policy did not judge changed it"
                    .to_owned(),
            ),
            (None, Stored::Refused(why)) => (None, why.clone()),
            // No seal, or one written before the settings named this record: as `unsealed` says.
            (None, _) => match seal.unsealed {
                Unsealed::Count => continue,
                Unsealed::Refuse => (None, unsealed_refused(seal, &said)),
            },
        };
        let stored = view.annotation(key)?;
        if stored != counts {
            found.push(Unvouched {
                key: key.to_owned(),
                stored,
                counts,
                why,
            });
        }
    }
    Ok(found)
}

/// What reading the records through the seal gathers, for every judgement of the request: the
/// edits that put back what counts, and a warning and an audit entry naming each record.
#[derive(Default)]
pub(crate) struct Repairs {
    edits: Vec<(String, Option<String>)>,
    warnings: Vec<String>,
    audit: Vec<String>,
}

impl Repairs {
    /// A judgement's start: what the seal put back, before any step.
    pub(crate) fn seed<'f>(&self) -> Gathered<'f> {
        let mut gathered = Gathered {
            annotations: self.edits.clone(),
            warnings: self.warnings.clone(),
            ..Gathered::default()
        };
        if !self.audit.is_empty() {
            let audit = ("unvouched-records".to_owned(), self.audit.join("; "));
            gathered.audit.push(audit);
        }
        gathered
    }
}

impl Judging<'_> {
    /// Reads the stored records through the seal: a record it does not vouch for counts as the
    /// sealed copy (or as none), in the stored Node and, where the request left it as stored, in
    /// the written one, whose patch then puts back what counts. A record the request itself
    /// changes is judged as its change of what counts.
    ///
    /// # Errors
    ///
    /// An annotation the views cannot read.
    pub(super) fn read_through_seal(&mut self) -> Result<(), String> {
        let Some(old) = &mut self.old else {
            return Ok(());
        };
        for found in unvouched(old, self.settings, &self.node_name)? {
            let Unvouched {
                key,
                stored,
                counts,
                why,
            } = found;
            old.count_as(&key, counts.clone());
            if self.new.stored_annotation(&key)? == stored {
                self.new.count_as(&key, counts.clone());
                self.repairs.edits.push((key.clone(), counts.clone()));
            }
            let answer = match &counts {
                Some(_) => "the sealed copy counts, and the patch puts it back",
                None => "it counts as no record, and the patch removes it",
            };
            self.repairs.warnings.push(format!(
                "the record {key} on node {} does not count: {why}; {answer}",
                self.node_name
            ));
            let stored = stored.as_deref().unwrap_or("(none)");
            self.repairs.audit.push(format!("{key}={stored:?}: {why}"));
        }
        Ok(())
    }

    /// Seals the records this verdict stores, where the request does not carry that seal
    /// already: the last step, once every other has edited the records.
    ///
    /// # Errors
    ///
    /// An annotation the views cannot read.
    pub(super) fn seal(&self, gathered: &mut Gathered<'_>) -> Result<(), String> {
        let Some(seal) = self.settings.record_seal.on() else {
            return Ok(());
        };
        let mut records = Records::default();
        for key in self.settings.records() {
            let edited = gathered.annotations.iter().rev().find(|(k, _)| k == key);
            let value = match edited {
                Some((_, value)) => value.clone(),
                None => self.new.annotation(key)?,
            };
            records.insert(key, value);
        }
        let key = seal.annotation.as_str();
        let written = self.new.stored_annotation(key)?;
        if records.none_present() && written.is_none() {
            return Ok(());
        }
        let text = write(seal, &self.node_name, &records);
        if written.as_deref() != Some(text.as_str()) {
            gathered.annotations.push((key.to_owned(), Some(text)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taintguard::settings::read as read_settings;

    fn seal(keys: &str, unsealed: &str) -> RecordSeal {
        let settings: Settings = read_settings(&format!(
            r#"{{"recordSeal": {{"keys": {keys}, "unsealed": "{unsealed}"}}}}"#
        ))
        .unwrap();
        settings.record_seal
    }

    const K1: &str = r#"{"id": "k1", "secret": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}"#;
    const K2: &str = r#"{"id": "k2", "secret": "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA="}"#;

    /// The records `pairs` give, a `None` value covering an annotation the Node lacks.
    fn records(pairs: &[(&str, Option<&str>)]) -> Records {
        let mut records = Records::default();
        for (k, v) in pairs {
            records.insert(k, v.map(str::to_owned));
        }
        records
    }

    /// Each way a stored seal can be read, and what it makes of the records.
    #[test]
    fn a_seal_vouches_only_for_what_its_key_wrote_for_its_node() {
        let owners = records(&[
            ("taintguard.io/taint-owners", Some("a")),
            ("talos.dev/owned-taints", None),
        ]);
        let k1 = seal(&format!("[{K1}]"), "count");
        let rotated = seal(&format!("[{K2}, {K1}]"), "count");
        let only_k2 = seal(&format!("[{K2}]"), "refuse");
        let written = write(&k1, "n1", &owners);
        // An annotation more or less covered than the key sealed.
        let more_covered = written.replace(r#""records":{"#, r#""records":{"example.com/x":null,"#);
        let fewer_covered = written.replace(r#","talos.dev/owned-taints":null"#, "");
        let tampered = written.replace(r#""a""#, r#""b""#);
        // The MAC cut to its first byte: a left-truncated check would take it.
        let mac_at = written.find(r#""mac":""#).unwrap() + 7;
        let short = format!("{}{}", &written[..mac_at + 2], &written[mac_at + 22..]);
        // (name, settings, node, stored seal, the owner record it vouches for or why not)
        type Case<'c> = (
            &'c str,
            &'c RecordSeal,
            &'c str,
            Option<&'c str>,
            Result<&'c str, &'c str>,
        );
        let cases: &[Case<'_>] = &[
            ("its own seal", &k1, "n1", Some(&written), Ok("a")),
            (
                "an older key still verifies",
                &rotated,
                "n1",
                Some(&written),
                Ok("a"),
            ),
            (
                "another node's seal",
                &k1,
                "n2",
                Some(&written),
                Err("not written by this policy for node n2"),
            ),
            (
                "a changed copy",
                &k1,
                "n1",
                Some(&tampered),
                Err("does not verify under key \"k1\""),
            ),
            (
                "a MAC cut short",
                &k1,
                "n1",
                Some(&short),
                Err("does not verify under key \"k1\""),
            ),
            (
                "a key no longer held",
                &only_k2,
                "n1",
                Some(&written),
                Err("key \"k1\", which recordSeal.keys does not hold"),
            ),
            (
                "not JSON",
                &k1,
                "n1",
                Some("reseal"),
                Err("the seal is not one"),
            ),
            (
                "an annotation more covered than sealed",
                &k1,
                "n1",
                Some(&more_covered),
                Err("does not verify under key \"k1\""),
            ),
            (
                "an annotation less covered than sealed",
                &k1,
                "n1",
                Some(&fewer_covered),
                Err("does not verify under key \"k1\""),
            ),
        ];
        for (name, seal, node, text, expected) in cases {
            let got = match read(seal, node, *text) {
                Stored::Sealed(records) => Ok(records
                    .get("taintguard.io/taint-owners")
                    .flatten()
                    .unwrap()
                    .clone()),
                Stored::Refused(why) => Err(why),
                Stored::Unsealed => Err("unsealed".to_owned()),
            };
            match (expected, &got) {
                (Ok(value), Ok(got)) => assert_eq!(value, got, "{name}"),
                (Err(part), Err(why)) => assert!(why.contains(part), "{name}: {why}"),
                _ => panic!("{name}: expected {expected:?}, got {got:?}"),
            }
        }
        assert!(matches!(read(&only_k2, "n1", None), Stored::Unsealed));
        // Rotation: the first key seals.
        assert!(write(&rotated, "n1", &owners).contains(r#""key":"k2""#));
    }
}
