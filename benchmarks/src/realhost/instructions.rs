//! `bench --instructions`: the real host's cost per request counted in instructions instead of
//! timed. policy-server runs under `valgrind --tool=callgrind`, which counts every instruction it
//! executes, the JIT-compiled guest included; each module of each case gets warm-up requests,
//! then the counters are zeroed, [`REQUESTS`] requests are sent on one keep-alive connection,
//! and the counters are dumped. Unlike req/s under load these counts repeat exactly from run to
//! run whatever else the machine does, so they show what one change did; they leave out the
//! kernel (page faults, sockets) and contention, so they are not the throughput ratios, which
//! remain the targets. How they were used: benchmarks/cost.md.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::http::Connection;
use super::target::{self, Costs, Target};
use super::{
    context, prepare, server, Modules, Prepared, ANCHOR, ANSWER, MODULES, POLICY, RUN_DIR,
};
use crate::inputs::Input;

/// Requests counted per module and case.
const REQUESTS: u64 = 100;
/// Requests sent before counting, so that nothing done once (lazy set-up in the host) counts.
const WARM_UP: u64 = 10;

/// One module's count on one case, per request.
pub struct Count {
    /// Everything policy-server executed.
    pub total: u64,
    /// The part inside wasm calls (`TypedFunc::call_raw`, inclusive): the module's own code.
    pub guest: Option<u64>,
}

/// The counts of one case, indexed as [`MODULES`] (the baseline is not counted).
pub struct Counted {
    pub policy: &'static str,
    pub name: String,
    /// The anchor of its verdict ([`super::anchor`]).
    pub anchor: &'static str,
    pub counts: [Option<Count>; MODULES.len()],
}

/// `callgrind_control` on the server's process.
fn control(pid: u32, args: &[&str]) -> Result<(), String> {
    let out = Command::new("callgrind_control")
        .args(args)
        .arg(pid.to_string())
        .output()
        .map_err(|e| format!("callgrind_control: {e} (Debian package `valgrind`)"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "callgrind_control {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The instructions of dump `file`: its `totals`, and the inclusive cost of wasm calls as
/// `callgrind_annotate` attributes it (`None` when it names no such function).
fn read_dump(file: &Path) -> Result<(u64, Option<u64>), String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let total = text
        .lines()
        .find_map(|l| l.strip_prefix("totals:"))
        .and_then(|t| t.trim().parse().ok())
        .ok_or_else(|| format!("{}: no totals", file.display()))?;
    let annotated = Command::new("callgrind_annotate")
        .arg("--inclusive=yes")
        .arg(file)
        .output()
        .map_err(|e| format!("callgrind_annotate: {e}"))?;
    let guest = String::from_utf8_lossy(&annotated.stdout)
        .lines()
        .find(|l| l.contains("TypedFunc<") && l.contains(">::call_raw"))
        .and_then(|l| l.split_whitespace().next().map(|n| n.replace(',', "")))
        .and_then(|n| n.parse().ok());
    Ok((total, guest))
}

/// The newest dump in `dir` (`callgrind.<pid>.<n>`).
fn newest_dump(dir: &Path, pid: u32) -> Result<PathBuf, String> {
    let prefix = format!("callgrind.{pid}.");
    let mut dumps: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let n = path
                .file_name()?
                .to_str()?
                .strip_prefix(&prefix)?
                .parse()
                .ok()?;
            Some((n, path))
        })
        .collect();
    dumps.sort();
    dumps
        .pop()
        .map(|(_, path)| path)
        .ok_or_else(|| format!("no callgrind dump in {}", dir.display()))
}

fn count(
    server: &server::PolicyServer,
    dir: &Path,
    case: &Prepared,
    module: usize,
) -> Result<Count, String> {
    let body = std::fs::read(&case.body).map_err(|e| format!("{}: {e}", case.body.display()))?;
    let path = format!("/validate/{}", case.ids[module]);
    let mut connection = Connection::open(server.port)?;
    for _ in 0..WARM_UP {
        connection.post(&path, &body)?;
    }
    control(server.pid(), &["-z"])?;
    for _ in 0..REQUESTS {
        connection.post(&path, &body)?;
    }
    control(server.pid(), &["-d"])?;
    let (total, guest) = read_dump(&newest_dump(dir, server.pid())?)?;
    Ok(Count {
        total: total / REQUESTS,
        guest: guest.map(|g| g / REQUESTS),
    })
}

