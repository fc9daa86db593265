//! Kubewarden's policy-server on loopback, serving plain HTTP: found as the end-to-end suite
//! finds it, started with a `policies.yml`, waited for, and stopped (by its own process) however
//! the run ends.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

/// `POLICY_SERVER`, else `policy-server` on `PATH`: the rule of `e2e/control-plane/src/binaries.rs`
/// (docs/e2e.md says where the binary comes from).
pub fn find() -> Result<PathBuf, String> {
    if let Some(value) = std::env::var_os("POLICY_SERVER").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(value);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("POLICY_SERVER={} is not a file", path.display()))
        };
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("policy-server"))
                .find(|path| path.is_file())
        })
        .ok_or_else(|| "policy-server not found: set POLICY_SERVER or put it on PATH".to_owned())
}

/// One entry of `policies.yml`: a policy id and the module it runs with its settings.
pub struct Entry {
    pub id: String,
    pub module: PathBuf,
    pub settings: Value,
    /// Whether it may read Namespaces (`contextAwareResources`, and every host capability, as
    /// Kubewarden's controller writes a context-aware policy's entry).
    pub reads_namespaces: bool,
}

/// policy-server's `policies.yml` (JSON is YAML), in the format of `e2e/src/policies.rs`. Every
/// module may mutate: the floors never do, and the same configuration for all keeps the host's
/// work per request alike.
pub(super) fn policies_yml(entries: &[Entry]) -> Result<String, String> {
    let mut map = Map::new();
    for e in entries {
        // policy-server takes only absolute `file://` paths.
        let path =
            fs::canonicalize(&e.module).map_err(|err| format!("{}: {err}", e.module.display()))?;
        let mut entry = serde_json::json!({"module": format!("file://{}", path.display()),
                                           "settings": e.settings, "allowedToMutate": true,
                                           "policyMode": "protect"});
        if e.reads_namespaces {
            entry["contextAwareResources"] =
                serde_json::json!([{"apiVersion": "v1", "kind": "Namespace"}]);
            entry["hostCapabilities"] = serde_json::json!(["*"]);
        }
        map.insert(e.id.clone(), entry);
    }
    Ok(Value::Object(map).to_string())
}

pub struct PolicyServer {
    child: Child,
    pub port: u16,
    /// What `policy-server --version` says, and the arguments it runs with.
    pub version: String,
    /// Its arguments as the report shows them: ports and the run's folder as placeholders.
    pub args: Vec<String>,
    /// From its start to its readiness probe answering.
    pub started_in: Duration,
    log: PathBuf,
}

fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

/// `binary --version`'s first line.
pub(super) fn version(binary: &Path) -> Result<String, String> {
    let out = Command::new(binary)
        .arg("--version")
        .output()
        .map_err(|e| format!("{}: {e}", binary.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text.lines().next().unwrap_or_default().trim().to_owned())
}

/// policy-server's arguments, with `file` naming a file of the run's folder. Defaults otherwise
/// (workers, timeout protection): what users run. No certificate flags: plain HTTP on loopback, so
/// the figures hold no TLS. A cluster only where a case reads one ([`PolicyServer::start`]'s
/// `kubeconfig`). Log level warn:
/// at info it writes a line per request, a cost of the host alike for every module that would
/// only pull the ratios towards 1.
fn arguments(file: &dyn Fn(&str) -> String, port: &str, readiness: &str) -> Vec<String> {
    vec![
        format!("--policies={}", file("policies.yml")),
        "--addr=127.0.0.1".to_owned(),
        format!("--port={port}"),
        format!("--readiness-probe-port={readiness}"),
        format!("--policies-download-dir={}", file("downloads")),
        format!("--sigstore-cache-dir={}", file("sigstore")),
        "--ignore-kubernetes-connection-failure".to_owned(),
        "--log-level=warn".to_owned(),
        "--log-no-color".to_owned(),
    ]
}

/// How policy-server is run: its binary, alone or under a wrapper.
#[derive(Clone, Copy)]
pub struct Launch<'a> {
    /// A command and its arguments, `binary` and its own arguments after them; empty for none.
    pub wrapper: &'a [&'a str],
    /// The policy-server binary.
    pub binary: &'a Path,
}

impl PolicyServer {
    /// Starts `binary` in `dir` (its `policies.yml`, downloads and log) serving `entries`, and
    /// waits until its readiness probe answers. It reaches the cluster `kubeconfig` names, if
    /// any.
    pub fn start(
        binary: &Path,
        dir: &Path,
        entries: &[Entry],
        kubeconfig: Option<&Path>,
    ) -> Result<PolicyServer, String> {
        let launch = Launch {
            wrapper: &[],
            binary,
        };
        PolicyServer::start_under(launch, dir, entries, kubeconfig)
    }

