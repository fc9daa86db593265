//! Registry references: the `REF_PREFIX` artifacts are pushed under, full references, and which
//! registries may be spoken to over plain HTTP.

use std::net::IpAddr;

use oci_client::Reference;

/// `registry[/path]` under which each artifact is pushed as `registry/path/<name>:<tag>`.
#[derive(Debug, Clone, PartialEq)]
pub struct Prefix {
    pub registry: String,
    pub path: String,
}

const SCHEME: &str = "registry://";

/// Parses a `REF_PREFIX` such as `ghcr.io/you/policies` or `127.0.0.1:5000`. The registry host
/// must be explicit: a bare `you/policies` would silently mean Docker Hub.
pub fn parse_prefix(input: &str) -> Result<Prefix, String> {
    let s = input
        .strip_prefix(SCHEME)
        .unwrap_or(input)
        .trim_end_matches('/');
    let (registry, path) = s.split_once('/').unwrap_or((s, ""));
    if !looks_like_registry(registry) {
        return Err(format!(
            "REF_PREFIX `{input}` does not start with a registry host; write it in full, e.g. \
             `ghcr.io/you/policies` or `docker.io/you`"
        ));
    }
    if path.contains([':', '@']) {
        return Err(format!(
            "REF_PREFIX `{input}` must not carry a tag or digest; give the tag as the TAG argument"
        ));
    }
    let prefix = Prefix {
        registry: registry.to_owned(),
        path: path.to_owned(),
    };
    // Let the OCI grammar judge the path: probe with a valid name and tag.
    prefix
        .reference("probe", "probe")
        .map_err(|e| format!("REF_PREFIX `{input}` is not a valid registry path: {e}"))?;
    Ok(prefix)
}

fn looks_like_registry(host: &str) -> bool {
    host.contains(['.', ':']) || host == "localhost" || host.starts_with('[')
}

impl Prefix {
    pub fn repository(&self, name: &str) -> String {
        if self.path.is_empty() {
            format!("{}/{name}", self.registry)
        } else {
            format!("{}/{}/{name}", self.registry, self.path)
        }
    }

    pub fn reference(&self, name: &str, tag: &str) -> Result<Reference, String> {
        parse_reference(&format!("{}:{tag}", self.repository(name)))
    }
}

/// The prefix an `io.kubewarden.policy.ociUrl` annotation implies: its parent path.
pub fn prefix_of_oci_url(oci_url: &str) -> Result<Prefix, String> {
    let s = oci_url.strip_prefix(SCHEME).unwrap_or(oci_url);
    let parent = s
        .rsplit_once('/')
        .map(|(parent, _)| parent)
        .ok_or_else(|| format!("ociUrl `{oci_url}` has no repository path"))?;
    parse_prefix(parent)
}

/// A full reference (`host/path:tag` or `host/path@sha256:…`, optionally `registry://`).
pub fn parse_reference(input: &str) -> Result<Reference, String> {
    let s = input.strip_prefix(SCHEME).unwrap_or(input);
    let host = s.split('/').next().unwrap_or_default();
    if !s.contains('/') || !looks_like_registry(host) {
        return Err(format!(
            "bad reference `{input}`: it must start with a registry host, e.g. \
             `ghcr.io/you/policies/name:tag`"
        ));
    }
    s.parse::<Reference>()
        .map_err(|e| format!("bad reference `{input}`: {e}"))
}

/// The immutable form of a reference: `registry/repository@digest`.
pub fn immutable(reference: &Reference, digest: &str) -> String {
    format!(
        "{}/{}@{digest}",
        reference.registry(),
        reference.repository()
    )
}

/// Whether `registry` (`host[:port]`) is on this machine: `localhost`, `127.0.0.0/8` or `[::1]`.
pub fn is_loopback(registry: &str) -> bool {
    let host = match registry.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => registry.rsplit_once(':').map_or(registry, |(host, port)| {
            if port.chars().all(|c| c.is_ascii_digit()) {
                host
            } else {
                registry
            }
        }),
    };
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Plain HTTP is used for loopback registries and, only when asked, for any registry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Transport {
    Https,
    HttpLoopback,
    HttpRequested,
}

pub fn transport(registry: &str, insecure: bool) -> Transport {
    if is_loopback(registry) {
        Transport::HttpLoopback
    } else if insecure {
        Transport::HttpRequested
    } else {
        Transport::Https
    }
}

