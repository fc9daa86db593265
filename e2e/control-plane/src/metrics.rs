//! The API server's own metrics (`/metrics`, Prometheus' text format), read as the end-to-end
//! suite and the benchmarks read them: a request counter summed over its series, and a
//! histogram's buckets, sum and count.

/// The sum of the `apiserver_request_total` series of `metrics` (Prometheus' text format) for
/// `verb` on the core group's `resource` answered with 200, on the resource itself (no
/// subresource).
pub fn requests_in_metrics(metrics: &str, verb: &str, resource: &str) -> f64 {
    let wanted = [
        ("code", "200"),
        ("group", ""),
        ("subresource", ""),
        ("resource", resource),
        ("verb", verb),
    ];
    metrics
        .lines()
        .filter_map(sample)
        .filter(|(name, labels, _)| {
            *name == "apiserver_request_total"
                && wanted
                    .iter()
                    .all(|(key, value)| label(labels, key) == Some(value))
        })
        .map(|(_, _, value)| value)
        .sum()
}

/// A histogram of the API server's, summed over the series read (a webhook's calls, a
/// resource's requests), in seconds.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Histogram {
    /// (upper bound in seconds, calls at or under it), cumulative, the bounds ascending.
    pub buckets: Vec<(f64, f64)>,
    /// The sum of the observations, in seconds.
    pub sum: f64,
    /// How many observations.
    pub count: f64,
}

impl Histogram {
    /// The mean in milliseconds.
    pub fn mean_ms(&self) -> f64 {
        if self.count == 0.0 {
            0.0
        } else {
            self.sum / self.count * 1000.0
        }
    }

    /// The least bound all calls are at or under, in seconds.
    pub fn slowest_bound(&self) -> f64 {
        (self.buckets.iter())
            .find(|(_, calls)| *calls >= self.count)
            .map_or(f64::INFINITY, |(bound, _)| *bound)
    }

    /// What was counted between `before` and `self`: a point's own figures from the
    /// cumulative ones read before and after it.
    pub fn since(&self, before: &Histogram) -> Histogram {
        let earlier = |bound: f64| {
            (before.buckets.iter())
                .find(|(b, _)| *b == bound)
                .map_or(0.0, |(_, calls)| *calls)
        };
        Histogram {
            buckets: (self.buckets.iter())
                .map(|(bound, calls)| (*bound, calls - earlier(*bound)))
                .collect(),
            sum: self.sum - before.sum,
            count: self.count - before.count,
        }
    }
}

/// The series of `metric` in Prometheus' text format `metrics` whose labels `keep` accepts,
/// summed into one histogram.
pub fn histogram(metrics: &str, metric: &str, keep: &dyn Fn(&str) -> bool) -> Histogram {
    let mut out = Histogram::default();
    for line in metrics.lines() {
        let Some((name, labels, value)) = sample(line) else {
            continue;
        };
        if !keep(labels) {
            continue;
        }
        match name.strip_prefix(metric) {
            Some("_sum") => out.sum += value,
            Some("_count") => out.count += value,
            Some("_bucket") => {
                let Some(bound) = label(labels, "le").and_then(bound) else {
                    continue;
                };
                match out.buckets.iter_mut().find(|(b, _)| *b == bound) {
                    Some((_, calls)) => *calls += value,
                    None => out.buckets.push((bound, value)),
                }
            }
            _ => {}
        }
    }
    out.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// A sample line's metric name, label block and value.
pub fn sample(line: &str) -> Option<(&str, &str, f64)> {
    let (name, rest) = line.split_once('{')?;
    let (labels, value) = rest.rsplit_once('}')?;
    Some((name, labels, value.trim().parse().ok()?))
}

/// The value of `key` in a label block (`a="1",b="2"`).
pub fn label<'a>(labels: &'a str, key: &str) -> Option<&'a str> {
    let start = labels
        .match_indices(&format!("{key}=\""))
        .find(|(i, _)| *i == 0 || labels.as_bytes()[i - 1] == b',')?
        .0
        + key.len()
        + 2;
    let len = labels[start..].find('"')?;
    Some(&labels[start..start + len])
}