    /// [`PolicyServer::start`], run by `launch.wrapper`: `valgrind` for `bench --instructions`.
    pub fn start_under(
        launch: Launch<'_>,
        dir: &Path,
        entries: &[Entry],
        kubeconfig: Option<&Path>,
    ) -> Result<PolicyServer, String> {
        let Launch { wrapper, binary } = launch;
        fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let file = |name: &str| dir.join(name).display().to_string();
        fs::write(dir.join("policies.yml"), policies_yml(entries)?)
            .map_err(|e| format!("{}: {e}", file("policies.yml")))?;
        let (port, readiness) = (free_port()?, free_port()?);
        let args = arguments(&file, &port.to_string(), &readiness.to_string());
        let log = dir.join("policy-server.log");
        let out = fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let version = version(binary)?;
        let mut command = match wrapper.split_first() {
            Some((program, wrapper_args)) => {
                let mut command = Command::new(program);
                command.args(wrapper_args).arg(binary);
                command
            }
            None => Command::new(binary),
        };
        let started = Instant::now();
        let child = command
            .args(&args)
            // No cluster to reach but the one given, not even one a kubeconfig in the
            // environment names.
            .env(
                "KUBECONFIG",
                kubeconfig.map_or_else(|| dir.join("no-kubeconfig"), Path::to_path_buf),
            )
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| {
                format!(
                    "{}: {e}",
                    wrapper.first().map_or(binary, Path::new).display()
                )
            })?;
        let mut server = PolicyServer {
            child,
            port,
            version,
            args: arguments(&|name| format!("{}/{name}", super::RUN_DIR), "PORT", "PORT"),
            started_in: Duration::ZERO,
            log,
        };
        server.wait_ready(readiness)?;
        server.started_in = started.elapsed();
        Ok(server)
    }

    fn wait_ready(&mut self, readiness: u16) -> Result<(), String> {
        let url = format!("http://127.0.0.1:{readiness}/readiness");
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(300) {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "policy-server exited ({status}): {}",
                    self.log_tail()
                ));
            }
            let probe = Command::new("curl")
                .args(["-sf", "-o", "/dev/null", &url])
                .status();
            if probe.is_ok_and(|s| s.success()) {
                return Ok(());
            }
            // Often enough that the start-up time (`felt.rs`) is read to a few hundredths.
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!(
            "policy-server not ready after 300 s: {}",
            self.log_tail()
        ))
    }

    /// The last lines of its log, for an error message.
    pub fn log_tail(&self) -> String {
        let log = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(10)..].join("\n");
        format!("{} ends with:\n{tail}", self.log.display())
    }

    /// The CPU time the server has used so far, user and kernel, all its threads: what a request
    /// costs it, its sockets' system calls and its instances' page faults included, and not the
    /// time other processes take (though they slow each of its seconds, so it is no steadier
    /// than req/s on a shared machine). From `/proc/<pid>/stat` (`utime`, `stime`), in the clock
    /// ticks Linux counts there (`USER_HZ`, 100 a second).
    pub fn cpu_seconds(&self) -> Result<f64, String> {
        let path = format!("/proc/{}/stat", self.pid());
        let stat = fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        cpu_seconds(&stat).ok_or_else(|| format!("{path}: no utime and stime in {stat:?}"))
    }

    /// Starts a new peak of resident memory: Linux's `VmHWM` is reset by writing 5 to
    /// `/proc/<pid>/clear_refs`.
    pub fn reset_peak_memory(&self) -> Result<(), String> {
        let path = format!("/proc/{}/clear_refs", self.pid());
        fs::write(&path, "5").map_err(|e| format!("{path}: {e}"))
    }

    /// The peak resident memory since the last reset (`VmHWM` of `/proc/<pid>/status`), in KiB:
    /// the server, every module loaded, and the instances of the requests it served.
    pub fn peak_memory_kib(&self) -> Result<f64, String> {
        let path = format!("/proc/{}/status", self.pid());
        let status = fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .ok_or_else(|| format!("{path}: no VmHWM"))
    }

    /// The process id (of the wrapper, which runs the server in its own process).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn url(&self, id: &str) -> String {
        format!("http://127.0.0.1:{}/validate/{id}", self.port)
    }
}

impl Drop for PolicyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `utime + stime` of a `/proc/<pid>/stat` line, in seconds. The command name (field 2) is in
/// parentheses and may hold spaces, so fields are counted after its closing parenthesis: the
/// state is field 3, `utime` and `stime` fields 14 and 15.
fn cpu_seconds(stat: &str) -> Option<f64> {
    const USER_HZ: f64 = 100.0;
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) as f64 / USER_HZ)
}

#[cfg(test)]
mod tests {
    use super::cpu_seconds;

    #[test]
    fn cpu_time_is_read_after_the_command_name() {
        let stat = "4242 (policy server) S 1 4242 4242 0 -1 4194560 9000 0 0 0 250 130 0 0 20 0 \
                    9 0 100 0 0";
        assert_eq!(cpu_seconds(stat), Some(3.8));
        assert_eq!(cpu_seconds("4242 (policy-server) S 1"), None);
    }
}
