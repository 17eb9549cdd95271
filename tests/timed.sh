#!/usr/bin/env bash
# The suite's log compiler: runs one test and ends its log with a line
# saying when it started (seconds since the epoch) and how long it took,
# which ./dev.sh check gathers into a table after the suite.
start=$(date +%s)
"$@"
rc=$?
echo "timed: $(basename "${*: -1}") started $start took $(($(date +%s) - start))s"
exit "$rc"
