#!/usr/bin/env bash
# The jest suite in two lines side by side, one test file at a time in each: test/process (each of
# its files starts `npm start`'s processes; two of them at once starve each other on two cores), and
# everything else. Fails when either fails; the process line's output follows the other's.
set -uo pipefail
cd "$(dirname "$0")/.."
processes_output=$(mktemp)
npx jest --maxWorkers=1 test/process >"$processes_output" 2>&1 &
processes=$!
npx jest --maxWorkers=1 --testPathIgnorePatterns=/test/process/ "$@"
rest=$?
wait "$processes"
processes_status=$?
cat "$processes_output"
rm -f "$processes_output"
exit $(( rest != 0 || processes_status != 0 ))
