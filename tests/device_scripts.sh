#!/bin/sh
# The scripts that run on a GPU machine (validate/device/, and the bridge
# validate/torch_replay.py) cannot run here, but they are kept working as
# far as this machine can tell: every Python script compiles, every shell
# script parses, and the one reader of the files they replay,
# validate/replayfile.py, reads what memsim writes: the request file of
# `memsim validate --mode torch` (written by validate/torch.c, handed to a
# stand-in bridge here) request by request, and a device-trace CSV's
# requests.  Needs python3 (standard library only); skips (77) without it.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
PY=python3
command -v "$PY" >/dev/null 2>&1 || { echo "no python3: skipped"; exit 77; }

# Compiled into $tmp: the source tree may be read-only (make distcheck).
for f in "$SRC"/validate/*.py "$SRC"/validate/device/*.py; do
	"$PY" -c 'import py_compile, sys
py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)' \
		"$f" "$tmp/c.pyc" 2>"$tmp/err" ||
		fail "$f does not compile: $(tail -1 "$tmp/err")"
done
for f in "$SRC"/validate/device/*.sh; do
	case $(head -1 "$f") in
	*bash*) bash -n "$f" 2>"$tmp/err" ;;
	*) sh -n "$f" 2>"$tmp/err" ;;
	esac || fail "$f does not parse: $(cat "$tmp/err")"
done
# Every script of the folder is distributed.
for f in "$SRC"/validate/device/*; do
	grep -q "device/$(basename "$f")\b" "$SRC/validate/Makemodule.am" ||
		fail "validate/Makemodule.am does not distribute $f"
done

# A trace with two streams, a free, an empty_cache() and a malloc the
# recording saw fail (an oom row).
cat >"$tmp/t.csv" <<'EOF'
seq,time_us,action,addr,size,stream
0,1,alloc,4096,1000,0
1,2,alloc,8192,3000000,7
2,3,free_requested,4096,1000,0
3,4,free_completed,4096,1000,0
4,5,empty_cache,0,0,0
5,6,segment_free,139000000,2097152,0
6,7,oom,0,99999999999,0
7,8,free_completed,8192,3000000,7
EOF
# The stand-in bridge: memsim runs it as PYTHON torch_replay.py REQS CAP;
# it prints the requests as replayfile.requests() reads them.
cat >"$tmp/bridge" <<EOF
#!/bin/sh
"$PY" - "\$2" >"$tmp/requests" <<'PYEOF'
import sys
sys.path.insert(0, "$SRC/validate")
import replayfile
for r in replayfile.requests(sys.argv[1]):
    print(r.op, r.id, r.size, r.stream)
PYEOF
echo "oom -1"
EOF
chmod +x "$tmp/bridge"
$MEMSIM validate --mode torch --python "$tmp/bridge" "$tmp/t.csv" \
	>/dev/null 2>"$tmp/err" || fail "validate: $(cat "$tmp/err")"
# Block ids are the request stage's dense ids (0, 1, ..., reused once
# freed: the oom row's malloc takes 0 again); it is
# the x, which the bridge frees at once; free_requested is no request.
cat >"$tmp/want" <<'EOF'
a 0 1000 0
a 1 3000000 7
f 0 0 None
e None 0 None
x 0 99999999999 0
f 1 0 None
EOF
diff "$tmp/want" "$tmp/requests" >"$tmp/diff" ||
	fail "replayfile.requests: $(cat "$tmp/diff")"

"$PY" - "$SRC/validate" "$tmp/t.csv" >"$tmp/rows" 2>&1 <<'EOF' ||
import sys
sys.path.insert(0, sys.argv[1])
import replayfile
for r in replayfile.trace_requests(sys.argv[2]):
    print(r["action"], r["addr"], r["size"], r["stream"])
EOF
	fail "trace_requests: $(cat "$tmp/rows")"
printf '%s\n' "alloc 4096 1000 0" "alloc 8192 3000000 7" \
	"free_completed 4096 1000 0" "free_completed 8192 3000000 7" |
	diff - "$tmp/rows" >"$tmp/diff" ||
	fail "replayfile.trace_requests: $(cat "$tmp/diff")"

# A line that is not a request is an error naming the file and line.
printf 'a 0 512 0\nq 1\n' >"$tmp/bad.req"
"$PY" - "$SRC/validate" "$tmp/bad.req" >"$tmp/out" 2>&1 <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import replayfile
try:
    list(replayfile.requests(sys.argv[2]))
except ValueError as e:
    print(e)
EOF
grep -q "bad.req:2: not a request: 'q 1'" "$tmp/out" ||
	fail "bad request line: $(cat "$tmp/out")"

finish device_scripts.sh
