//! `bench [--quick] [--only TEXT]... [--rounds N] [--real-host | --instructions] BASELINE_WASM
//! BASELINE_GATEKEEPER_WASM NULL_WASM WALK_WASM MUTATE_WASM MUTATE_NAMESPACE_WASM
//! MUTATE_NAMESPACE_FRESH_WASM ANSWERS_DIR`:
//! measures the policies in Kubewarden's real policy-server over loopback against the
//! null module NULL_WASM (`realhost/`), then, as diagnostics, every `dist/<policy>.wasm` against
//! the waPC baseline module, and every `dist/<policy>.gatekeeper.wasm` against the OPA-ABI
//! baseline (linked but not yet finished: finished here as `embed-metadata` finishes the
//! artifacts), on generated and example requests, and writes `benchmarks/results.md` and
//! `benchmarks/latency.svg`. `./build.sh bench` builds everything and runs this. `--real-host`
//! runs only the real-host section and rewrites just that section of the results; `--quick`
//! runs a tenth of the rounds (shorter points in the real host); `--only TEXT` keeps the inputs
//! whose policy and name contain every TEXT given. Either of these two only prints: a partial
//! or shortened run must not replace the results. `--rounds N` runs N rounds of each real-host
//! point instead of 3, for a median that noise moves less. `--instructions` counts the real host's
//! instructions per request under callgrind instead (`realhost/instructions.rs`) and only prints.
//! `bench --dump DIR` writes the payloads instead, and `bench --answers DIR` the policies'
//! answers to the real-host cases, which `./build.sh bench` builds the answer anchors of into
//! ANSWERS_DIR (`realhost/answers.rs`).

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

mod direct;
mod inputs;
mod measure;
mod opa;
mod plot;
mod realhost;
mod report;

use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;

use serde_json::{json, Value};

use inputs::Input;
use measure::{Host, Module, OpaModule, Rounds, Samples, Stat};
use report::{Row, Run};

/// Rounds per input; `--quick` divides them by ten (for trying the harness, not for results).
const FRESH_ROUNDS: usize = 300;
const WARM_ROUNDS: usize = 1000;

/// What was measured of an artifact and its baseline on one input.
struct Figures {
    /// The size of the payload the artifact was given.
    payload_bytes: usize,
    /// The times of the artifact, then of its baseline.
    samples: (Samples, Samples),
    /// The linear memory of the artifact, then of its baseline.
    memory: [direct::MemoryUse; 2],
    /// The operators executed by the artifact, then by its baseline.
    operators: [direct::Operators; 2],
}

/// The row of `artifact` on `input`, printed as it is made so a long run shows its progress.
fn row(artifact: &str, input: &Input, figures: Figures) -> Row {
    let Figures {
        payload_bytes,
        samples: (p, b),
        memory,
        operators,
    } = figures;
    let row = Row {
        policy: artifact.to_owned(),
        family: input.family,
        name: input.name.clone(),
        payload_bytes,
        fresh: [Stat::of(&p.per_request), Stat::of(&b.per_request)],
        instantiate: [Stat::of(&p.instantiate), Stat::of(&b.instantiate)],
        warm: [Stat::of(&p.warm), Stat::of(&b.warm)],
        memory,
        operators,
    };
    eprintln!(
        "{artifact:<34} {:<58} per request {:>6.0} µs {:.2}x (instantiate {:.0} / {:.0} µs)   \
         warm {:>7.1} µs {:.2}x   operators {:.2}x / {:.2}x",
        row.name,
        row.fresh[0].median,
        row.fresh_ratio(),
        row.instantiate[0].median,
        row.instantiate[1].median,
        row.warm[0].median,
        row.warm_ratio(),
        row.operators_fresh_ratio(),
        row.operators_warm_ratio(),
    );
    row
}

