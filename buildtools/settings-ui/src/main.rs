//! `settings-ui write [POLICIES]`: rewrites each policy's `questions-ui.yml` and README settings
//! tables from its `settings-fields.yml`. `settings-ui check [POLICIES]`: fails when one is stale.
//! POLICIES defaults to `policies`.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

use std::path::Path;
use std::process::ExitCode;

use taintguard_settings_ui::{policy_dirs, render, stale, REGENERATE};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let policies = Path::new(args.get(1).map_or("policies", String::as_str));
    let result = match args.first().map(String::as_str) {
        Some("write") => write(policies),
        Some("check") => check(policies),
        _ => Err("usage: settings-ui write|check [POLICIES]".to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("settings-ui: {e}");
            ExitCode::FAILURE
        }
    }
}

fn write(policies: &Path) -> Result<(), String> {
    for dir in policy_dirs(policies)? {
        for (path, text) in render(&dir)? {
            if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
                eprintln!("    wrote {}", path.display());
            }
        }
    }
    Ok(())
}

fn check(policies: &Path) -> Result<(), String> {
    let stale = stale(policies)?;
    if stale.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = stale.iter().map(|p| p.display().to_string()).collect();
    Err(format!(
        "out of date: {}; run {REGENERATE}",
        names.join(", ")
    ))
}
