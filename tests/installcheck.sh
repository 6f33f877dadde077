#!/bin/sh
# make installcheck (and so make distcheck): the installed library as a
# user meets it.  tests/api_run.c is compiled against the installed
# memsim.h and libmemsim through pkg-config and must print the figures the
# installed `memsim run --json` prints, linked to the shared library and
# to the static one; the installed Python package must
# load the installed library by itself (no MEMSIM_LIBRARY) and agree.
# Environment: CC, PKG_CONFIG, BINDIR, LIBDIR, PKGCONFIGDIR, PYTHON,
# PYTHONDIR (PYTHON=: skips the Python part), srcdir.
set -u
tmp=$(mktemp -d /tmp/memsim-installcheck-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
trace=$srcdir/tests/data/traces/gpt2_varlen.csv
conf=max_split_size_mb:128

"$BINDIR/memsim" run --json -c "$conf" --cap 3GiB --keep-going "$trace" \
	>"$tmp/run.json" || fail "installed memsim run"
# "key value" lines of run --json, numbers as %.6f, wall_ms aside.
num6() { awk '$2 ~ /^-?[0-9]+\.[0-9]*$/ && NF == 2 { printf "%s %.6f\n", $1, $2; next } { print }'; }
sed -n 's/^  "\([^"]*\)": "\{0,1\}\(.*\)$/\1 \2/p' "$tmp/run.json" |
	sed 's/",\{0,1\}$//; s/,$//' | grep -v '^wall_ms ' | num6 >"$tmp/run.txt"

flags=$(PKG_CONFIG_PATH=$PKGCONFIGDIR $PKG_CONFIG --cflags --libs memsim) ||
	fail "pkg-config memsim"
# shellcheck disable=SC2086
$CC -o "$tmp/api_run" "$srcdir/tests/api_run.c" $flags -Wl,-rpath,"$LIBDIR" ||
	fail "api_run.c against the installed library"
"$tmp/api_run" "$trace" pytorch "$conf" cap=3GiB keep_going=1 >"$tmp/api.out" ||
	fail "api_run"
grep -v '^wall_ms \|^timeline ' "$tmp/api.out" | num6 >"$tmp/api.txt"
[ "$(wc -l <"$tmp/run.txt")" -gt 120 ] || fail "run --json: too few keys"
diff "$tmp/run.txt" "$tmp/api.txt" || fail "api_run and memsim run differ"

# The static library: the same program, libmemsim.a and its private libs.
if [ -f "$LIBDIR/libmemsim.a" ]; then
	sflags=$(PKG_CONFIG_PATH=$PKGCONFIGDIR $PKG_CONFIG --static --libs memsim |
		sed 's/-lmemsim//') || fail "pkg-config --static memsim"
	cflags=$(PKG_CONFIG_PATH=$PKGCONFIGDIR $PKG_CONFIG --cflags memsim)
	# shellcheck disable=SC2086
	$CC -o "$tmp/api_static" "$srcdir/tests/api_run.c" $cflags \
		"$LIBDIR/libmemsim.a" $sflags || fail "api_run.c against libmemsim.a"
	"$tmp/api_static" "$trace" pytorch "$conf" cap=3GiB keep_going=1 |
		grep -v '^wall_ms \|^timeline ' | num6 >"$tmp/static.txt" ||
		fail "api_run (static)"
	diff "$tmp/run.txt" "$tmp/static.txt" >/dev/null ||
		fail "api_run (static) and memsim run differ"
	objdump -p "$tmp/api_static" 2>/dev/null | grep -q 'NEEDED *libmemsim' &&
		fail "api_run (static) needs libmemsim.so"
fi

if [ "$PYTHON" != : ]; then
	env -u MEMSIM_LIBRARY PYTHONPATH="$PYTHONDIR" PYTHONDONTWRITEBYTECODE=1 \
		"$PYTHON" -B - "$trace" "$conf" "$tmp/run.json" "$PYTHONDIR" <<'PY' || fail "python"
import json, os, sys
import memsim
trace, conf, want, pydir = sys.argv[1:]
assert os.path.dirname(memsim.__file__).startswith(os.path.realpath(pydir)) or \
    memsim.__file__.startswith(pydir), memsim.__file__
want = json.load(open(want))
got = memsim.run(trace, alloc_conf=conf, cap="3GiB", keep_going=True)
for k, v in want.items():
    if k != "wall_ms":
        assert (abs(got[k] - v) < 1e-6 if isinstance(v, float) else got[k] == v), k
print("python: %d keys as memsim run" % len(got))
PY
fi
[ $fails -eq 0 ] && echo "installcheck: the installed library, C and Python, agree with memsim run"
exit $((fails > 0))