/// The gatekeeper answer must be a result set Kubewarden reads without failing open, and judge
/// as the waPC build in deny mode judged (`wasm-tests/js/opa/verdicts.test.js` holds the two
/// builds to the same rule): no violation iff accepted, else one violation whose `msg` and
/// `details.code` are the rejection's message and code. Otherwise the timings could be of an
/// error path.
fn same_verdict(answer: &Value, wapc: &[u8]) -> Result<(), String> {
    let response: Value = serde_json::from_slice(wapc)
        .map_err(|e| format!("the waPC build answered invalid JSON: {e}"))?;
    let accepted = response["accepted"]
        .as_bool()
        .ok_or_else(|| format!("the waPC build answered no verdict: {response}"))?;
    let violations = match answer.as_array().map(Vec::as_slice) {
        Some([set]) => set["result"].as_array(),
        _ => None,
    }
    .filter(|list| list.iter().all(|v| v["msg"].is_string()))
    .ok_or_else(|| format!("not a result set of violations with string `msg`s: {answer}"))?;
    match (accepted, violations.as_slice()) {
        (true, []) => Ok(()),
        (false, [violation])
            if violation["msg"] == response["message"]
                && violation["details"]["code"] == response["code"] =>
        {
            Ok(())
        }
        _ => Err(format!(
            "answered {answer} where the waPC build in deny mode answered {response}"
        )),
    }
}

/// What the in-process hosts measure: the inputs, their policies and how many rounds.
struct Plan<'a> {
    /// The inputs that ask the cluster nothing.
    inputs: Vec<&'a Input>,
    /// Their policies, sorted, each once.
    policies: Vec<&'a str>,
    rounds: Rounds,
}

/// What the in-process hosts measured, in the order measured.
#[derive(Default)]
struct Measured {
    rows: Vec<Row>,
    sizes: Vec<measure::ModuleSize>,
}

/// The diagnostics: every input in the waPC host and the burrego emulation, each artifact against
/// its baseline.
fn in_process(
    inputs: &[Input],
    baseline: &Path,
    baseline_gatekeeper: &Path,
    quick: bool,
) -> Result<Run, String> {
    // An input that reads its Namespace from the cluster runs only in the real host: no
    // in-process host here answers host calls (a canned answer would measure the canning).
    let inputs: Vec<&Input> = inputs.iter().filter(|i| i.namespace.is_none()).collect();
    let scale = if quick { 10 } else { 1 };
    let rounds = Rounds {
        fresh: FRESH_ROUNDS / scale,
        warm: WARM_ROUNDS / scale,
    };
    let mut policies: Vec<&str> = inputs.iter().map(|i| i.policy).collect();
    policies.sort();
    policies.dedup();
    let plan = Plan {
        inputs,
        policies,
        rounds,
    };
    let mut measured = Measured::default();
    let wapc_modules = measure_wapc(&plan, baseline, &mut measured)?;
    measure_gatekeeper(&plan, baseline_gatekeeper, &wapc_modules, &mut measured)?;
    Ok(Run {
        command: "./build.sh bench".to_owned(),
        fresh_rounds: rounds.fresh,
        warm_rounds: rounds.warm,
        rows: measured.rows,
        sizes: measured.sizes,
    })
}

/// The waPC artifacts against `baseline` in the waPC host, giving back each policy's module for
/// the gatekeeper artifacts' verdicts to be checked against.
fn measure_wapc<'a>(
    plan: &Plan<'a>,
    baseline: &Path,
    measured: &mut Measured,
) -> Result<HashMap<&'a str, Module>, String> {
    let baseline = Module::load("baseline", baseline)?;
    measured.sizes.push(baseline.size.clone());
    let mut wapc_modules = HashMap::new();
    for &policy in &plan.policies {
        let module = Module::load(policy, &wasm_tests::dist(&format!("{policy}.wasm")))?;
        measured.sizes.push(module.size.clone());
        for input in plan.inputs.iter().filter(|i| i.policy == policy) {
            // The same answer from both hosts, or the memory figure would be of another run.
            let answer = module.validate_once(&input.payload)?;
            let memory = module.memory(&input.payload, &answer)?;
            let base_answer = baseline.validate_once(&input.payload)?;
            let base_memory = baseline.memory(&input.payload, &base_answer)?;
            let samples = measure::pair(
                [&module, &baseline],
                &input.payload,
                [&answer, &base_answer],
                plan.rounds,
            )?;
            let operators = [
                module.operators(&input.payload, &answer)?,
                baseline.operators(&input.payload, &base_answer)?,
            ];
            let figures = Figures {
                payload_bytes: input.payload.len(),
                samples,
                memory: [memory, base_memory],
                operators,
            };
            measured.rows.push(row(policy, input, figures));
        }
        wapc_modules.insert(policy, module);
    }
    Ok(wapc_modules)
}

