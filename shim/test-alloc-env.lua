-- test-alloc-env.lua: allocates enough to have parked (so the shim holds
-- its sockets), then runs a child shell that counts the shim's variables
-- in its environment and the sockets among its open fds: both must be 0.
local t = {}
for i = 1, 20000 do
	t[i] = { i, tostring(i) }
end
os.execute([[sh -c 'echo child_env=$(env | grep -c -e LUACORE_ALLOC -e luacore-alloc) child_sockets=$(ls -l /proc/$$/fd | grep -c socket:)']])
