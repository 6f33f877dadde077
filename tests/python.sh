#!/bin/sh
# The Python package (python/memsim) against the build tree's libmemsim:
# tests/test_memsim.py.  Skips (77) where there is no Python 3 or no
# shared library.  Run by `make check` with MEMSIM and MSIM_TESTDATA.
set -u
top=$(cd "$(dirname "${MEMSIM:-./memsim}")" && pwd)
srcdir=$(cd "${srcdir:-$top}" && pwd)
PY=${PYTHON:-python3}
[ "$PY" = : ] && PY=python3
command -v "$PY" >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
lib=$top/.libs/libmemsim.so.1
[ -f "$lib" ] || { echo "SKIP: no shared libmemsim ($lib)"; exit 77; }
MEMSIM_LIBRARY=$lib PYTHONPATH=$srcdir/python PYTHONDONTWRITEBYTECODE=1 \
	srcdir=$srcdir exec "$PY" -B "$srcdir/tests/test_memsim.py"