/// The gatekeeper artifacts against `baseline_gatekeeper`, in Kubewarden's gatekeeper mode
/// (burrego), each answer checked against the waPC build's in deny mode.
fn measure_gatekeeper(
    plan: &Plan<'_>,
    baseline_gatekeeper: &Path,
    wapc_modules: &HashMap<&str, Module>,
    measured: &mut Measured,
) -> Result<(), String> {
    let read = |path: &Path| std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()));
    let finished = taintguard_wasm_metadata::opa::finish(&read(baseline_gatekeeper)?)
        .map_err(|e| format!("{}: {e}", baseline_gatekeeper.display()))?;
    let baseline = OpaModule::from_bytes("baseline.gatekeeper", &finished)?;
    let empty_result_set = json!([{"result": []}]);
    measured.sizes.push(baseline.size.clone());
    for &policy in &plan.policies {
        let name = format!("{policy}.gatekeeper");
        let module =
            OpaModule::from_bytes(&name, &read(&wasm_tests::dist(&format!("{name}.wasm")))?)?;
        measured.sizes.push(module.size.clone());
        for input in plan.inputs.iter().filter(|i| i.policy == policy) {
            let payload = input.gatekeeper_input();
            let answer = module.evaluate_once(&payload)?;
            let wapc = wapc_modules[policy].validate_once(&input.deny_mode_payload())?;
            same_verdict(&answer, &wapc).map_err(|e| format!("{name}, {}: {e}", input.name))?;
            let base_answer = baseline.evaluate_once(&payload)?;
            if base_answer != empty_result_set {
                return Err(format!(
                    "{}, {}: answered {base_answer} instead of {empty_result_set}",
                    baseline.name, input.name
                ));
            }
            let memory = [module.memory(&payload)?, baseline.memory(&payload)?];
            let samples = measure::pair(
                [&module, &baseline],
                &payload,
                [&answer, &base_answer],
                plan.rounds,
            )?;
            let operators = [
                module.operators(&payload, &answer)?,
                baseline.operators(&payload, &base_answer)?,
            ];
            let figures = Figures {
                payload_bytes: payload.len(),
                samples,
                memory,
                operators,
            };
            measured.rows.push(row(&name, input, figures));
        }
    }
    Ok(())
}

struct Options<'a> {
    quick: bool,
    only: Vec<&'a str>,
    real_host_only: bool,
    instructions: bool,
    /// Rounds of each real-host point, when not the default.
    rounds: Option<usize>,
    baseline: &'a Path,
    baseline_gatekeeper: &'a Path,
    null: &'a Path,
    walk: &'a Path,
    mutate: &'a Path,
    mutate_namespace: &'a Path,
    mutate_namespace_fresh: &'a Path,
    answers: &'a Path,
}

fn run(options: &Options) -> Result<(), String> {
    let repo = wasm_tests::repo_root();
    let inputs = selected_inputs(&repo, &options.only)?;
    let modules = modules(options, &repo);
    let partial = options.quick || !options.only.is_empty();
    let results = repo.join("benchmarks/results.md");
    if options.instructions {
        // Exact and repeatable: the steady measure of the targets, in a section of its own
        // (benchmarks/cost.md keeps the counts each change was judged by).
        let counted = realhost::instructions::run(&repo, &inputs, &modules)?;
        let section = realhost::instructions::section(&counted);
        println!("{section}");
        if !partial {
            write(
                &results,
                realhost::report::replace_section(&read(&results)?, &section),
            )?;
        }
        return Ok(());
    }
    let mut timing = if options.quick {
        realhost::QUICK
    } else {
        realhost::FULL
    };
    timing.rounds = options.rounds.unwrap_or(timing.rounds);
    let real_host = realhost::run(&repo, &inputs, &modules, timing)?;
    let section = realhost::report::section(&real_host);
    if let realhost::Outcome::NotRun(why) = &real_host {
        eprintln!("real host: not run: {why}");
    }
    if options.real_host_only {
        println!("{section}");
        // Without a measurement the figures last committed stay.
        if !partial && matches!(real_host, realhost::Outcome::Ran(_)) {
            let old = read(&results)?;
            write(&results, realhost::report::replace_section(&old, &section))?;
        }
        return Ok(());
    }
    let run = in_process(
        &inputs,
        options.baseline,
        options.baseline_gatekeeper,
        options.quick,
    )?;
    if !partial {
        write_results(&repo, &run, &section)?;
    }
    println!("{section}\n{}", report::summary(&run));
    Ok(())
}

/// The inputs whose policy and name contain every `--only` text.
fn selected_inputs(repo: &Path, only: &[&str]) -> Result<Vec<Input>, String> {
    let mut inputs = inputs::all(repo)?;
    inputs.retain(|i| {
        let label = format!("{} {}", i.policy, i.name);
        only.iter().all(|text| label.contains(text))
    });
    if inputs.is_empty() {
        return Err(format!("no input matches --only {}", only.join(" --only ")));
    }
    Ok(inputs)
}

