//! `bench [--quick] BASELINE_WASM`: measures every `dist/<policy>.wasm` against the baseline
//! module on generated and example requests, and writes `benchmarks/results.md` and
//! `benchmarks/latency.svg`. `./build.sh bench` builds everything and runs this.
//! `bench --dump DIR` writes the payloads instead.

mod direct;
mod inputs;
mod measure;
mod plot;
mod report;

use std::path::Path;
use std::process::ExitCode;

use measure::{Module, Stat};
use report::{Row, Run};

/// Rounds per input; `--quick` divides them by ten (for trying the harness, not for results).
const FRESH_ROUNDS: usize = 300;
const WARM_ROUNDS: usize = 1000;

fn run(baseline: &Path, quick: bool) -> Result<(), String> {
    let repo = wasm_tests::repo_root();
    let scale = if quick { 10 } else { 1 };
    let (fresh_rounds, warm_rounds) = (FRESH_ROUNDS / scale, WARM_ROUNDS / scale);
    let baseline = Module::load("baseline", baseline)?;
    let mut sizes = vec![("baseline".to_owned(), baseline.size)];
    let mut rows = Vec::new();
    let inputs = inputs::all(&repo)?;
    let mut policies: Vec<&str> = inputs.iter().map(|i| i.policy).collect();
    policies.sort();
    policies.dedup();
    for policy in policies {
        let module = Module::load(policy, &wasm_tests::dist(&format!("{policy}.wasm")))?;
        sizes.push((policy.to_owned(), module.size));
        for input in inputs.iter().filter(|i| i.policy == policy) {
            // The same answer from both hosts, or the memory figure would be of another run.
            let answer = module.validate_once(&input.payload)?;
            let memory = module.memory(&input.payload, &answer)?;
            let base_answer = baseline.validate_once(&input.payload)?;
            let base_memory = baseline.memory(&input.payload, &base_answer)?;
            let (p, b) = measure::pair(
                &module,
                &baseline,
                &input.payload,
                fresh_rounds,
                warm_rounds,
            )?;
            let row = Row {
                policy: policy.to_owned(),
                family: input.family,
                name: input.name.clone(),
                payload_bytes: input.payload.len(),
                fresh: [Stat::of(&p.per_request), Stat::of(&b.per_request)],
                instantiate: [Stat::of(&p.instantiate), Stat::of(&b.instantiate)],
                warm: [Stat::of(&p.warm), Stat::of(&b.warm)],
                memory: [memory, base_memory],
            };
            eprintln!(
                "{policy:<22} {:<58} per request {:>6.0} µs {:.2}x   warm {:>7.1} µs {:.2}x",
                row.name,
                row.fresh[0].median,
                row.fresh_ratio(),
                row.warm[0].median,
                row.warm_ratio()
            );
            rows.push(row);
        }
    }
    let run = Run {
        command: "./build.sh bench".to_owned(),
        fresh_rounds,
        warm_rounds,
        rows,
        sizes,
    };
    let out = repo.join("benchmarks");
    let write = |file: &str, text: String| {
        std::fs::write(out.join(file), text).map_err(|e| format!("{file}: {e}"))
    };
    write("results.md", report::markdown(&run))?;
    write("latency.svg", plot::svg(&run.rows))?;
    println!("{}", report::summary(&run));
    Ok(())
}

/// Writes each input's payload to `dir`, for profiling the core natively or feeding `kwctl bench`.
fn dump(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for input in inputs::all(&wasm_tests::repo_root())? {
        let file: String = format!("{} {}", input.policy, input.name)
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let path = dir.join(format!("{file}.json"));
        std::fs::write(&path, &input.payload).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, dir] = &args[..] {
        if flag == "--dump" {
            return match dump(Path::new(dir)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("bench: {e}");
                    ExitCode::FAILURE
                }
            };
        }
    }
    let quick = args.iter().any(|a| a == "--quick");
    let paths: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let [baseline] = paths[..] else {
        eprintln!("usage: bench [--quick] BASELINE_WASM | bench --dump DIR");
        return ExitCode::from(2);
    };
    match run(Path::new(baseline), quick) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}
