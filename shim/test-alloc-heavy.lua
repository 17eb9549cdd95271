-- test-alloc-heavy.lua [ROUNDS]: a fixed amount of allocation-heavy work
-- of the common kinds (string building, small records with a nested
-- array, closures), with the collector running.  Prints a checksum that
-- depends on neither addresses nor timing, to compare runs.  Under a host
-- that has now_s (lchost), the wall and CPU time the work took, as the
-- script itself measured them, go to stderr.
local rounds = tonumber(arg and arg[1] or (...)) or 3000
local fmt, concat = string.format, table.concat
local sum = 0
local now = rawget(_G, "now_s")
local w0, c0 = now and now(), os.clock()
for r = 1, rounds do
	local parts = {}
	for i = 1, 200 do
		parts[#parts + 1] = fmt("%d:%s", i, "item" .. (i + r))
	end
	sum = sum + #concat(parts, ",")
	local list = {}
	for i = 1, 200 do
		list[i] = { id = i, name = "n" .. (i % 97), tags = { i, r } }
	end
	sum = sum + #list
	local fs = {}
	for i = 1, 200 do
		fs[i] = function() return i + r end
	end
	sum = sum + fs[200]()
end
print(string.format("rounds %d checksum %.0f", rounds, sum))
if now then
	io.stderr:write(string.format("test-alloc-heavy: the work took %.6f s wall, %.6f s CPU\n",
				      now() - w0, os.clock() - c0))
end