/// The modules the real host loads beside the policies, as given on the command line.
fn modules(options: &Options, repo: &Path) -> realhost::Modules {
    realhost::Modules {
        null: options.null.to_owned(),
        baseline: options.baseline.to_owned(),
        walk: options.walk.to_owned(),
        mutate: options.mutate.to_owned(),
        mutate_namespace: options.mutate_namespace.to_owned(),
        mutate_namespace_fresh: options.mutate_namespace_fresh.to_owned(),
        answers: options.answers.to_owned(),
        dist: repo.join("dist"),
    }
}

/// Rewrites results.md with `run` after the real-host `section`, and the plot. The instruction
/// counts come from their own command (`--instructions`); they stay.
fn write_results(repo: &Path, run: &Run, section: &str) -> Result<(), String> {
    let results = repo.join("benchmarks/results.md");
    let old = read(&results)?;
    let mut new = report::markdown(run, section);
    if let Some(counts) = realhost::report::section_of(&old, realhost::instructions::HEADING) {
        new = realhost::report::replace_section(&new, &format!("{counts}\n"));
    }
    write(&results, new)?;
    write(&repo.join("benchmarks/latency.svg"), plot::svg(&run.rows))
}

/// `path`'s text, or an error naming it.
fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes `text` to `path`, or an error naming it.
fn write(path: &Path, text: String) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes each input's payload to `dir`, for profiling the core natively or feeding `kwctl bench`.
fn dump(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for input in inputs::all(&wasm_tests::repo_root())? {
        let path = dir.join(format!("{}.json", input.slug()));
        std::fs::write(&path, &input.payload).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// Writes the policies' answers to the real-host cases for their answer anchors
/// (`realhost/answers.rs`).
fn answers(dir: &Path) -> Result<(), String> {
    let repo = wasm_tests::repo_root();
    realhost::answers::write(&inputs::all(&repo)?, &repo.join("dist"), dir)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(code) = write_files(&args) {
        return code;
    }
    let options = match options(&args) {
        Ok(options) => options,
        Err(code) => return code,
    };
    match run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--dump DIR` and `--answers DIR`, which write files and measure nothing: how it went, or
/// `None` for any other command line.
fn write_files(args: &[String]) -> Option<ExitCode> {
    let [flag, dir] = args else {
        return None;
    };
    let written = match flag.as_str() {
        "--dump" => dump(Path::new(dir)),
        "--answers" => answers(Path::new(dir)),
        _ => return None,
    };
    Some(match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    })
}

/// The options of a measuring command line, or the exit code of one that is not (its error
/// already printed).
fn options(args: &[String]) -> Result<Options<'_>, ExitCode> {
    let (mut quick, mut only, mut real_host_only, mut instructions, mut paths) =
        (false, Vec::new(), false, false, Vec::new());
    let mut rounds = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => quick = true,
            "--only" => only.extend(args.next().map(String::as_str)),
            "--real-host" => real_host_only = true,
            "--instructions" => instructions = true,
            "--rounds" => match args.next().and_then(|n| n.parse::<usize>().ok()) {
                Some(n) if n > 0 => rounds = Some(n),
                _ => {
                    eprintln!("bench: --rounds takes a number of rounds, at least 1");
                    return Err(ExitCode::from(2));
                }
            },
            _ => paths.push(Path::new(arg)),
        }
    }
    let [baseline, baseline_gatekeeper, null, walk, mutate, mutate_namespace, mutate_namespace_fresh, answers] =
        paths[..]
    else {
        eprintln!(
            "usage: bench [--quick] [--only TEXT]... [--rounds N] [--real-host | --instructions] BASELINE_WASM \
             BASELINE_GATEKEEPER_WASM NULL_WASM WALK_WASM MUTATE_WASM MUTATE_NAMESPACE_WASM MUTATE_NAMESPACE_FRESH_WASM \
             ANSWERS_DIR | bench --dump DIR | bench --answers DIR"
        );
        return Err(ExitCode::from(2));
    };
    Ok(Options {
        quick,
        only,
        real_host_only,
        instructions,
        rounds,
        baseline,
        baseline_gatekeeper,
        null,
        walk,
        mutate,
        mutate_namespace,
        mutate_namespace_fresh,
        answers,
    })
}
