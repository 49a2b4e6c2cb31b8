#!/bin/bash
# LMMatcher active learning on a lent GPU machine (the `device` tool): 3 seeds x strategies, Abt-Buy
# (seed set 200, batches of 300, to 2,300 labels, 256 tokens) and DBLP-Scholar (seed set 200, batches of
# 200, to 1,000 labels, 128 tokens), every run its own process, all at once on one GPU.
#
# Prepare once, here (`.gpu/` is ignored by git and travels with `carry: [".gpu"]`):
#   echo /.gpu/ >> .git/info/exclude; mkdir -p .gpu/model .gpu/whl
#   # the offline MiniLM cast to fp16 (45 MB, under the 64 MiB transfer): config.json, tokenizer.json,
#   # tokenizer_config.json, special_tokens_map.json copied from skrisk.matchers.offline_model_path(), and
#   # model.safetensors re-saved with safetensors.torch.save_file({k: v.half() ...}) (LMMatcher loads it as float32)
#   python -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 -d .gpu/whl rapidfuzz==3.14.6 skorch==1.4.0
#   tar -C $SKRISK_DATA -cJf .gpu/data.tar.xz abt_buy dblp_scholar README.md MANIFEST.json
# Rehearse on the CPU with tiny settings: DRY=1 PY=.venv/bin/python bash benchmarks/tools/gpu_lm/run.sh
# The runs of benchmarks/results/al_lm_gpu (2026-11-27, one H200):
#   (run with the record names of that day, risk_pre2w = skrisk's default and risk = the paper's method;
#   benchmarks/tools/rename_records.py renamed the records to the registry's names afterwards)
#   GUARD=530 bash benchmarks/tools/gpu_lm/run.sh        # risk, entropy, random; DBLP validation 2,000
#   SKIP_SPEED=1 GUARD=360 STRATS_ABT="risk_paper coreset badge" STRATS_DBLP="risk entropy random" \
#     DBLP_VALID="--threads 1" SETS='{"abt": {"dataset": "abt_buy"}, "dblp": {"dataset": "dblp_scholar"}}' \
#     bash benchmarks/tools/gpu_lm/run.sh                # + the paper's risk_paper, coreset, badge; DBLP full validation
set -u
T0=$(date +%s)
GUARD=${GUARD:-470}          # seconds after start when the benchmarks are stopped
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
export W=${W:-/tmp/al_lm}; rm -rf "$W"; mkdir -p "$W/logs"
if [ "${DRY:-0}" != 1 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/whl/*.whl || exit 3
  export PYTHONPATH=/tmp/site:$PWD
  PY=python3
else
  export PYTHONPATH=$PWD; PY=${PY:-python}
fi
export PYTHONHASHSEED=0 PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
mkdir -p /tmp/lmdata && tar -C /tmp/lmdata -xJf .gpu/data.tar.xz && export SKRISK_DATA=/tmp/lmdata
export LM_MODEL=$PWD/.gpu/model
if [ "${DRY:-0}" = 1 ]; then
  SUB='"max_pool": 300, "max_valid": 100, "max_test": 200,'
  ABT=(--seed-size 40 --batch 20 --rounds 3); DBLP=(--seed-size 40 --batch 20 --rounds 2); SEEDS=1; EPA='"max_epochs": 1, "warm_epochs": 1'; EPD="$EPA"
else
  SUB=''; ABT=(--seed-size 200 --batch 300 --rounds 8); DBLP=(--seed-size 200 --batch 200 --rounds 5); SEEDS=3; EPA='"max_epochs": 20, "warm_epochs": 4'; EPD='"max_epochs": 10, "warm_epochs": 3'
fi
if [ "${DRY:-0}" = 1 ]; then
  export SETS='{"abt": {"dataset": "abt_buy", "max_pool": 300, "max_valid": 100, "max_test": 200}, "dblp": {"dataset": "dblp_scholar", "max_pool": 300, "max_valid": 100, "max_test": 200}}'
else
  export SETS=${SETS:-'{"abt": {"dataset": "abt_buy"}, "dblp": {"dataset": "dblp_scholar", "max_valid": 2000}}'}
fi
( while true; do nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader >> "$W/logs/smi.csv" 2>/dev/null; \
  sleep 10; done ) & SMI=$!
snap() { tar czf "$OUT/al_lm.tgz.part" --exclude=cache -C "$(dirname "$W")" "$(basename "$W")" 2>/dev/null; [ $? -le 1 ] && mv -f "$OUT/al_lm.tgz.part" "$OUT/al_lm.tgz"; }
( while true; do sleep 30; snap; done ) & SNAP=$!
[ -n "${SKIP_SPEED:-}" ] && export SKIP_SPEED
$PY benchmarks/tools/gpu_lm/prebuild.py > "$W/logs/prebuild.log" 2>&1; rc=$?; cat "$W/logs/prebuild.log"
if [ $rc != 0 ]; then echo "PREBUILD FAILED rc=$rc"; snap; kill $SMI $SNAP; exit 4; fi
LEFT=$(( GUARD - ($(date +%s) - T0) )); echo "prebuild at $(( $(date +%s) - T0 ))s; benchmarks get ${LEFT}s"
pids=()
DV=${DBLP_VALID:---max-valid 2000}
for seed in $(seq 0 $((SEEDS - 1))); do
  for strat in ${STRATS_ABT:-risk entropy random}; do
    timeout -s INT -k 15 $LEFT $PY benchmarks/bench_al.py --dataset abt_buy --matcher lm "${ABT[@]}" \
      --seeds $((seed + 1)) --first-seed $seed --strategies $strat --risk-epochs 300 --threads 1 --no-progress \
      --out "$W/abt" $( [ "${DRY:-0}" = 1 ] && echo --max-pool 300 --max-valid 100 --max-test 200 ) \
      --lm-params "{\"model\": \"$LM_MODEL\", \"warm_start\": true, \"max_length\": 256, $EPA}" \
      > "$W/logs/abt_${strat}_${seed}.log" 2>&1 & pids+=($!)
  done
  for strat in ${STRATS_DBLP:-risk entropy random}; do
    timeout -s INT -k 15 $LEFT $PY benchmarks/bench_al.py --dataset dblp_scholar --matcher lm "${DBLP[@]}" \
      --seeds $((seed + 1)) --first-seed $seed --strategies $strat --risk-epochs 300 --threads 1 --no-progress \
      --out "$W/dblp" $( [ "${DRY:-0}" = 1 ] && echo --max-pool 300 --max-valid 100 --max-test 200 || echo $DV ) \
      --lm-params "{\"model\": \"$LM_MODEL\", \"warm_start\": true, \"max_length\": 128, $EPD}" \
      > "$W/logs/dblp_${strat}_${seed}.log" 2>&1 & pids+=($!)
  done
done
for p in "${pids[@]}"; do wait $p; echo "pid $p rc $?"; done
echo "benchmarks ended at $(( $(date +%s) - T0 ))s"
for f in "$W"/logs/*_*.log; do echo "== $f"; tail -3 "$f"; done
kill $SMI $SNAP 2>/dev/null
snap; ls -la "$OUT"; echo "done at $(( $(date +%s) - T0 ))s"
