#!/usr/bin/env node
// `npx taintguard test`: the workspace's `taintguard test` run through this package's build of
// each policy. The suites, the runs and the reports are the package's Rust (runTests); this
// file only parses the arguments and lends it Node's file system, which wasm has none of.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { runTests } = require('../node/taintguard.js');

const USAGE = `usage: taintguard test [--output text|junit|json] [PATH]...

Runs every test suite (a YAML file with \`kind: TestSuite\`) found under the paths (default: .)
through this package's build of each policy: a line per case, the differences under each failure,
and \`N passed, N failed\`; exits 1 on any failure, 2 when nothing could be tested. --output junit
writes a JUnit XML report to standard output instead, --output json a JSON report with every
request's verdict (allowed, code, patch, warnings). A suite's \`cluster:\` answers the policy's
cluster questions; cases that replay a kwctl session are skipped (only a waPC host replays one).`;

/** Why the arguments cannot be run: usage on stderr, exit 2. */
class UsageError extends Error {}

function parse(argv) {
  const [command, ...rest] = argv;
  if (command === '-h' || command === '--help' || command === 'help') return { help: true };
  if (command !== 'test') throw new UsageError(command ? `unknown command ${JSON.stringify(command)}` : 'no command');
  let output = 'text';
  const paths = [];
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i];
    if (arg === '-h' || arg === '--help') return { help: true };
    if (arg === '--output' || arg.startsWith('--output=')) {
      const value = arg === '--output' ? rest[++i] : arg.slice('--output='.length);
      if (value !== 'text' && value !== 'junit' && value !== 'json') {
        throw new UsageError(`--output ${JSON.stringify(value ?? '')}: expected text, junit or json`);
      }
      output = value;
    } else if (arg === '--') {
      paths.push(...rest.slice(i + 1));
      break;
    } else if (arg.startsWith('-') && arg !== '-') {
      throw new UsageError(`unknown argument ${JSON.stringify(arg)}`);
    } else {
      paths.push(arg);
    }
  }
  return { output, paths };
}

// The files runTests reads. A missing path makes stat throw, so that the error names it; a path
// that is a file (or under one: ENOTDIR) is no directory, which runTests then reads as a suite.
const files = {
  read: (file) => fs.readFileSync(file, 'utf8'),
  list(dir) {
    let stat;
    try {
      stat = fs.statSync(dir);
    } catch (e) {
      if (e.code === 'ENOTDIR') return null;
      throw e;
    }
    if (!stat.isDirectory()) return null;
    // Symbolic links are followed, and a broken one is no directory, as in the workspace's command.
    const isDirectory = (entry) => {
      if (!entry.isSymbolicLink()) return entry.isDirectory();
      try {
        return fs.statSync(path.join(dir, entry.name)).isDirectory();
      } catch {
        return false;
      }
    };
    return fs.readdirSync(dir, { withFileTypes: true }).map((entry) => [entry.name, isDirectory(entry)]);
  },
};

function main(argv) {
  let args;
  try {
    args = parse(argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`taintguard: ${e.message}\n${USAGE}\n`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  let run;
  try {
    run = runTests(args.paths, args.output, files);
  } catch (e) {
    process.stderr.write(`taintguard test: ${e.message}\n`);
    return 2;
  }
  process.stdout.write(run.output);
  // The JUnit or JSON report is the whole of stdout; the counts still reach a person on stderr.
  if (args.output !== 'text') {
    const skipped = run.skipped > 0 ? `, ${run.skipped} skipped` : '';
    process.stderr.write(`${run.passed} passed, ${run.failed} failed${skipped}\n`);
  }
  return run.failed > 0 ? 1 : 0;
}

// exitCode rather than exit(): a piped stdout is written out in full before Node exits.
process.exitCode = main(process.argv.slice(2));
