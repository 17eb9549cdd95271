-- haproxy (Lua 5.3): loaded with "lua-load" by tests/run-hosts.sh, which
-- then sends one HTTP request to the service below.
--  * A task (core.register_task) sleeps in core.sleep: haproxy's C
--    function yields the task's coroutine with lua_yieldk (0 values, a
--    continuation), and haproxy sits in epoll until the request.
--  * The service, run in a coroutine that haproxy resumes with lua_resume
--    from C, first yields from C itself (core.msleep) and is resumed
--    through the continuation, then spins long enough for haproxy's count
--    hook (tune.lua.forced-yield) to yield and resume it again, then arms
--    the capture and blocks reading a FIFO ($HOST_FIFO).
-- The truth (tests/hosts/capture.lua): the service's frames and the
-- sleeping task's.
dofile(assert(os.getenv("HOST_CAPTURE_LUA"), "HOST_CAPTURE_LUA not set"))

local sleeper

local function doze(seconds)
	core.sleep(seconds)
end

core.register_task(function()
	sleeper = coroutine.running()
	doze(100000)
end)

local function spin(n)
	local x = 0
	for i = 1, n do x = x + i % 7 end
	return x
end

local function wait_read(path)
	local f = assert(io.open(path, "r"))
	HOST_ARM()
	local line = f:read("l")
	f:close()
	return line
end

core.register_service("luacore", "http", function(applet)
	while not sleeper or coroutine.status(sleeper) ~= "suspended" do
		core.msleep(10)
	end
	core.msleep(1)
	-- haproxy's count hook is on this coroutine, which can yield: the
	-- spin is cut into time slices.
	local hook, _, count = debug.gethook()
	assert(hook and count == 1000 and coroutine.isyieldable(), "no yielding count hook")
	spin(100000)
	HOST_SUSPENDED(sleeper, "task in core.sleep")
	local line = wait_read(assert(os.getenv("HOST_FIFO")))
	applet:set_status(200)
	applet:start_response()
	applet:send(tostring(line) .. "\n")
end)
