# shellcheck shell=bash
# Sourced: firstdiff reads a comparison's output (compare.py,
# compare_post.py or compare_bt.py) on stdin and prints its first
# difference on one line, e.g.
#   #0 truth: C =[C]:-1 park(global) | report: C =[C]:-1 resume(field)
#   resume chain: truth 0x1 -> 0x2 | report 0x2 -> 0x1
firstdiff() {
	awk '
	function squeeze(s) { gsub(/[ \t]+/, " ", s); sub(/^ /, "", s); sub(/ $/, "", s); return s }
	# compare_post.py: a section per check.
	/^[A-Za-z][^:]*: MISMATCH/ { sect = $0; sub(/: MISMATCH.*/, "", sect); next }
	/^  (\[[0-9]+\] )?[!+-] / {
		line = $0
		sub(/^  (\[[0-9]+\] )?[!+-] /, "", line)
		# The report side of a "!" line is the next line.
		if ($0 ~ /^  (\[[0-9]+\] )?! / && (getline nx) > 0 && nx ~ /^ +(! )?(report|inspect)/) {
			sub(/^ +(! )?/, "", nx)
			line = line " | " nx
		}
		print (sect != "" ? sect ": " : "") squeeze(line)
		done = 1
		exit
	}
	/^lua_version:|: not in the report|^thread [0-9]+ only in|^no Lua frame/ { print squeeze($0); done = 1; exit }
	{ if (first == "" && NF) first = $0 }
	END { if (!done) print squeeze(first) }'
}