/// Counts the policy, its answer anchor, the anchor of its verdict and the null module on each
/// of [`super::CASES`] in `inputs`.
pub fn run(repo: &Path, inputs: &[Input], modules: &Modules) -> Result<Vec<Counted>, String> {
    let binary = server::find()?;
    let cases = super::cases(inputs);
    let dir = repo.join(RUN_DIR).join("instructions");
    let context = context::start(cases)?;
    for (case, why) in &context.not_run {
        eprintln!("instructions: {case} not counted: {why}");
    }
    let (prepared, entries) = prepare(&context.cases, modules, &dir)?;
    let out_file = format!("--callgrind-out-file={}/callgrind.%p", dir.display());
    eprintln!("instructions: policy-server under callgrind (a minute or two to start)");
    let launch = server::Launch {
        wrapper: &["valgrind", "--tool=callgrind", &out_file],
        binary: &binary,
    };
    let server = server::PolicyServer::start_under(launch, &dir, &entries, context.kubeconfig())?;
    let mut counted = Vec::new();
    for case in &prepared {
        let mut counts: [Option<Count>; MODULES.len()] = Default::default();
        for module in [0, POLICY, ANCHOR, ANSWER] {
            counts[module] = Some(count(&server, &dir, case, module)?);
        }
        eprintln!("{:<22} {:<46} counted", case.input.policy, case.input.name);
        counted.push(Counted {
            policy: case.input.policy,
            name: case.input.name.clone(),
            anchor: case.anchor,
            counts,
        });
    }
    Ok(counted)
}

/// The heading of the counts' section of `benchmarks/results.md`.
pub const HEADING: &str = "## Real host: instructions per request";

/// The counts' section of `benchmarks/results.md`: how they are counted, and [`table`].
pub fn section(counted: &[Counted]) -> String {
    format!(
        "{HEADING}\n\n\
         `./build.sh bench --instructions`: policy-server 1.35 under `valgrind --tool=callgrind`, \
         which counts every instruction the server executes, the guest's JIT-compiled code \
         included (the kernel's work is not). Per module and case: {WARM_UP} warm-up requests, the \
         counters zeroed, {REQUESTS} requests on one keep-alive connection, the counters dumped; \
         the figure is per request. **total** is everything policy-server executed, **guest** the \
         part inside wasm calls (`TypedFunc::call_raw`, inclusive). The guest's counts repeat \
         exactly from run to run whatever else the machine does, the totals within about 0.5%: the steady measure of the targets \
         (answer ÷ policy ≥ 0.95x; the hostpath helper Pod's is its measured 0.93x, stated \
         beside it (cost.md, \"The limit of tuning\"); the case with a JSONPath condition states its own, 0.95x with \
         what the condition costs allowed on top: the policy's guest count less its twin's, the \
         same request judged by the same rule without the condition, less the same difference of \
         their answer anchors). The context-aware cases' counts leave out the API server, a \
         process of its own (asked once per 5 s through policy-server's cache by default, for \
         every request by the fresh reads case).\n\n{}",
        table(counted)
    )
}

/// The counts as a table: per request, policy, answer anchor, verdict anchor and null, the
/// guest's share of the first three, and the anchors' counts over the policy's, with the
/// target answer ÷ policy is held to ([`Target`]: the JSONPath case's condition costed from
/// its and its twin's guest counts, which repeat exactly, where the totals move by thousands).
pub fn table(counted: &[Counted]) -> String {
    let thousands = |n: u64| format!("{:.0}k", n as f64 / 1000.0);
    let guest = |c: &Count| c.guest.map_or("?".to_owned(), thousands);
    let guest_costs = |case: &Counted| match &case.counts {
        [_, Some(policy), _, _, Some(answer)] => Some(Costs {
            policy: policy.guest? as f64,
            answer: answer.guest? as f64,
        }),
        _ => None,
    };
    let mut out = String::from(
        "| input | anchor | instructions per request: policy / answer / anchor / null (guest: \
         policy / answer / anchor) | answer ÷ policy | target | anchor ÷ policy |\n\
         |---|---|---|---|---|---|\n",
    );
    for case in counted {
        let [Some(null), Some(policy), _, Some(anchor), Some(answer)] = &case.counts else {
            continue;
        };
        let over = |c: &Count| c.total as f64 / policy.total as f64;
        let condition = target::twin_of(case.policy, &case.name).and_then(|twin| {
            let twin = counted
                .iter()
                .find(|c| c.policy == case.policy && c.name == twin)?;
            Some(target::condition_cost(
                guest_costs(case)?,
                guest_costs(twin)?,
            ))
        });
        let target = Target::of(case.policy, &case.name, answer.total as f64, condition);
        let met = if over(answer) >= target.ratio {
            "met"
        } else {
            "**not met**"
        };
        out.push_str(&format!(
            "| {} {} | {} | {} / {} / {} / {} ({} / {} / {}) | {:.3}x | {}: {met} | {:.2}x |\n",
            case.policy,
            case.name,
            case.anchor,
            thousands(policy.total),
            thousands(answer.total),
            thousands(anchor.total),
            thousands(null.total),
            guest(policy),
            guest(answer),
            guest(anchor),
            over(answer),
            target.describe(|n| thousands(n as u64)),
            over(anchor),
        ));
    }
    out
}
