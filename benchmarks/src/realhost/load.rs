//! One bounded load point: `wrk` for a fixed time with a fixed number of connections, sending
//! one body, read back as throughput and p99 latency.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

/// What one point measured.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    pub requests: f64,
    pub requests_per_second: f64,
    /// Microseconds.
    pub p99: f64,
}

/// How wrk loads a URL: with which script and its arguments, how hard and for how long.
#[derive(Clone, Copy)]
pub struct Load<'a> {
    /// The Lua script that sends the requests (`benchmarks/wrk/`).
    pub script: &'a Path,
    /// What the script's `init` is given, the body's file first.
    pub script_args: &'a [&'a OsStr],
    /// The connections kept open.
    pub connections: u32,
    /// How long the point lasts.
    pub seconds: u32,
}

/// `load`'s connections for its seconds against `url`, with one wrk thread: the load
/// generator takes at most one core, whichever module it measures.
pub fn run(url: &str, load: &Load<'_>) -> Result<Point, String> {
    let Load {
        script,
        script_args,
        connections,
        seconds,
    } = *load;
    let out = Command::new("wrk")
        .args(["-t1", &format!("-c{connections}"), &format!("-d{seconds}s")])
        .args(["--timeout", "10s", "-s"])
        .arg(script)
        .arg(url)
        .arg("--")
        .args(script_args)
        .output()
        .map_err(|e| format!("wrk: {e} (Debian package `wrk`)"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!(
            "wrk {url} failed ({}): {stdout}{stderr}",
            out.status
        ));
    }
    figures(&stdout).map_err(|e| format!("wrk {url}: {e}\n{stderr}"))
}

/// The point in wrk's output: the line `report.lua` prints when done (every wrk script loads it).
/// Any error (connection, timeout, non-2xx answer) voids it.
fn figures(stdout: &str) -> Result<Point, String> {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("taintguard-wrk "))
        .ok_or_else(|| format!("no figures in its output: {stdout}"))?;
    let field = |name: &str| -> Result<f64, String> {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("no {name} in `{line}`"))
    };
    let (requests, duration, errors) =
        (field("requests")?, field("duration_us")?, field("errors")?);
    if errors > 0.0 || requests < 1.0 || duration <= 0.0 {
        return Err(format!("{errors} errors in {requests} requests"));
    }
    Ok(Point {
        requests,
        requests_per_second: requests / (duration / 1e6),
        p99: field("p99_us")?,
    })
}

#[cfg(test)]
mod tests {
    use super::figures;

    #[test]
    fn reads_the_line_report_lua_prints() {
        let out = "Running 2s test @ http://127.0.0.1:1/validate/policy-0\n  1 threads and 8 \
                   connections\ntaintguard-wrk requests=5000 duration_us=2000000 p99_us=4100 \
                   errors=0\n";
        let point = figures(out).unwrap();
        assert_eq!(point.requests, 5000.0);
        assert_eq!(point.requests_per_second, 2500.0);
        assert_eq!(point.p99, 4100.0);
    }

    #[test]
    fn errors_or_no_figures_void_the_point() {
        let errors = "taintguard-wrk requests=5000 duration_us=2000000 p99_us=4100 errors=3\n";
        assert!(figures(errors).unwrap_err().contains("3 errors"));
        assert!(figures("Running 2s test\n").is_err());
        let nothing = "taintguard-wrk requests=0 duration_us=2000000 p99_us=0 errors=0\n";
        assert!(figures(nothing).is_err());
    }
}
