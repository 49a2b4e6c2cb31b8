#!/bin/bash
# Runs the matcher benchmarks one after another (one torch thread, under nice), appending to
# results.jsonl. FastText vectors and encoded splits are cached in /tmp/skrisk_cache between runs.
# Usage (from the repository root): nohup bash benchmarks/results/matcher/run_all.sh > benchmarks/results/matcher/run_all.log 2>&1 &
cd "$(dirname "$0")/../../.." || exit 1
export SKRISK_DATA=${SKRISK_DATA:-/work/shared/data} PYTHONHASHSEED=0
B="nice -n 19 .venv/bin/python benchmarks/bench_matcher.py"
C="--cache /tmp/skrisk_cache"
for args in \
  "feature --dataset dblp_scholar" \
  "score --model hybrid --lr 3e-3" \
  "labels --model hybrid --lr 3e-3 --epochs 20 --patience 5" \
  "labels --model plain --lr 3e-3 --epochs 20 --patience 5" \
  "labels --model hybrid --class-weight none --no-scale-features --lr 1e-3 --epochs 20 --patience 5" \
  "full --dataset dblp_scholar --model hybrid --lr 3e-3 --epochs 10 --patience 3" \
  "full --dataset abt_buy --model hybrid --lr 3e-3 --max-length 32 --epochs 10 --patience 3" \
  "full --dataset dblp_scholar --model plain --lr 3e-3 --epochs 10 --patience 3" \
  ; do
  echo "== $args $(date -u +%H:%M) load $(cut -d' ' -f1 /proc/loadavg)"
  $B $args $C
done
