# Sourced by shell tests (. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"):
# $tmp, a folder removed at exit; a private TMPDIR inside it, so a scratch
# folder memsim leaves behind shows up there; fail, which counts; and
# finish NAME, the test's end.
tmp=$(mktemp -d /tmp/memsim-test-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
TMPDIR=$tmp/scratch
export TMPDIR
mkdir "$TMPDIR"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
finish() {
	[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
	echo "$1: all passed"
}
