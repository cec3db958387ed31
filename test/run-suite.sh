#!/usr/bin/env bash
# The jest suite in two lines side by side, one test file at a time in each: test/process (each of
# its files starts `npm start`'s processes; two of them at once starve each other on two cores) with
# the cdk synth test (a minute of esbuild) and one browser test, to even the lines out, and
# everything else. Then the files that need the machine to themselves: the noisy-neighbour test
# bounds a quiet account's latency, which the other line's load alone can push past its bound.
# Fails when any fails; the process line's output follows the other's. The three runs record their
# AWS calls in one folder (test/support/aws-calls.ts): each run holds them against the stack's grants,
# and the grants none of them used are listed at the end.
set -uo pipefail
# Each jest line names its paths before --testPathIgnorePatterns, which takes every argument after it.
cd "$(dirname "$0")/.."
alone='test/process/noisy-neighbour\.test\.ts'
beside_processes='test/browser/console-webhook\.test\.ts'
processes_output=$(mktemp)
AWS_CALLS_DIR=$(mktemp -d)
export AWS_CALLS_DIR
npx jest --maxWorkers=1 test/process test/infra/cdk-synth "$beside_processes" --testPathIgnorePatterns="$alone" >"$processes_output" 2>&1 &
processes=$!
npx jest --maxWorkers=1 "$@" --testPathIgnorePatterns=/test/process/ test/infra/cdk-synth "$beside_processes"
rest=$?
wait "$processes"
processes_status=$?
cat "$processes_output"
rm -f "$processes_output"
npx jest --maxWorkers=1 "$alone"
alone_status=$?
npx tsx test/support/aws-grants-report.ts "$AWS_CALLS_DIR"
rm -rf "$AWS_CALLS_DIR"
exit $(( rest != 0 || processes_status != 0 || alone_status != 0 ))