/// A tag as the OCI distribution spec allows it.
pub fn validate_tag(tag: &str) -> Result<(), String> {
    let ok = !tag.is_empty()
        && tag.len() <= 128
        && !tag.starts_with(['.', '-'])
        && tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "bad TAG `{tag}`: up to 128 letters, digits, `_`, `.` and `-`, not starting with `.` or `-`"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes() {
        type Case = (
            &'static str,
            Result<(&'static str, &'static str), &'static str>,
        );
        let cases: [Case; 9] = [
            ("ghcr.io/you/policies", Ok(("ghcr.io", "you/policies"))),
            (
                "registry://ghcr.io/you/policies/",
                Ok(("ghcr.io", "you/policies")),
            ),
            ("127.0.0.1:5000", Ok(("127.0.0.1:5000", ""))),
            ("localhost/x", Ok(("localhost", "x"))),
            // The OCI reference grammar has no IPv6 literals; use `localhost` for [::1].
            ("[::1]:5000/a/b", Err("not a valid registry path")),
            ("you/policies", Err("does not start with a registry host")),
            ("ghcr.io/you/policies:v1", Err("must not carry a tag")),
            ("ghcr.io/you@sha256:00", Err("must not carry a tag")),
            ("ghcr.io/You/Policies", Err("not a valid registry path")),
        ];
        for (input, expected) in cases {
            match (parse_prefix(input), expected) {
                (Ok(p), Ok((registry, path))) => {
                    assert_eq!(
                        (p.registry.as_str(), p.path.as_str()),
                        (registry, path),
                        "{input}"
                    )
                }
                (Err(e), Err(fragment)) => assert!(e.contains(fragment), "{input}: {e}"),
                (got, want) => panic!("{input}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn references_built_from_a_prefix() {
        let prefix = parse_prefix("127.0.0.1:5000/taintguard").unwrap();
        let r = prefix.reference("taint-preservation", "v0.1.0").unwrap();
        assert_eq!(r.registry(), "127.0.0.1:5000");
        assert_eq!(r.repository(), "taintguard/taint-preservation");
        assert_eq!(r.tag(), Some("v0.1.0"));
        assert_eq!(
            immutable(&r, "sha256:ab"),
            "127.0.0.1:5000/taintguard/taint-preservation@sha256:ab"
        );
        let bare = parse_prefix("localhost:5000").unwrap();
        assert_eq!(bare.repository("p"), "localhost:5000/p");
        assert_eq!(
            prefix_of_oci_url("ghcr.io/taintguard/policies/taint-preservation").unwrap(),
            parse_prefix("ghcr.io/taintguard/policies").unwrap()
        );
    }

    #[test]
    fn full_references() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let ok = [
            format!("127.0.0.1:5000/x/y@{digest}"),
            "registry://ghcr.io/x/y:v1".to_owned(),
        ];
        for input in ok {
            assert!(parse_reference(&input).is_ok(), "{input}");
        }
        for input in ["y:v1", "x/y:v1", "ghcr.io/x/y@sha256:short"] {
            let err = parse_reference(input).unwrap_err();
            assert!(err.starts_with("bad reference"), "{input}: {err}");
        }
    }

    #[test]
    fn only_loopback_registries_get_plain_http_unasked() {
        let cases = [
            ("127.0.0.1:5000", false, Transport::HttpLoopback),
            ("127.3.2.1", false, Transport::HttpLoopback),
            ("localhost:5000", false, Transport::HttpLoopback),
            ("LOCALHOST", false, Transport::HttpLoopback),
            ("[::1]:5000", false, Transport::HttpLoopback),
            ("ghcr.io", false, Transport::Https),
            ("10.0.0.1:5000", false, Transport::Https),
            ("localhost.evil.example", false, Transport::Https),
            ("127.0.0.1.nip.io", false, Transport::Https),
            ("[::2]:5000", false, Transport::Https),
            ("registry.internal:5000", true, Transport::HttpRequested),
        ];
        for (registry, insecure, expected) in cases {
            assert_eq!(transport(registry, insecure), expected, "{registry}");
        }
    }

    #[test]
    fn tags() {
        for tag in ["v0.1.0", "latest", "1", "a_b-c.d"] {
            assert!(validate_tag(tag).is_ok(), "{tag}");
        }
        for tag in ["", "-x", ".x", "a/b", "a:b", &"x".repeat(129)] {
            assert!(validate_tag(tag).is_err(), "{tag}");
        }
    }
}
