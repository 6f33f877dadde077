#!/bin/sh
# The one-line reason a corpus program's run failed, from its log (run.sh's
# NAME.log): the last exception line of a Python traceback, else the last
# line that names an error or a signal, else the log's last line.
#   sh tests/corpus/reason.sh LOG
l=$(grep -E '^[A-Za-z_][A-Za-z0-9_.]*(Error|Exception|Exit|Interrupt)(:|$)' "$1" | tail -n 1)
[ -n "$l" ] || l=$(grep -i -E 'error|signal|killed|abort|timed out' "$1" | tail -n 1)
[ -n "$l" ] || l=$(grep -v '^ *$' "$1" | tail -n 1)
echo "$l" | cut -c1-200
