-- test-alloc-known.lua [N]: allocates a known number of bytes, with the
-- collector stopped so that nothing is freed and collectgarbage("count")
-- before and after gives the bytes allocated in between.  Each of N rounds
-- makes a table with an array part, a closure with an upvalue, and a long
-- string (not interned, so no string-table growth, whose reallocs count
-- their full size on the sampler's byte line but only the difference in
-- Lua's count).  Prints truth_bytes=B.
local n = tonumber(arg and arg[1] or (...)) or 200000
local rep = string.rep
collectgarbage("collect")
collectgarbage("stop")
local before = collectgarbage("count")
for i = 1, n do
	local t = { i, i, i, i }
	local f = function() return t end
	local s = rep("x", 100 + i % 50)
end
local after = collectgarbage("count")
print(string.format("truth_bytes=%.0f", (after - before) * 1024))
