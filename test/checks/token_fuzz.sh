#!/usr/bin/env bash
# A short libFuzzer run (ASan + UBSan) of the token parser, MAC verifier and
# base64url; the recorded long run is in docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(test/fuzz/build.sh fuzz 2>/dev/null | tail -n 1)
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
cp test/fuzz/corpus/* "$corpus"/
"$bin" -runs=200000 -max_len=4200 "$corpus" 2>&1 | tail -n 3
