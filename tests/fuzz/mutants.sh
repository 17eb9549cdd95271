#!/usr/bin/env bash
# A structure-aware mutation campaign (tests/fuzz/mutants.c) over
# fixture cores of five releases, under ASan and UBSan.
#
#   tests/fuzz/mutants.sh BUILDDIR COUNT OUTDIR [CELL...]
#
# (COUNT 0: summarise OUTDIR/results.tsv of an earlier run again.)
# COUNT mutants in all, spread evenly over the cores: each CELL's
# coroutines3 and crash cores (default: deb-5.1 src-5.2.4-O2 deb-5.3
# src-5.4.7-O0 src-5.5.0-O2), seed $LC_MUTANTS_SEED (1).  One mutant
# runs at a time.  Writes OUTDIR/results.tsv (a line per mutant: cell,
# then mutants' line), OUTDIR/summary.txt (what is printed), OUTDIR/bad/
# (every bad mutant as a fuzz_decode input and a spec), OUTDIR/err/ (the
# sanitizer reports), and writes one bad mutant of each class (outcome,
# field, what differs) into tests/fuzz/corpus/fuzz_decode/
# ($LC_MUTANTS_CORPUS, "" for none), where run-fuzz.sh replays it, and
# as a spec into tests/fuzz/specs/ ($LC_MUTANTS_SPECS, "" for none),
# where run-fuzz.sh runs the oracle on it.  Prints the counts: mutants,
# sanitizer reports, runs over 30 s, silent wrong answers and unmarked
# partial results by class, each with a command that reproduces one;
# exit 1 if any sanitizer report, run over 30 s or unmarked partial, or
# more silent answers from absurd edits of Lua data than
# $LC_MUTANTS_MAX_SILENT (default 0) — silent answers from plausible
# edits (a neighbouring value) and from machine-stack words are counted
# but pass.
#
# The short CI run is COUNT=300 (tests/run-fuzz.sh); the full campaign,
# by hand on any tree: make fuzz-mutants (COUNT=6000, about 8 min).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
count=$2
out=$3
shift 3
cells=${*:-deb-5.1 src-5.2.4-O2 deb-5.3 src-5.4.7-O0 src-5.5.0-O2}
fixtures=${LUACORE_MATRIX_DIR:-$build/fixtures/out}
fixtures=$(cd "$fixtures" && pwd)
seed=${LC_MUTANTS_SEED:-1}
corpus=${LC_MUTANTS_CORPUS-$here/corpus/fuzz_decode}
bin=$build/tests/fuzz/lf
[ "$count" = 0 ] || "$here/build.sh" "$build" "$bin" >/dev/null ||
	{ echo "FAIL: tests/fuzz/build.sh (clang and libclang-rt-14-dev needed)"; exit 1; }
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=0
mkdir -p "$out/bad" "$out/err"
out=$(cd "$out" && pwd)

cores=()
for c in $cells; do
	for s in coroutines3 crash; do
		[ -f "$fixtures/$c/$s/core" ] ||
			{ echo "FAIL: no fixture core $fixtures/$c/$s/core"; exit 1; }
		cores+=("$c/$s")
	done
