-- test-alloc-buffers.lua [N]: builds N strings of about 5000 bytes with
-- string.rep, whose luaL_Buffer grows in a block that lauxlib allocates
-- and frees itself with lua_getallocf's allocator (Lua 5.4, 5.5): about
-- half of all bytes.  The shim must sample those blocks too, so its
-- estimate must match the host allocator's count (test-alloc-host -a own).
local n = tonumber(arg and arg[1] or (...)) or 20000
local rep, total = string.rep, 0
for i = 1, n do
	total = total + #rep("x", 5000 + i % 100)
end
print("buffers: " .. total)
