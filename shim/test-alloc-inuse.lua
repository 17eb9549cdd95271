-- test-alloc-inuse.lua [N]: churns N records with the collector running,
-- keeping one in ten in a global list, then collects fully and exits
-- without lua_close (os.exit), so that the blocks still live are the
-- sampler's in-use set.  Prints live_bytes=B, Lua's own count of its heap
-- at that point, which the in-use estimate must match.
local n = tonumber(arg and arg[1] or (...)) or 400000
kept = {}
for i = 1, n do
	local r = { id = i, name = string.rep("r", 60 + i % 40), tags = { i, i } }
	if i % 10 == 0 then
		kept[#kept + 1] = r
	end
end
collectgarbage("collect")
collectgarbage("collect")
print(string.format("live_bytes=%.0f", collectgarbage("count") * 1024))
io.stdout:flush()
os.exit(0)
