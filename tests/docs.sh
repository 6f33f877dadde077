#!/bin/sh
# The documentation agrees with the program: the man page names every
# command of `memsim --help` and, in that command's section, every option
# of its --help; the bash completion is valid bash and completes commands,
# options and policies; the README's sample `run` output and schema version
# are what the program prints and writes.  Run by `make check`.
set -u
MEMSIM=${MEMSIM:-./memsim}
DATA=${MSIM_TESTDATA:-tests/data}
top=$DATA/../..
man=$top/docs/memsim.1
comp=$top/docs/memsim.bash
tmp=$(mktemp -d /tmp/memsim-docs-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# The man page as plain text: roff's \- is -, fonts dropped.
sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$man" >"$tmp/man.txt"
commands=$($MEMSIM --help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')
[ -n "$commands" ] || fail "no commands in memsim --help"
for c in $commands; do
	# `man memsim-$c` shows memsim(1).
	grep -qx '.so man1/memsim.1' "$top/docs/memsim-$c.1" 2>/dev/null ||
		fail "docs/memsim-$c.1 is not the page for 'man memsim-$c'"
	grep -q "^\.SS \"memsim $c\b" "$tmp/man.txt" || {
		fail "memsim.1 has no section for '$c'"; continue; }
	# The sections of c (gen has two), up to the next section.
	awk -v c="$c" '/^\.S[SH] /{on = index($0, "\"memsim " c " ") ||
		index($0, "\"memsim " c "\"")} on' "$tmp/man.txt" >"$tmp/sec"
	for o in $($MEMSIM "$c" --help 2>&1 | grep -o -e '--[a-z][a-z0-9-]*' | sort -u); do
		[ "$o" = --help ] && continue
		grep -q -e "$o\b" "$tmp/sec" ||
			fail "memsim.1, section $c, lacks $o (memsim $c --help has it)"
	done
done

# Bash completion: valid, and completing from the program itself.
bash -n "$comp" || fail "memsim.bash is not valid bash"
cat >"$tmp/comp.sh" <<EOF
. "$comp"
t() { COMP_WORDS=("\$@"); COMP_CWORD=\$((\${#COMP_WORDS[@]} - 1)); _memsim; echo "\${COMPREPLY[*]}"; }
t "$MEMSIM" ru
t "$MEMSIM" run --alloc
t "$MEMSIM" run --policy pyt
t "$MEMSIM" run -c max_split_size_mb:128,garbage
t "$MEMSIM" gen random --req
EOF
bash "$tmp/comp.sh" >"$tmp/comp.out" 2>&1 || fail "completion: $(cat "$tmp/comp.out")"
printf '%s\n' run --alloc-conf pytorch \
	max_split_size_mb:128,garbage_collection_threshold: --requests |
	diff - "$tmp/comp.out" >/dev/null ||
	fail "completion: $(cat "$tmp/comp.out")"

# README: the sample run output, line for line (paths as printed from the
# top of the source tree), and the schema version the store writes.
readme=$top/README.md
sed -n '/^    \$ \.\/memsim run --alloc-conf max_split_size_mb:128 /,/^$/p' "$readme" |
	sed -e '1d' -e '/^$/d' -e 's/^    //' >"$tmp/readme_run"
[ -s "$tmp/readme_run" ] || fail "README: no sample run output"
(cd "$top" && $MEMSIM run --alloc-conf max_split_size_mb:128 \
	tests/data/traces/gpt2_varlen.csv) >"$tmp/run" || fail "README run"
diff "$tmp/readme_run" "$tmp/run" >"$tmp/diff" ||
	fail "README's sample run output differs: $(cat "$tmp/diff")"
$MEMSIM run --db "$tmp/s.db" "$DATA/traces/bert_infer_varlen.csv" >/dev/null ||
	fail "run --db"
v=$(sqlite3 "$tmp/s.db" "SELECT value FROM meta WHERE key = 'schema_version'")
grep -q "^| \`meta\` | .*\`schema_version\` (\`$v\`)" "$readme" ||
	fail "README's schema table does not say schema_version $v"
grep -q "^One SQLite file, schema version $v " "$readme" ||
	fail "README does not say schema version $v"

# The quick start's first step is in every tree, the tarball's included
# (make distcheck runs this from the unpacked tarball).
[ -x "$top/build-aux/setup-debian" ] || fail "build-aux/setup-debian is missing"

# Every module of the recorder is installed and distributed: a module left
# out of memsim_record_PYTHON is missing from `make install` and the
# tarball, and the recorder fails there, not here.
for f in "$top"/traces/memsim_record/*.py; do
	m=$(basename "$f")
	grep -q "memsim_record/$m" "$top/traces/Makemodule.am" ||
		fail "traces/Makemodule.am does not install memsim_record/$m"
done

[ "$fails" -eq 0 ] && echo "docs: all passed"
[ "$fails" -eq 0 ]
