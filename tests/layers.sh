#!/bin/sh
# The floors of the tree (README, "Code map"): a folder may include its own
# headers and those of the floors below it, never one above.
#   cli -> lib -> lab -> {plots, validate} -> {policies, traces} -> sim
# lib/ is the public API (memsim.h); memsim.h itself includes no folder.
# Fails naming every include that runs up a floor or sideways, and every
# use of SQLite outside the results store (sim/results*.c, results_int.h).
set -u
top=${srcdir:-$(dirname "$0")/..}
cd "$top" || exit 99

# allowed FOLDER: the folders FOLDER may include (itself included).
allowed() {
	case $1 in
	sim)      echo "sim" ;;
	policies) echo "policies sim" ;;
	traces)   echo "traces sim" ;;
	plots)    echo "plots policies traces sim" ;;
	validate) echo "validate policies traces sim" ;;
	lab)      echo "lab plots validate policies traces sim" ;;
	lib)      echo "lib lab plots validate policies traces sim" ;;
	cli)      echo "cli lib lab plots validate policies traces sim" ;;
	esac
}

bad=0
for dir in sim policies traces plots validate lab lib cli; do
	[ -d "$dir" ] || { echo "layers: folder $dir is missing"; bad=1; continue; }
	ok=$(allowed "$dir")
	for f in "$dir"/*.c "$dir"/*.h; do
		[ -f "$f" ] || continue
		for inc in $(sed -n 's|^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\)/.*".*|\1|p' "$f"); do
			case " $ok " in
			*" $inc "*) ;;
			*) echo "layers: $f includes $inc/, above or beside $dir/"
			   bad=1 ;;
			esac
		done
	done
done
# The installed header stands alone: system headers only.
if [ -f lib/memsim.h ] && grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' lib/memsim.h; then
	echo "layers: lib/memsim.h includes a header of the tree"; bad=1
fi
[ $bad -eq 0 ] && echo "layers: every include points down"

# The results store hides its schema: sim/results.c and its parts
# (sim/results_*.c, sim/results_int.h) are the only code that speaks SQL (includes sqlite3.h, calls sqlite3_*(), holds a connection or
# a statement); everything else reads and writes through sim/results.h.
sql=0
for dir in sim policies traces plots validate lab lib cli; do
	for f in "$dir"/*.c "$dir"/*.h; do
		[ -f "$f" ] || continue
		case $f in sim/results.c|sim/results_*.c|sim/results_int.h) continue ;; esac
		if grep -nE 'sqlite3\.h|sqlite3_[a-z0-9_]+[[:space:]]*\(|sqlite3(_stmt)?[[:space:]]*\*' \
			"$f" | sed "s|^|layers: $f:|; s|\$| (SQL outside sim/results.c)|" |
			grep .; then
			sql=1
		fi
	done
done
[ $sql -eq 0 ] && echo "layers: only sim/results*.c speak SQL"
[ $sql -eq 0 ] || bad=1
exit $bad
