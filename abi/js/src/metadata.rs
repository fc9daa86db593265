//! The few facts the package reports about a policy, read from its Kubewarden `metadata.yml`
//! (embedded at compile time) so that the npm package and the OCI artifact never disagree.
//!
//! Only top-level `mutating:` and single-line annotation values are read, which is all these
//! files use; a full YAML parser would double the module for nothing.

/// The value of `key:` at any indentation, unquoted.
pub fn field<'m>(metadata: &'m str, key: &str) -> Option<&'m str> {
    metadata.lines().find_map(|line| {
        let rest = line.trim_start().strip_prefix(key)?.strip_prefix(':')?;
        let value = rest.trim();
        let unquoted = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value);
        Some(unquoted)
    })
}

pub fn description(metadata: &str) -> &str {
    field(metadata, "io.kubewarden.policy.description").unwrap_or("")
}

pub fn mutating(metadata: &str) -> bool {
    field(metadata, "mutating") == Some("true")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields_at_any_indentation_and_unquotes() {
        let text = "mutating: true\nannotations:\n  io.kubewarden.policy.description: \"Keeps: taints\"\n  a: 'b'\n";
        let cases = [
            ("mutating", Some("true")),
            ("io.kubewarden.policy.description", Some("Keeps: taints")),
            ("a", Some("b")),
            ("annotations", Some("")),
            ("missing", None),
            // A key that is only a prefix of another does not match it.
            ("io.kubewarden.policy", None),
        ];
        for (key, want) in cases {
            assert_eq!(field(text, key), want, "{key}");
        }
        assert!(mutating(text));
        assert!(!mutating("mutating: false"));
    }
}
