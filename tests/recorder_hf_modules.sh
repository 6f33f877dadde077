#!/bin/sh
# memsim record --fake: Hugging Face's modules cache (HF_MODULES_CACHE,
# else $HF_HOME/modules: evaluate.load's metric scripts, transformers'
# trust_remote_code model code, datasets' scripts).  The libraries copy a
# script there with Python's open (which the recording sends to its
# scratch folder), add the folder to sys.path and import it: the import
# system reads the folder natively and found nothing
# (transformers' run_swag_no_trainer.py: evaluate.load("accuracy") of a
# local metric, "No module named 'evaluate_modules.metrics.accuracy...'").
# The cache goes to a folder of the scratch folder, as the datasets cache
# does (traces/memsim_record/host.py, Files): a view of the user's (its
# folders made again, its files symbolic links), so that a module cached
# before still imports; the user's cache is not written.  evaluate's
# metrics cache (HF_METRICS_CACHE, else $HF_HOME/metrics: each
# metric.add_batch's Arrow file, written through Python and read back by
# pyarrow natively at compute(): "another evaluation module instance is
# already using the local cache file") likewise.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import importlib, os, sys
home = os.environ.get("HF_HOME") or os.path.join(os.environ.get(
    "XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "huggingface")
cache = os.getenv("HF_MODULES_CACHE", os.path.join(home, "modules"))
d = os.path.join(cache, "new_mods", "h1")
os.makedirs(d, exist_ok=True)
for p in (os.path.join(cache, "new_mods", "__init__.py"),
          os.path.join(d, "__init__.py")):
    open(p, "w").close()
with open(os.path.join(d, "metric.py"), "w") as f:
    f.write("VALUE = 42\n")
sys.path.append(cache)
importlib.invalidate_caches()
print("new", importlib.import_module("new_mods.h1.metric").VALUE)
print("old", importlib.import_module("old_mods.metric").VALUE)
mc = os.getenv("HF_METRICS_CACHE", os.path.join(home, "metrics"))
os.makedirs(os.path.join(mc, "acc", "default"), exist_ok=True)
p = os.path.join(mc, "acc", "default", "default_experiment-1-0.arrow")
with open(p, "wb") as f:
    f.write(b"abc")
fd = os.open(p, os.O_RDONLY)
print("metrics", os.read(fd, 3).decode())
os.close(fd)
import torch
x = torch.zeros(4, device="cuda")
PY
for how in home modules; do
	rm -rf "$tmp/hf" && mkdir -p "$tmp/hf/modules/old_mods"
	: >"$tmp/hf/modules/old_mods/__init__.py"
	echo "VALUE = 7" >"$tmp/hf/modules/old_mods/metric.py"
	if [ $how = home ]; then
		set -- env -u HF_MODULES_CACHE HF_HOME="$tmp/hf"
	else
		set -- env HF_HOME="$tmp/elsewhere" HF_MODULES_CACHE="$tmp/hf/modules"
	fi
	(cd "$tmp" && "$@" PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 \
		$MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
		>"$tmp/err" 2>&1 || fail "$how: record: $(tail -3 "$tmp/err")"
	for want in "new 42" "old 7" "metrics abc"; do
		grep -qxF "$want" "$tmp/err" || fail "$how: '$want' not in: $(cat "$tmp/err")"
	done
	got=$(ls -A "$tmp/hf/modules")
	[ "$got" = old_mods ] || fail "$how: the user's cache written: $got"
	got=$(ls -A "$tmp/hf")
	[ "$got" = modules ] || fail "$how: the user's metrics cache made: $got"
	[ ! -e "$tmp/elsewhere" ] || fail "$how: $tmp/elsewhere made"
done
finish recorder_hf_modules.sh
