#!/bin/sh
# The table of tests/allocconf.sh against PyTorch's own parser: the CPU
# build of torch parses with the generic half of it
# (torch._C._accelerator_setAllocatorSettings), whose answers are the
# "cpu" column.  The CUDA half (unknown keys, the CUDA-only keys' values)
# needs a CUDA build; the "cuda" column follows its source.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
DATA=${MSIM_TESTDATA:-tests/data}
"$PY" - "$DATA/allocconf.tsv" >"$tmp/got" <<'PYEOF' || fail "the parser could not be run"
import sys
import torch
parse = torch._C._accelerator_setAllocatorSettings
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        continue
    conf, cuda, cpu = line.rstrip("\n").split("\t")
    parse("large_segment_size_mb:20")  # the default: earlier rows set it
    try:
        parse(conf)
        got = "yes"
    except Exception:
        got = "no"
    print("%s\t%s\t%s" % (conf, cpu, got))
parse("")
PYEOF
n=$(wc -l <"$tmp/got")
[ "$n" -ge 60 ] || fail "only $n strings parsed"
awk -F'\t' '$2 != $3 { print "FAIL: torch says " $3 " to \x27" $1 "\x27, the table " $2 }' "$tmp/got" >"$tmp/bad"
[ -s "$tmp/bad" ] && { cat "$tmp/bad"; fail "$(wc -l <"$tmp/bad") strings differ"; }
finish allocconf_torch
