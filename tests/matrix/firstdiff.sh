# Sourced: firstdiff reads a comparison's output (compare.py,
# compare_post.py or compare_bt.py) on stdin and prints its first
# difference on one line, e.g.
#   #0 truth: C =[C]:-1 park(global) | report: C =[C]:-1 resume(field)
firstdiff() {
	awk '
	function squeeze(s) { gsub(/[ \t]+/, " ", s); sub(/^ /, "", s); return s }
	/^  ! #/ { a = $0; getline; print squeeze(substr(a, 5)) " | " squeeze($0); done = 1; exit }
	/^  ! gdb:/ { a = $0; getline; print squeeze(substr(a, 5)) " | " squeeze(substr($0, 5)); done = 1; exit }
	/^  [-+] #/ { print squeeze(substr($0, 5)); done = 1; exit }
	/^lua_version:|: not in the report|^thread [0-9]+ only in|^no Lua frame/ { print squeeze($0); done = 1; exit }
	/^! / { print squeeze(substr($0, 3)); done = 1; exit }
	{ if (!first && NF) first = $0 }
	END { if (!done) print squeeze(first) }'
}
