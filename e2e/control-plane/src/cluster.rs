//! A control plane and a policy-server on loopback: free ports, a temporary folder for data,
//! certificates and logs, every process stopped and the folder deleted however the run ends
//! (docs/e2e.md).

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::binaries::Binaries;

/// What a signal handler must clean up: the processes started and the run's folder.
static LIVE: Mutex<(Vec<u32>, Option<PathBuf>)> = Mutex::new((Vec::new(), None));

/// Stops every process of the run and deletes its folder on SIGINT and SIGTERM, as `Drop` does on
/// a normal exit or a panic.
pub fn clean_up_on_signals() {
    let _ = ctrlc::set_handler(|| {
        let (pids, dir) = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|e| e.into_inner()));
        for pid in pids.iter().rev() {
            kill(*pid);
        }
        sleep(Duration::from_secs(1));
        if let Some(dir) = dir {
            let _ = fs::remove_dir_all(dir);
        }
        eprintln!("control plane: interrupted; processes stopped, run folder deleted");
        std::process::exit(130);
    });
}

/// Sends SIGTERM to `pid`, quietly: it may have exited already.
fn kill(pid: u32) {
    let _ = Command::new("kill")
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status();
}

/// A TCP port of 127.0.0.1 that is free now (another process may take it before it is used).
///
/// # Errors
///
/// No port could be bound.
pub fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

/// Runs a setup command; its output goes to the error when it fails.
fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{what}: cannot start {:?}: {e}", cmd.get_program()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Polls `ready` every 200 ms until it holds or `limit` passes.
pub fn wait_for(
    what: &str,
    limit: Duration,
    mut ready: impl FnMut() -> bool,
) -> Result<(), String> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if ready() {
            return Ok(());
        }
        sleep(Duration::from_millis(200));
    }
    Err(format!("{what} not ready after {} s", limit.as_secs()))
}

/// A process of the run, logging into the run's folder.
struct Process {
    name: &'static str,
    child: Child,
}

/// A running control plane and, once started, policy-server. Dropped, it stops its processes
/// and deletes its folder (kept when `TAINTGUARD_E2E_KEEP` is set).
pub struct Cluster {
    /// The run's temporary folder: data, certificates, configuration and logs.
    pub dir: PathBuf,
    processes: Vec<Process>,
    etcd_port: u16,
    /// The API server's HTTPS port on 127.0.0.1.
    pub api_port: u16,
    /// The admin's bearer token (group `system:masters`).
    pub token: String,
    /// A kubeconfig that reaches the API server as the admin.
    pub kubeconfig: PathBuf,
    /// The API server's audit log.
    pub audit_log: PathBuf,
    /// The CA that signed policy-server's serving certificate (the webhooks' `caBundle`).
    pub webhook_ca: PathBuf,
    /// policy-server's HTTPS port on 127.0.0.1, which the webhooks call.
    pub policy_server_port: u16,
    readiness_port: u16,
    policy_server_args: Vec<String>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // kube-apiserver before etcd: with etcd gone first it takes a minute to exit.
        while let Some(mut p) = self.processes.pop() {
            kill(p.child.id());
            let _ = p.child.wait();
        }
        if std::env::var_os("TAINTGUARD_E2E_KEEP").is_none() {
            let _ = fs::remove_dir_all(&self.dir);
        } else {
            eprintln!("control plane: kept {}", self.dir.display());
        }
        *LIVE.lock().unwrap_or_else(|e| e.into_inner()) = (Vec::new(), None);
    }
}

/// What the API server audits: writes of Nodes and Pods, for the policies' audit annotations, and
/// GETs of Namespaces, so that a read can be counted by who sent it and which Namespace it named
/// (the request metric counts every client's GETs of every Namespace alike).
const AUDIT_POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    resources:
      - group: ""
        resources: ["nodes", "pods"]
  - level: Metadata
    verbs: ["get"]
    resources:
      - group: ""
        resources: ["namespaces"]
  - level: None
"#;

