#!/bin/sh
# `make install prefix=DIR` with a prefix configure was not given (issue
# 28): memsim.pc names DIR, the installed memsim finds the libmemsim of
# DIR (its RUNPATH, $ORIGIN/../lib) with no LD_LIBRARY_PATH and its
# recorder (lab/record.c), also once DIR is moved, and the installed
# Python package loads it (python/memsim/_build.py, written at install
# time) with no MEMSIM_LIBRARY.  Run by
# make check from the build tree (MEMSIM), with ${MAKE:-make}.
set -u
top=$(cd "$(dirname "${MEMSIM:-./memsim}")" && pwd)
srcdir=$(cd "${srcdir:-$top}" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/memsim-install-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
unset LD_LIBRARY_PATH MEMSIM_LIBRARY MEMSIM_PYTHONPATH
trace=$srcdir/tests/data/traces/gpt2_varlen.csv
dir=$tmp/p

${MAKE:-make} -C "$top" install prefix="$dir" >"$tmp/log" 2>&1 ||
	{ tail -20 "$tmp/log"; echo "FAIL: make install prefix=$dir"; exit 1; }

pc=$dir/lib/pkgconfig/memsim.pc
grep -qx "prefix=$dir" "$pc" || fail "memsim.pc: $(grep '^prefix=' "$pc")"
grep -qx "libdir=$dir/lib" "$pc" || fail "memsim.pc: $(grep '^libdir=' "$pc")"
grep -q '@' "$pc" && fail "memsim.pc: unsubstituted: $(grep '@' "$pc")"
if command -v pkg-config >/dev/null 2>&1; then
	got=$(PKG_CONFIG_PATH=$dir/lib/pkgconfig pkg-config --libs memsim)
	[ "$(echo $got)" = "-L$dir/lib -lmemsim" ] || fail "pkg-config --libs: $got"
fi

# The installed command, the figures of the build tree's.
num() { grep -v '"wall_ms"' "$1"; }
"$top/memsim" run --json "$trace" >"$tmp/want.json" || fail "memsim run"
check_bin() { # BINDIR LABEL
	v=$("$1/memsim" --version 2>&1) || fail "$2: memsim --version: $v"
	"$1/memsim" run --json "$trace" >"$tmp/got.json" 2>"$tmp/err" ||
		fail "$2: memsim run: $(cat "$tmp/err")"
	num "$tmp/got.json" >"$tmp/got"; num "$tmp/want.json" >"$tmp/want"
	cmp -s "$tmp/got" "$tmp/want" || fail "$2: memsim run --json differs"
	if command -v ldd >/dev/null 2>&1; then
		lib=$(ldd "$1/memsim" | sed -n 's/.*libmemsim.so.1 => \([^ ]*\).*/\1/p')
		case $lib in
		"$1/../lib/libmemsim.so.1") ;;
		*) fail "$2: memsim loads libmemsim from '$lib'" ;;
		esac
	fi
	# memsim record runs the recorder installed under the prefix: a
	# stand-in interpreter says which (the PYTHONPATH it is given).
	if [ -n "$py" ]; then
		rm -f "$tmp/pythonpath"
		"$1/memsim" record -o "$tmp/rec.csv" -- "$tmp/fake/python3" \
			x.py >/dev/null 2>&1
		pp=$(cat "$tmp/pythonpath" 2>/dev/null)
		[ "${pp%%:*}" = "$1/../${py#"$dir"/}" ] ||
			fail "$2: memsim record's recorder: '${pp%%:*}'"
	fi
}
py=$(ls -d "$dir"/lib/python3*/site-packages 2>/dev/null | head -1)
[ -f "$py/memsim_record/__main__.py" ] || py=
mkdir "$tmp/fake"
printf '#!/bin/sh\necho "$PYTHONPATH" >"%s"\nexit 3\n' "$tmp/pythonpath" \
	>"$tmp/fake/python3"
chmod +x "$tmp/fake/python3"
check_bin "$dir/bin" installed

# The installed Python package, by itself (no MEMSIM_LIBRARY), run by
# $PYTHON (the sanitizer build's wrapper preloads its runtime).
PY=${PYTHON:-python3}
[ "$PY" = : ] && PY=python3
if [ -n "$py" ] && [ -f "$py/memsim/__init__.py" ]; then
	PYTHONPATH=$py PYTHONDONTWRITEBYTECODE=1 "$PY" -B - "$dir" "$trace" \
		"$tmp/want.json" <<'PY' || fail "python"
import json, os, sys
import memsim
prefix, trace, want = sys.argv[1:]
lib = memsim._load()._name
assert lib == os.path.join(prefix, "lib", "libmemsim.so.1"), lib
want = json.load(open(want))
got = memsim.run(trace)
bad = [k for k, v in want.items() if k != "wall_ms" and
       (abs(got[k] - v) > 1e-6 if isinstance(v, float) else got[k] != v)]
assert not bad, bad
PY
fi

# A moved prefix: the RUNPATH is relative to the command.
mv "$dir" "$tmp/moved"
check_bin "$tmp/moved/bin" moved

[ $fails -eq 0 ] && echo "install: make install prefix=DIR: memsim.pc, memsim and the Python package use DIR"
exit $((fails > 0))
