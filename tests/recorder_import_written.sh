#!/bin/sh
# A module the script writes during the recording and then imports
# (YOLOv6's Config.fromfile: shutil.copyfile of the config file into a
# tempfile.TemporaryDirectory, put on sys.path, importlib.import_module;
# a package written into a folder the script made): the writes go to the
# recorder's scratch folder, and Python's import system, which lists and
# reads folders natively, found nothing ("No module named
# '_tempconfig'").  The import must find the scratch copy, as every read
# by path does (docs/recording-boundary.md), and nothing may be left in
# the working folder.  (The program's output comes on the recorder's
# stderr.  Needs PyTorch; skips, 77, without.)
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
script=$(cd "$(dirname "${MSIM_TESTDATA:-tests/data}/../recorder/import_written.py")" && pwd)/import_written.py
mkdir "$tmp/work"
(cd "$tmp/work" && $MEMSIM record --fake -o "$tmp/w.csv" -- "$PY" "$script") \
	>"$tmp/out" 2>&1 || fail "record: $(tail -5 "$tmp/out")"
grep -q "^imported written 3 5 __init__.py" "$tmp/out" || fail "import: $(tail -5 "$tmp/out")"
peak() { $MEMSIM run --json "$1" | tr ',' '\n' | grep '"allocated_bytes.all.peak"' | tr -dc 0-9; }
[ "$(peak "$tmp/w.csv")" = $(( (3 + 5) << 20 )) ] || fail "peak $(peak "$tmp/w.csv")"
[ -z "$(ls -A "$tmp/work")" ] || fail "left in the working folder: $(ls -A "$tmp/work")"
finish recorder_import_written
