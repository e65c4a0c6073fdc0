#!/usr/bin/env bash
# The long fuzz runs (outside CI), at the lowest CPU priority, each in the background:
#   fuzz/run_long.sh [OUT_DIR] [PARSER_RUNS] [ARTIFACT_RUNS] [PROGRAMS]
# defaults: out/fuzz 1000000 100000 20000. Each run's log, its findings (one input and
# one traceback per distinct failure) and its figures go under OUT_DIR. Wait for all
# with `wait`; it prints the figures at the end.
set -u
cd "$(dirname "$0")/.."
out="${1:-out/fuzz}"; parser="${2:-1000000}"; artifact="${3:-100000}"; programs="${4:-20000}"
py="${OXLA_PYTHON_BIN:-.venv/bin/python}"
mkdir -p "$out"
OXLA_FUZZ_FINDINGS="$out/findings" nice -n 19 "$py" fuzz/fuzz_parser.py -runs="$parser" \
    -max_len=8192 -timeout=20 -artifact_prefix="$out/" > "$out/parser.log" 2>&1 &
p1=$!
OXLA_FUZZ_FINDINGS="$out/findings" nice -n 19 "$py" fuzz/fuzz_artifact.py -runs="$artifact" \
    -timeout=20 -artifact_prefix="$out/" > "$out/artifact.log" 2>&1 &
p2=$!
nice -n 19 "$py" fuzz/progen.py --programs "$programs" --batch 50 --seed 20 \
    --out "$out/programs.json" > "$out/programs.log" 2>&1 &
p3=$!
wait $p1; echo "parser: exit $? ($(grep -a '^Done' "$out/parser.log" | tail -1))"
wait $p2; echo "artifact: exit $? ($(grep -a '^Done' "$out/artifact.log" | tail -1))"
wait $p3; echo "programs: exit $? ($(tail -1 "$out/programs.log"))"
ls "$out/findings" 2>/dev/null | sed -n 's/\.txt$//p' | sed 's/^/finding: /'