done
t0=$(date +%s)
if [ "$count" != 0 ]; then
	: >"$out/results.tsv"
	per=$(( (count + ${#cores[@]} - 1) / ${#cores[@]} ))
	for cs in "${cores[@]}"; do
		d=$fixtures/$cs
		"$bin/mutants" -n "$per" -s "$seed" -e "$out/err" -w "$out/bad" -p "${cs//\//-}" \
			"$d/core" "$d/exe" 2>"$out/learn.log" | sed "s|^|$cs\t|" >>"$out/results.tsv"
		if [ "${PIPESTATUS[0]}" != 0 ]; then
			echo "FAIL: mutants could not learn $cs:"
			sed 's/^/    /' "$out/learn.log" | tail -5
			exit 1
		fi
	done
fi
secs=$(( $(date +%s) - t0 ))

# results.tsv: cell idx outcome mode class first-diff field edit nedits
# edits secs.  A class is (outcome, field, what differs).  A mutant that
# may give a state the process could really have been in is counted
# apart ("plausible"); the others' data is absurd and checkable:
#  - an edit to a neighbouring value (plus1, minus1-of, small, ptr-step);
#  - a pointer to another object of its field's own type (ptr-same: the
#    value of another field read by the same source line, or a string
#    of the same kind for a string);
#  - a local's startpc set to 0 (in scope from the function's start, as
#    every parameter is);
#  - a mutant whose every difference is a line inside its function's
#    lines ("line-inside": line info is not otherwise constrained; a
#    main chunk's lines run from 1 on, as Lua stores no end for it, and
#    "line-past-file" counts those past the end of the script's file,
#    which the report does not read) or a frame that became a tail call
#    and lost its name ("tail-unnamed": any Lua function may have been
#    tail called, and Lua names none that was), as the oracle
#    (mutants.c) judges them.
awk -F'\t' -v bin="$bin" -v fx="$fixtures" -v seed="$seed" -v secs="$secs" \
	-v classes="$out/classes.tsv" '
function edit_plausible(e) { return e == "plus1" || e == "minus1-of" || e == "small" || e == "ptr-step" || e == "ptr-same" }
function plausible_m() { return edit_plausible($8) || ($7 == "lv.startpc" && $8 == "zero") || $5 == "line-inside" || $5 == "line-past-file" || $5 == "tail-unnamed" }
# Words of a machine stack the unwinder reads (return addresses, saved
# registers): another valid return address gives another valid stack,
# as gdb and eu-stack would show it too.
function native(f) { return f ~ /^core_memory_read@|unwind\.c|^stack:/ }
{ n++; o[$3]++; if ($11 > 30) slow++
  if ($3 == "silent" || $3 == "unmarked" || $3 == "hang" || $3 == "sanitizer") {
	k = $3 "\t" $7 "\t" $5
	cnt[k]++
	if (plausible_m()) { pl[k]++; opl[$3]++; if ($5 == "line-past-file") opast[$3]++ }
	else if (native($7)) onat[$3]++
	if (!index(" " eds[k] " ", " " $8 " ")) eds[k] = eds[k] (eds[k] ? " " : "") $8
	split($1, cs, "/")
	if (!index(" " rel[k] " ", " " cs[1] " ")) rel[k] = rel[k] (rel[k] ? " " : "") cs[1]
	if (!(k in ex) || (expl[k] && !plausible_m())) {
		ex[k] = sprintf("%s/mutants -s %s --only %s %s/%s/core %s/%s/exe", bin, seed, $2, fx, $1, fx, $1)
		ex_d[k] = $6; expl[k] = plausible_m(); excell[k] = $1; exidx[k] = $2
	}
  }
}
END {
	printf "%d mutants over %d cores in %d s: %d same, %d marked partial, %d nothing shown (error)\n",
		n, cores, secs, o["same"], o["marked"], o["error"]
	printf "sanitizer reports: %d\nruns over 30 s: %d (hang %d)\n", o["sanitizer"], slow, o["hang"]
	printf "silent wrong answers: %d (%d of them from plausible edits, %d of those a main chunk line past its file; %d from machine-stack words)\n", o["silent"], opl["silent"], opast["silent"], onat["silent"]
	printf "unmarked partial results: %d (%d of them from plausible edits)\n", o["unmarked"], opl["unmarked"]
	m = 0
	for (k in cnt) keys[++m] = k
	for (i = 1; i <= m; i++)	# by count, descending
		for (j = i + 1; j <= m; j++)
			if (cnt[keys[j]] > cnt[keys[i]] || (cnt[keys[j]] == cnt[keys[i]] && keys[j] < keys[i])) {
				t = keys[i]; keys[i] = keys[j]; keys[j] = t
			}
	if (m) print "by class (outcome, field, what differs: mutants (plausible); edits; releases):"
	for (i = 1; i <= m; i++) {
		k = keys[i]; split(k, f, "\t")
		printf "  %-9s %-26s %-17s %4d (%d); %s; %s\n", f[1], f[2], f[3], cnt[k], pl[k], eds[k], rel[k]
		printf "      e.g. %s\n      %s\n", substr(ex_d[k], 1, 150), ex[k]
		printf "%s\t%s\t%s\t%s\t%s\n", excell[k], exidx[k], f[1], f[2], f[3] >classes
	}
	# The gate: silent answers from absurd edits of the Lua data the
	# report reads (not plausible ones, not machine-stack words).
	bad = o["sanitizer"] + slow + o["hang"] + o["unmarked"] + o["silent"] - opl["silent"] - onat["silent"]
	if (ENVIRON["LC_MUTANTS_MAX_SILENT"] != "" && bad <= ENVIRON["LC_MUTANTS_MAX_SILENT"] + 0 && o["sanitizer"] + slow + o["hang"] + o["unmarked"] == 0)
		gate = 0
	else
		gate = bad
	lim = ENVIRON["LC_MUTANTS_MAX_SILENT"] != "" ? " (at most " ENVIRON["LC_MUTANTS_MAX_SILENT"] " silent allowed)" : ""
	printf "%s mutants: %d of %d mutants bad (sanitizer, over 30 s, unmarked, silent from absurd Lua data)%s\n", gate ? "FAIL" : "PASS", bad, n, lim
	bad = gate
	exit bad ? 1 : 0
}' cores=${#cores[@]} "$out/results.tsv" | tee "$out/summary.txt"
status=${PIPESTATUS[0]}

# One reproducer of each class (outcome, field, what differs: the
# example above) into the corpus as a fuzz_decode input
# (mut-CELL-OUTCOME-FIELD-DIFF), where run-fuzz.sh replays it, and as a
# spec (addresses, new and old bytes, independent of what the decoder
# reads) into $LC_MUTANTS_SPECS (tests/fuzz/specs), where run-fuzz.sh
# runs the oracle on it again.  "" for either: none.
specs=${LC_MUTANTS_SPECS-$here/specs}
[ -f "$out/classes.tsv" ] || : >"$out/classes.tsv"
while IFS=$'\t' read -r cs idx outcome field diff; do
	name=$(echo "${cs//\//-}-$outcome-$field-$diff" | tr -c 'A-Za-z0-9.\n_-' '_')
	d=$fixtures/$cs
	if [ -n "$corpus" ] && [ -d "$corpus" ]; then
		"$bin/mutants" -s "$seed" --write-patch "$idx" "$corpus/mut-$name" \
			"$d/core" "$d/exe" 2>/dev/null
	fi
	if [ -n "$specs" ]; then
		mkdir -p "$specs"
		"$bin/mutants" -s "$seed" --write-spec "$idx" "$specs/$name.spec" \
			"$d/core" "$d/exe" 2>/dev/null
	fi
done <"$out/classes.tsv"
rm -f "$out/classes.tsv"
exit $status
