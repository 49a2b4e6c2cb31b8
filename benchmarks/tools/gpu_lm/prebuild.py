"""Device prebuild for benchmarks/tools/gpu_lm/run.sh: versions, the encoded tasks (cache), a CUDA sanity fit
of LMMatcher, and (unless SKIP_SPEED) its training and scoring throughput alone on the device."""
import json, os, sys, time
t0 = time.time()
import numpy as np, torch, sklearn, transformers, pandas
print(json.dumps({"python": sys.version.split()[0], "torch": torch.__version__, "cuda": torch.cuda.is_available(),
                  "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
                  "transformers": transformers.__version__, "sklearn": sklearn.__version__,
                  "numpy": np.__version__, "pandas": pandas.__version__}), flush=True)
from pathlib import Path
from skrisk.experiments import build_task
from skrisk.matchers import LMMatcher
W = Path(os.environ["W"])
dry = os.environ.get("DRY") == "1"
sets = json.loads(os.environ["SETS"])
task = None
tasks = {}
for name, s in sets.items():
    t = time.time()
    kind = s.get("matcher", "lm")
    built = build_task(s["dataset"], matcher=kind, cache_dir=W / name / "cache", max_pool=s.get("max_pool"),
                      max_valid=s.get("max_valid"), max_test=s.get("max_test"))
    print(name, kind, "pool", len(built.pool), "valid", len(built.valid), "test", len(built.test),
          f"{time.time() - t:.1f}s", flush=True)
    tasks[name] = built
    task = built if kind == "lm" else task
if task is None:
    print("prebuild done (no LM task)", flush=True); sys.exit(0)
# sanity: a CUDA fit + scoring on a few dozen pairs of the last task
rng = np.random.default_rng(0)
y = np.asarray(task.y)
pos = np.concatenate([rng.choice(task.pool[y[task.pool] == 1], 8, replace=False),
                      rng.choice(task.pool[y[task.pool] == 0], 40, replace=False)])
val = np.concatenate([task.valid[y[task.valid] == 1][:8], task.valid[y[task.valid] == 0][:40]])
t = time.time()
m = LMMatcher(model=os.environ["LM_MODEL"], max_epochs=2, max_length=64, random_state=0)
m.fit(task.X[pos], y[pos], X_valid=task.X[val], y_valid=y[val])
P, H = m.predict_proba_and_represent(task.X[task.pool[:300]])
print("sanity", m.device_, P.shape, H.shape, m.history_, f"{time.time() - t:.1f}s", flush=True)
assert np.isfinite(P).all() and np.isfinite(H).all()
if os.environ.get("SKIP_SPEED"):
    print("prebuild done (no speed)", flush=True); sys.exit(0)
# one process alone on the device: training and scoring throughput at Abt-Buy's settings
ta = tasks["abt"]
ya = np.asarray(ta.y)
n_fit, n_score = (40, 100) if dry else (1000, len(ta.pool))
fit_idx = rng.choice(ta.pool, n_fit, replace=False)
if ya[fit_idx].min() == ya[fit_idx].max():
    fit_idx[0] = ta.pool[ya[ta.pool] == 1][0]; fit_idx[1] = ta.pool[ya[ta.pool] == 0][0]
m2 = LMMatcher(model=os.environ["LM_MODEL"], max_epochs=1, max_length=256, random_state=0)
if torch.cuda.is_available():
    torch.cuda.synchronize()
t = time.time(); m2.fit(ta.X[fit_idx], ya[fit_idx])
if torch.cuda.is_available():
    torch.cuda.synchronize()
fit_s = time.time() - t
t = time.time(); P2, H2 = m2.predict_proba_and_represent(ta.X[ta.pool[:n_score]])
score_s = time.time() - t
print("speed", json.dumps({"device": m2.device_, "max_length": 256, "fit_pairs": int(n_fit), "fit_epochs": 1,
      "fit_s": round(fit_s, 2), "train_pairs_per_s": round(n_fit / fit_s, 1), "scored_pairs": int(n_score),
      "score_s": round(score_s, 2), "scored_pairs_per_s": round(n_score / score_s, 1),
      "peak_gpu_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1) if torch.cuda.is_available() else None}), flush=True)
print(f"prebuild done {time.time() - t0:.1f}s", flush=True)
