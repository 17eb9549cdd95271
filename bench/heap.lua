-- bench/heap.sh's heap, run by lchost: N rows, each a small table
-- holding a short (interned) string and a distinct long string of about
-- PAD bytes: 3 objects a row, plus the array that keeps them.  With the
-- collector stopped while it builds (nothing it makes is garbage), then
-- one full collection; it writes collectgarbage("count") in bytes to
-- INFO, then parks.
--   lchost bench/heap.lua N PAD INFO
TRUTH_WRITE = function() end	-- park's frame truth: none wanted here

local n, pad, info = tonumber((...)), tonumber((select(2, ...))), select(3, ...)
local fill = string.rep("x", pad)
local keep = {}
collectgarbage("stop")
for i = 1, n do
	keep[i] = { tostring(i), fill .. i }
end
collectgarbage("collect")
collectgarbage("restart")
local f = assert(io.open(info, "w"))
f:write(string.format("%.0f\n", collectgarbage("count") * 1024))
f:close()
park()
