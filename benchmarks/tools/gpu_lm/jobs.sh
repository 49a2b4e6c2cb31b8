#!/bin/bash
# Many `benchmarks/bench_al.py` runs at once on a lent GPU machine (the `device` tool): one process per
# line of the job file $JOBS ("<name> <out subfolder> <bench_al.py arguments...>"; a name starting with
# "cpu_" runs with the GPU hidden), at most $PAR at a time, all stopped $GUARD seconds after the start.
# Records and logs are snapshotted to $OUT/al_jobs.tgz every 30 s, so a cut call still returns them.
# `.gpu/` (ignored by git, `carry: [".gpu"]`) is prepared as run.sh's header says, plus, for the RNN,
# `.gpu/site_rnn.tar.xz`: gensim 4.4.0, smart_open and wrapt (cp312 wheels unpacked, gensim/test and C
# sources removed, 3 MB); the model folder may travel as `.gpu/model.tar.xz` (tar -cJf, 41 MB). The tasks of $SETS are encoded once first by prebuild.py (the caches).
# Rehearse on the CPU: DRY=1 PY=.venv/bin/python JOBS=... SETS=... bash benchmarks/tools/gpu_lm/jobs.sh
set -u
T0=$(date +%s)
GUARD=${GUARD:-480}; PAR=${PAR:-24}
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
export W=${W:-/tmp/al_jobs}; rm -rf "$W"; mkdir -p "$W/logs"
if [ "${DRY:-0}" != 1 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/whl/*.whl || exit 3
  [ -f .gpu/site_rnn.tar.xz ] && tar -C /tmp/site -xJf .gpu/site_rnn.tar.xz
  export PYTHONPATH=/tmp/site:$PWD; PY=python3
  mkdir -p /tmp/lmdata && tar -C /tmp/lmdata -xJf .gpu/data.tar.xz && export SKRISK_DATA=/tmp/lmdata
  # the model folder as .gpu/model.tar.xz when the transfer's 64 MiB need the 5 MB xz saves
  [ -f .gpu/model.tar.xz ] && tar -C /tmp -xJf .gpu/model.tar.xz && export LM_MODEL=/tmp/model
else
  export PYTHONPATH=$PWD; PY=${PY:-python}
fi
export PYTHONHASHSEED=0 PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
export LM_MODEL=${LM_MODEL:-$PWD/.gpu/model} SKIP_SPEED=1
( while true; do nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader >> "$W/logs/smi.csv" 2>/dev/null; \
  sleep 10; done ) & SMI=$!
snap() { tar czf "$OUT/al_jobs.tgz.part" --exclude=cache -C "$(dirname "$W")" "$(basename "$W")" 2>/dev/null; [ $? -le 1 ] && mv -f "$OUT/al_jobs.tgz.part" "$OUT/al_jobs.tgz"; }
( while true; do sleep 30; snap; done ) & SNAP=$!
$PY benchmarks/tools/gpu_lm/prebuild.py > "$W/logs/prebuild.log" 2>&1; rc=$?; cat "$W/logs/prebuild.log"
if [ $rc != 0 ]; then echo "PREBUILD FAILED rc=$rc"; snap; kill $SMI $SNAP; exit 4; fi
echo "prebuild at $(( $(date +%s) - T0 ))s"
run_job() {  # name, out subfolder, bench_al arguments...
  local name=$1 sub=$2; shift 2
  local left=$(( GUARD - ($(date +%s) - T0) ))
  [ $left -le 20 ] && { echo "$name: not started (guard)"; return; }
  local hide=(); [[ $name == cpu_* ]] && hide=(env CUDA_VISIBLE_DEVICES=)
  local t=$(date +%s)
  "${hide[@]}" timeout -s INT -k 15 $left $PY benchmarks/bench_al.py "$@" --out "$W/$sub" --no-progress \
    > "$W/logs/$name.log" 2>&1
  echo "$name rc $? in $(( $(date +%s) - t ))s (ended at $(( $(date +%s) - T0 ))s)"
}
while read -r line; do
  [ -z "$line" ] && continue; [[ $line == \#* ]] && continue
  line=${line//@LM_MODEL@/$LM_MODEL}
  eval "set -- $line"
  while [ "$(jobs -rp | wc -l)" -ge $((PAR + 2)) ]; do wait -n; done
  run_job "$@" &
done < "$JOBS"
while [ "$(jobs -rp | wc -l)" -gt 2 ]; do wait -n; done
echo "benchmarks ended at $(( $(date +%s) - T0 ))s"
kill $SMI $SNAP 2>/dev/null
snap; ls -la "$OUT"; echo "done at $(( $(date +%s) - T0 ))s"
