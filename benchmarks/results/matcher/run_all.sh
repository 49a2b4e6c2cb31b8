#!/bin/bash
# Runs the matcher benchmarks in two lanes (one torch thread each), appending to results.jsonl.
# Usage (from the repository root): nohup bash benchmarks/results/matcher/run_all.sh > /tmp/bench_matcher.log 2>&1 &
cd "$(dirname "$0")/../../.." || exit 1
. .venv/bin/activate
export SKRISK_DATA=${SKRISK_DATA:-/work/shared/data} PYTHONHASHSEED=0
B="python benchmarks/bench_matcher.py"
(
  $B score --model hybrid
  $B labels --model hybrid --epochs 20 --patience 5
  $B full --dataset dblp_scholar --model hybrid --epochs 10 --patience 3
  $B full --dataset dblp_scholar --model plain --epochs 10 --patience 3
) > benchmarks/results/matcher/lane_a.log 2>&1 &
(
  $B feature --dataset dblp_scholar
  $B labels --model plain --epochs 20 --patience 5
  $B full --dataset abt_buy --model hybrid --max-length 32 --epochs 10 --patience 3
  $B fasttext
) > benchmarks/results/matcher/lane_b.log 2>&1 &
wait
