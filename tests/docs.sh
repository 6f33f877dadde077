#!/bin/sh
# The documentation agrees with the program: the man page names every
# command of `memsim --help` and, in that command's section, every option
# of its --help; the bash completion is valid bash and completes commands,
# options and policies; the README's sample `run` output and the guide's
# schema version are what the program prints and writes; every memsim
# command of the README and docs/*.md has the options of its command and,
# unless marked, runs (below).  Run by `make check`.
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
# top of the source tree); the guide: the schema version the store writes.
readme=$top/README.md
guide=$top/docs/guide.md
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
grep -q "^| \`meta\` | .*\`schema_version\` (\`$v\`)" "$guide" ||
	fail "docs/guide.md's schema table does not say schema_version $v"
grep -q "^One SQLite file, schema version $v " "$guide" ||
	fail "docs/guide.md does not say schema version $v"

# The quick start's first step is in every tree, the tarball's included
# (make distcheck runs this from the unpacked tarball).
[ -x "$top/build-aux/setup-debian" ] || fail "build-aux/setup-debian is missing"

# README at most 600 lines (a newcomer reads it in ten minutes), and CI
# runs the README's test command.
[ "$(wc -l <"$readme")" -le 600 ] || fail "README.md is over 600 lines"
testcmd=$(sed -n '/^Run the tests:/,/^    ./{s/^    //p;}' "$readme")
[ -n "$testcmd" ] || fail "README: no test command after 'Run the tests:'"
grep -qF "$testcmd" "$top/.ci/run" ||
	fail ".ci/run does not run the README's test command '$testcmd'"
# Every page of docs/ is distributed (this test runs from the tarball too).
for f in "$top"/docs/*.md; do
	grep -q "docs/$(basename "$f")" "$top/Makefile.am" ||
		fail "Makefile.am does not distribute docs/$(basename "$f")"
done

# Every memsim command in a code block of the README and docs/*.md: its
# options are the command's (memsim CMD --help), and it runs, from a
# scratch folder where tests/ is the source tree's, unless it is a
# synopsis ([optional] parts, a|b, ...) or follows a line
# "<!-- docs.sh: options only -->" (it needs a GPU, PyTorch, a file of
# the reader's or a cluster).  A command that runs writes only under
# /tmp/ (here: the scratch folder), never into the source tree.  The
# quick start's command is the part of its line from "&& ./memsim".
cat >"$tmp/cmds.awk" <<'AWK'
/^<!-- docs\.sh: options only -->/ { only = 1; next }
/^ *```/ { fence = !fence; next }
{
	code = fence || /^    /
	if (!code) {
		if (NF && seen) { only = 0; seen = 0 }
		cont = ""
		next
	}
	line = $0
	sub(/^ +/, "", line)
	if (cont != "") line = cont " " line
	else start = FNR
	if (line ~ /\\$/) { sub(/ *\\$/, "", line); cont = line; next }
	cont = ""
	if (line !~ /^(\$ )?(\.\/)?memsim [a-z]/ &&
	    match(line, /&& (\.\/)?memsim [a-z]/))
		line = substr(line, RSTART + 3)
	if (line ~ /^(\$ )?(\.\/)?memsim [a-z]/) {
		sub(/^\$ /, "", line)
		sub(/  +#.*/, "", line)
		mode = (only || line ~ / \[|\||\.\.\./) ? "opt" : "run"
		print FILENAME ":" start "\t" mode "\t" line
		seen = 1
	}
}
AWK
awk -f "$tmp/cmds.awk" "$readme" "$top"/docs/*.md >"$tmp/cmds"
case $MEMSIM in
/*) abs=$MEMSIM ;;
*/*) abs=$PWD/$MEMSIM ;;
*) abs=$(command -v "$MEMSIM") ;;
esac
mkdir "$tmp/ex" "$tmp/ex/tmp"
ln -s "$(cd "$top" && pwd)/tests" "$tmp/ex/tests"
ln -s "$abs" "$tmp/ex/memsim"
nrun=0 nopt=0
tab=$(printf '\t')
cmdlist=" $(echo $commands) "
while IFS=$tab read -r where mode cmd; do
	set -f
	# shellcheck disable=SC2086
	set -- $cmd
	set +f
	c=$2
	# Output lines such as "memsim replayed the trace ..." are no command.
	case $cmdlist in *" $c "*) ;; *) continue ;; esac
	$MEMSIM "$c" --help >"$tmp/help" 2>&1
	shift 2
	prev=
	for w in "$@"; do
		[ "$w" = -- ] && break
		case $w in
		--*=*) o=${w%%=*} ;;
		--[a-z]*|-[a-zA-Z]) o=$w ;;
		*) o= ;;
		esac
		o=${o%%[!a-zA-Z0-9-]*}
		if [ -n "$o" ] && ! grep -q -e "$o\b" "$tmp/help"; then
			fail "$where: memsim $c has no option $o"
		fi
		case $c:$prev in
		report:--db|report:-d|plot:--db|plot:-d) ;;	# they only read it
		*:-o|*:--db|*:-d|*:--plot|*:--segments|*:--export|*:--keep)
			case $mode:$w in
			opt:*|*:/tmp/*) ;;
			*) fail "$where: memsim $c writes $w, not under /tmp/" ;;
			esac ;;
		esac
		prev=$w
	done
	[ "$mode" = run ] || { nopt=$((nopt + 1)); continue; }
	nrun=$((nrun + 1))
	run=$(printf '%s\n' "$cmd" | sed -e "s|/tmp/|$tmp/ex/tmp/|g" \
		-e 's|^memsim |./memsim |')
	(cd "$tmp/ex" && sh -c "$run") >"$tmp/out" 2>&1 ||
		fail "$where: '$cmd' failed: $(tail -2 "$tmp/out")"
done <"$tmp/cmds"
[ "$nrun" -ge 10 ] || fail "only $nrun commands of the documentation run"
echo "docs: $nrun commands run, $nopt checked for their options"

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