/// A bucket's bound (`le`), `+Inf` included.
fn bound(le: &str) -> Option<f64> {
    if le == "+Inf" {
        Some(f64::INFINITY)
    } else {
        le.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::{histogram, label, requests_in_metrics, Histogram};

    #[test]
    fn request_counts_sum_the_matching_series() {
        let metrics = r#"# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",contentType="application/json",dry_run="",group="",resource="namespaces",scope="resource",subresource="",verb="GET",version="v1"} 12
apiserver_request_total{code="200",component="apiserver",contentType="application/vnd.kubernetes.protobuf",dry_run="",group="",resource="namespaces",scope="resource",subresource="",verb="GET",version="v1"} 3
apiserver_request_total{code="404",component="apiserver",contentType="application/json",dry_run="",group="",resource="namespaces",scope="resource",subresource="",verb="GET",version="v1"} 7
apiserver_request_total{code="200",component="apiserver",contentType="application/json",dry_run="",group="",resource="namespaces",scope="resource",subresource="status",verb="GET",version="v1"} 5
apiserver_request_total{code="200",component="apiserver",contentType="application/json",dry_run="",group="",resource="namespaces",scope="cluster",subresource="",verb="LIST",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",contentType="application/json",dry_run="",group="",resource="nodes",scope="resource",subresource="",verb="GET",version="v1"} 1e+06
apiserver_request_duration_seconds_count{code="200",group="",resource="namespaces",subresource="",verb="GET"} 99
"#;
        for (verb, resource, want) in [
            ("GET", "namespaces", 15.0),
            ("LIST", "namespaces", 2.0),
            ("GET", "nodes", 1e6),
            ("PATCH", "nodes", 0.0),
        ] {
            assert_eq!(
                requests_in_metrics(metrics, verb, resource),
                want,
                "{verb} {resource}"
            );
        }
    }

    const METRICS: &str = "\
# HELP apiserver_admission_webhook_admission_duration_seconds x
apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"a.nodes\",operation=\"UPDATE\",rejected=\"false\",type=\"admit\",le=\"0.005\"} 2
apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"a.nodes\",operation=\"UPDATE\",rejected=\"false\",type=\"admit\",le=\"0.025\"} 9
apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"a.nodes\",operation=\"UPDATE\",rejected=\"false\",type=\"admit\",le=\"+Inf\"} 10
apiserver_admission_webhook_admission_duration_seconds_sum{name=\"a.nodes\",operation=\"UPDATE\",rejected=\"false\",type=\"admit\"} 0.1
apiserver_admission_webhook_admission_duration_seconds_count{name=\"a.nodes\",operation=\"UPDATE\",rejected=\"false\",type=\"admit\"} 10
apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"a.nodes\",operation=\"UPDATE\",rejected=\"true\",type=\"admit\",le=\"0.005\"} 0
apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"a.nodes\",operation=\"UPDATE\",rejected=\"true\",type=\"admit\",le=\"0.025\"} 1
apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"a.nodes\",operation=\"UPDATE\",rejected=\"true\",type=\"admit\",le=\"+Inf\"} 1
apiserver_admission_webhook_admission_duration_seconds_sum{name=\"a.nodes\",operation=\"UPDATE\",rejected=\"true\",type=\"admit\"} 0.02
apiserver_admission_webhook_admission_duration_seconds_count{name=\"a.nodes\",operation=\"UPDATE\",rejected=\"true\",type=\"admit\"} 1
apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"ba.nodes\",operation=\"UPDATE\",rejected=\"false\",type=\"admit\",le=\"0.005\"} 7
apiserver_admission_webhook_admission_duration_seconds_count{name=\"ba.nodes\",operation=\"UPDATE\",rejected=\"false\",type=\"admit\"} 7
";

    /// Every series of one webhook is summed, rejected or not, and only its own: a name that
    /// ends with another's is not it.
    #[test]
    fn sums_one_webhooks_series() {
        let a = histogram(
            METRICS,
            "apiserver_admission_webhook_admission_duration_seconds",
            &|labels| label(labels, "name") == Some("a.nodes"),
        );
        assert_eq!(
            a.buckets,
            [(0.005, 2.0), (0.025, 10.0), (f64::INFINITY, 11.0)]
        );
        assert_eq!((a.count, (a.sum * 100.0).round()), (11.0, 12.0));
        assert_eq!(a.slowest_bound(), f64::INFINITY);
        let later = Histogram {
            buckets: vec![(0.005, 12.0), (0.025, 30.0), (f64::INFINITY, 31.0)],
            sum: 0.52,
            count: 31.0,
        };
        let since = later.since(&a);
        assert_eq!(
            since.buckets,
            [(0.005, 10.0), (0.025, 20.0), (f64::INFINITY, 20.0)]
        );
        assert_eq!(since.count, 20.0);
        assert_eq!(since.slowest_bound(), 0.025);
        assert_eq!((since.mean_ms() * 10.0).round(), 200.0);
    }

    #[test]
    fn reads_a_label_by_its_whole_key() {
        let labels = "rename=\"x\",name=\"a\",le=\"+Inf\"";
        let cases = [
            ("name", Some("a")),
            ("le", Some("+Inf")),
            ("ame", None),
            ("x", None),
        ];
        for (key, want) in cases {
            assert_eq!(label(labels, key), want, "{key}");
        }
    }
}