impl Cluster {
    /// Creates the run's folder (`taintguard-<run>-<pid>` in the temporary folder) and PKI, and
    /// starts etcd and kube-apiserver.
    pub fn start(bins: &Binaries, run: &str) -> Result<Cluster, String> {
        let dir = std::env::temp_dir().join(format!("taintguard-{run}-{}", std::process::id()));
        fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        LIVE.lock().unwrap_or_else(|e| e.into_inner()).1 = Some(dir.clone());
        let token = format!("e2e-{:x}", std::process::id() as u64 * 2654435761);
        let mut cluster = Cluster {
            etcd_port: 0,
            api_port: free_port()?,
            kubeconfig: dir.join("kubeconfig"),
            audit_log: dir.join("audit.log"),
            webhook_ca: dir.join("webhook-ca.crt"),
            policy_server_port: free_port()?,
            readiness_port: free_port()?,
            token,
            processes: Vec::new(),
            policy_server_args: Vec::new(),
            dir,
        };
        cluster.write_pki()?;
        cluster.start_etcd(bins)?;
        cluster.start_apiserver(bins)?;
        Ok(cluster)
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    fn spawn(&mut self, name: &'static str, cmd: &mut Command) -> Result<(), String> {
        let log =
            fs::File::create(self.dir.join(format!("{name}.log"))).map_err(|e| e.to_string())?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start {name} ({:?}): {e}", cmd.get_program()))?;
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .push(child.id());
        self.processes.push(Process { name, child });
        Ok(())
    }

    /// Whether the process `name` has exited; its log's tail when it has.
    fn exited(&mut self, name: &str) -> Option<String> {
        let dir = self.dir.clone();
        let p = self.processes.iter_mut().find(|p| p.name == name)?;
        let status = p.child.try_wait().ok()??;
        let log = fs::read_to_string(dir.join(format!("{name}.log"))).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(15).collect();
        Some(format!(
            "{name} exited ({status}):\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ))
    }

    /// The keys, certificates and credentials the control plane and policy-server start with.
    fn write_pki(&self) -> Result<(), String> {
        openssl(
            &["genrsa", "-out", &self.path("sa.key"), "2048"],
            "service-account key",
        )?;
        self.write_webhook_ca()?;
        self.write_policy_server_certificate()?;
        self.write_credentials()
    }

    /// The CA the webhook configurations trust policy-server's certificate by.
    fn write_webhook_ca(&self) -> Result<(), String> {
        openssl(
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-subj",
                "/CN=taintguard-e2e-webhook-ca",
                "-keyout",
                &self.path("webhook-ca.key"),
                "-out",
                &self.path("webhook-ca.crt"),
            ],
            "webhook CA",
        )
    }

    /// policy-server's key and its certificate for 127.0.0.1, signed by the webhook CA.
    fn write_policy_server_certificate(&self) -> Result<(), String> {
        openssl(
            &[
                "req",
                "-new",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                "/CN=policy-server",
                "-keyout",
                &self.path("policy-server.key"),
                "-out",
                &self.path("policy-server.csr"),
            ],
            "policy-server key",
        )?;
        fs::write(self.dir.join("san.cnf"), "subjectAltName=IP:127.0.0.1\n")
            .map_err(|e| e.to_string())?;
        openssl(
            &[
                "x509",
                "-req",
                "-days",
                "2",
                "-in",
                &self.path("policy-server.csr"),
                "-CA",
                &self.path("webhook-ca.crt"),
                "-CAkey",
                &self.path("webhook-ca.key"),
                "-CAcreateserial",
                "-extfile",
                &self.path("san.cnf"),
                "-out",
                &self.path("policy-server.crt"),
            ],
            "policy-server certificate",
        )
    }

    /// The admin's token, the audit policy and the admin's kubeconfig.
    fn write_credentials(&self) -> Result<(), String> {
        let write = |name: &str, text: String| {
            fs::write(self.dir.join(name), text).map_err(|e| format!("{name}: {e}"))
        };
        write(
            "tokens.csv",
            format!("{},admin,admin-uid,\"system:masters\"\n", self.token),
        )?;
        write("audit-policy.yaml", AUDIT_POLICY.to_owned())?;
        write(
            "kubeconfig",
            self.kubeconfig_text("e2e", self.api_port, "certs"),
        )
    }

    /// A kubeconfig for the admin of the API server on `port` whose certificates are in `certs`.
    fn kubeconfig_text(&self, name: &str, port: u16, certs: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: {name}\n  cluster:\n    server: https://127.0.0.1:{port}\n    certificate-authority: {}\nusers:\n- name: admin\n  user:\n    token: {}\ncontexts:\n- name: {name}\n  context: {{cluster: {name}, user: admin}}\ncurrent-context: {name}\n",
            self.path(&format!("{certs}/apiserver.crt")),
            self.token
        )
    }

    fn start_etcd(&mut self, bins: &Binaries) -> Result<(), String> {
        let (client, peer) = (free_port()?, free_port()?);
        self.etcd_port = client;
        let c = format!("http://127.0.0.1:{client}");
        let p = format!("http://127.0.0.1:{peer}");
        let data = self.path("etcd");
        self.spawn(
            "etcd",
            Command::new(&bins.etcd).args([
                "--name",
                "e2e",
                "--data-dir",
                &data,
                "--listen-client-urls",
                &c,
                "--advertise-client-urls",
                &c,
                "--listen-peer-urls",
                &p,
                "--initial-advertise-peer-urls",
                &p,
                "--initial-cluster",
                &format!("e2e={p}"),
                "--unsafe-no-fsync",
            ]),
        )?;
        let health = format!("{c}/health");
        wait_for("etcd", Duration::from_secs(30), || {
            curl(&["-sf", &health]).is_ok_and(|body| body.contains("true"))
        })
        .map_err(|e| self.exited("etcd").unwrap_or(e))
    }

    fn start_apiserver(&mut self, bins: &Binaries) -> Result<(), String> {
        self.launch_apiserver(bins, ("kube-apiserver", self.api_port, "certs"), &[])
    }

    /// A second kube-apiserver on the same etcd under its own key prefix, so a cluster of its
    /// own, with `extra` flags (admission plugins this one runs without), for scenarios that
    /// compare the policies with what Kubernetes' own plugins do. It stops with the suite. The
    /// kubeconfig to reach it, as the admin.
    pub fn start_reference_apiserver(
        &mut self,
        bins: &Binaries,
        extra: &[String],
    ) -> Result<PathBuf, String> {
        let port = free_port()?;
        let mut args = vec!["--etcd-prefix=/registry-reference".to_owned()];
        args.extend_from_slice(extra);
        self.launch_apiserver(
            bins,
            ("reference-apiserver", port, "certs-reference"),
            &args,
        )?;
        let kubeconfig = self.dir.join("kubeconfig-reference");
        fs::write(
            &kubeconfig,
            self.kubeconfig_text("reference", port, "certs-reference"),
        )
        .map_err(|e| e.to_string())?;
        Ok(kubeconfig)
    }

    fn launch_apiserver(
        &mut self,
        bins: &Binaries,
        (name, port, certs): (&'static str, u16, &str),
        extra: &[String],
    ) -> Result<(), String> {
        let mut args = vec![
            format!("--etcd-servers=http://127.0.0.1:{}", self.etcd_port),
            "--bind-address=127.0.0.1".to_owned(),
            "--advertise-address=127.0.0.1".to_owned(),
            format!("--secure-port={port}"),
            format!("--cert-dir={}", self.path(certs)),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".to_owned(),
            format!("--service-account-key-file={}", self.path("sa.key")),
            format!("--service-account-signing-key-file={}", self.path("sa.key")),
            "--service-cluster-ip-range=10.0.0.0/24".to_owned(),
            format!("--token-auth-file={}", self.path("tokens.csv")),
            "--authorization-mode=RBAC".to_owned(),
            // TaintNodesByCondition would add not-ready to every new Node, and ServiceAccount
            // admission wants a controller-made default ServiceAccount: no controller runs here.
            "--disable-admission-plugins=TaintNodesByCondition,ServiceAccount".to_owned(),
            "--endpoint-reconciler-type=none".to_owned(),
            format!("--audit-policy-file={}", self.path("audit-policy.yaml")),
            format!("--audit-log-path={}", self.audit_log.display()),
        ];
        args.extend_from_slice(extra);
        self.spawn(name, Command::new(&bins.kube_apiserver).args(&args))?;
        let crt = self.dir.join(certs).join("apiserver.crt");
        let readyz = format!("https://127.0.0.1:{port}/readyz");
        let auth = format!("Authorization: Bearer {}", self.token);
        self.wait_running(name, Duration::from_secs(90), || {
            crt.is_file()
                && curl(&[
                    "-sf",
                    "--cacert",
                    &crt.display().to_string(),
                    "-H",
                    &auth,
                    &readyz,
                ])
                .is_ok_and(|b| b.trim() == "ok")
        })
    }

    /// Polls `ready` while process `name` runs; its exit, with its log's tail, is the error.
    fn wait_running(
        &mut self,
        name: &'static str,
        limit: Duration,
        mut ready: impl FnMut() -> bool,
    ) -> Result<(), String> {
        let mut gone = None;
        let waited = wait_for(name, limit, || {
            gone = self.exited(name);
            gone.is_some() || ready()
        });
        gone.map_or(waited, Err)
    }

    /// Starts policy-server with `policies.yml` (already written into the run's folder).
    pub fn start_policy_server(&mut self, bins: &Binaries) -> Result<(), String> {
        if self.policy_server_args.is_empty() {
            self.policy_server_args = vec![
                format!("--policies={}", self.path("policies.yml")),
                "--addr=127.0.0.1".to_owned(),
                format!("--port={}", self.policy_server_port),
                format!("--readiness-probe-port={}", self.readiness_port),
                format!("--cert-file={}", self.path("policy-server.crt")),
                format!("--key-file={}", self.path("policy-server.key")),
                "--workers=2".to_owned(),
                format!("--policies-download-dir={}", self.path("downloads")),
                format!("--sigstore-cache-dir={}", self.path("sigstore")),
                "--log-no-color".to_owned(),
            ];
        }
        let args = self.policy_server_args.clone();
        self.spawn(
            "policy-server",
            Command::new(&bins.policy_server)
                .args(&args)
                .env("KUBECONFIG", &self.kubeconfig)
                .env("NO_COLOR", "1"),
        )?;
        let readiness = format!("http://127.0.0.1:{}/readiness", self.readiness_port);
        self.wait_running("policy-server", Duration::from_secs(180), || {
            curl(&["-sf", &readiness]).is_ok()
        })
    }

    /// Starts kube-controller-manager with only its node lifecycle controller, against the API
    /// server as the admin, with a grace period of 6 s: a Node that never posts its status is
    /// marked unknown and tainted `node.kubernetes.io/unreachable` 6 s after the controller first
    /// sees it.
    pub fn start_node_lifecycle_controller(&mut self, binary: &Path) -> Result<(), String> {
        let args = [
            format!("--kubeconfig={}", self.kubeconfig.display()),
            "--controllers=nodelifecycle".to_owned(),
            "--leader-elect=false".to_owned(),
            "--use-service-account-credentials=false".to_owned(),
            "--node-monitor-period=1s".to_owned(),
            "--node-monitor-grace-period=6s".to_owned(),
            "--node-startup-grace-period=6s".to_owned(),
            "--port=0".to_owned(),
            "--secure-port=0".to_owned(),
        ];
        self.spawn("kube-controller-manager", Command::new(binary).args(&args))?;
        // It serves nothing to probe (both ports off): alive after a moment is started.
        std::thread::sleep(Duration::from_secs(2));
        self.exited("kube-controller-manager").map_or(Ok(()), Err)
    }

    /// Stops policy-server, for the failure-policy scenario.
    pub fn stop_policy_server(&mut self) {
        if let Some(i) = self
            .processes
            .iter()
            .position(|p| p.name == "policy-server")
        {
            let mut p = self.processes.remove(i);
            kill(p.child.id());
            let _ = p.child.wait();
        }
    }

    /// POSTs `body` to policy-server's `path` over HTTPS, trusting the webhook CA.
    pub fn post_to_policy_server(&self, path: &str, body: &str) -> Result<String, String> {
        let url = format!("https://127.0.0.1:{}{path}", self.policy_server_port);
        let body_file = self.dir.join("post-body.json");
        fs::write(&body_file, body).map_err(|e| e.to_string())?;
        curl(&[
            "-sS",
            "--fail-with-body",
            "--cacert",
            &self.webhook_ca.display().to_string(),
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            &format!("@{}", body_file.display()),
            &url,
        ])
    }

    /// A raw request to the API server as the admin, for what kubectl 1.20 cannot send (a
    /// `nodes/status` patch).
    pub fn api(&self, request: &ApiRequest<'_>) -> Result<String, String> {
        self.call(&[], request)
    }

    /// [`Cluster::api`] as `user` in `groups`, impersonated by the admin, for what kubectl 1.20
    /// cannot send as another identity (a `nodes/status` patch): the response's headers, the API
    /// server's `Warning`s among them, and its body.
    ///
    /// # Errors
    ///
    /// curl fails, or the API server answers with an error (its body in the message).
    pub fn api_as(
        &self,
        Identity { user, groups }: Identity<'_>,
        request: &ApiRequest<'_>,
    ) -> Result<(String, String), String> {
        let mut extra = vec![
            "--include".to_owned(),
            "-H".to_owned(),
            format!("Impersonate-User: {user}"),
        ];
        for group in groups {
            extra.extend(["-H".to_owned(), format!("Impersonate-Group: {group}")]);
        }
        let text = self.call(&extra, request)?;
        let (headers, body) = text.split_once("\r\n\r\n").unwrap_or(("", &text));
        Ok((headers.to_owned(), body.to_owned()))
    }

    /// curl against the API server with the admin's token, and `extra` arguments.
    fn call(&self, extra: &[String], request: &ApiRequest<'_>) -> Result<String, String> {
        let ApiRequest {
            method,
            path,
            content_type,
            body,
        } = *request;
        let url = format!("https://127.0.0.1:{}{path}", self.api_port);
        let certificate = self.path("certs/apiserver.crt");
        let authorization = format!("Authorization: Bearer {}", self.token);
        let content = format!("Content-Type: {content_type}");
        let mut args = vec!["-sS", "--fail-with-body", "--cacert", &certificate];
        args.extend(["-H", &authorization, "-H", &content]);
        args.extend(extra.iter().map(String::as_str));
        args.extend(["-X", method, "--data-binary", body, &url]);
        curl(&args)
    }

    /// How many `verb` requests (`GET`, `LIST`, ...) for the core group's `resource` the API server
    /// has answered with 200 since it started, summed from its `apiserver_request_total` metric:
    /// what a policy's reads cost the API server, whoever sent them.
    ///
    /// # Errors
    ///
    /// The metrics cannot be fetched.
    pub fn requests_served(&self, verb: &str, resource: &str) -> Result<f64, String> {
        let metrics = self.api(&ApiRequest {
            method: "GET",
            path: "/metrics",
            content_type: "text/plain",
            body: "",
        })?;
        Ok(crate::metrics::requests_in_metrics(
            &metrics, verb, resource,
        ))
    }

    /// The log file of the run's process `name` (`etcd`, `kube-apiserver`, `policy-server`).
    pub fn log_of(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.log"))
    }

    /// The path of `name` in the run's folder.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// A request to the API server, as curl sends it.
#[derive(Clone, Copy)]
pub struct ApiRequest<'a> {
    /// The HTTP method: `GET`, `POST`, `PATCH`...
    pub method: &'a str,
    /// The path, with its query if any.
    pub path: &'a str,
    /// The body's media type, sent as `Content-Type`.
    pub content_type: &'a str,
    /// The body, empty for none.
    pub body: &'a str,
}

/// Whom the admin impersonates: a user and its groups.
#[derive(Clone, Copy)]
pub struct Identity<'a> {
    /// The user's name.
    pub user: &'a str,
    /// The groups the user is in.
    pub groups: &'a [&'a str],
}

/// openssl run with `args`; `what` names what it makes in an error.
fn openssl(args: &[&str], what: &str) -> Result<(), String> {
    run(Command::new("openssl").args(args), what)
}

/// curl's output, or its error output.
pub fn curl(args: &[&str]) -> Result<String, String> {
    let out = Command::new("curl")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run curl: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!("{text}{}", String::from_utf8_lossy(&out.stderr)))
    }
}
