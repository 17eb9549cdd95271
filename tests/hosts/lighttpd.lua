-- lighttpd (Lua 5.4): mod_magnet runs this for the one HTTP request that
-- tests/run-hosts.sh sends (magnet.attract-raw-url-to).
--  * "parked", a coroutine made with coroutine.create, yields three values
--    from three calls deep and stays suspended;
--  * "gen", a coroutine.wrap generator, yields once and stays suspended;
--  * the request's thread resumes "outer" (coroutine.resume), which calls
--    a coroutine.wrap function, "inner", which arms the capture and
--    blocks reading a FIFO ($HOST_FIFO).
-- The truth (tests/hosts/capture.lua): inner's frames, then outer's and
-- the request thread's (TRUTH_CHAIN), then the two suspended coroutines'.
dofile(assert(os.getenv("HOST_CAPTURE_LUA"), "HOST_CAPTURE_LUA not set"))

local function descend(n)
	if n == 0 then
		local a, b = coroutine.yield(1, 2, 3)
		return a + b
	end
	local r = descend(n - 1)
	return r + 1
end

local parked = coroutine.create(function(n)
	local r = descend(n)
	return r
end)
assert(coroutine.resume(parked, 2))

local gen_co
local gen = coroutine.wrap(function()
	gen_co = coroutine.running()
	for i = 1, 10 do coroutine.yield(i) end
end)
gen()

local function wait_read(path)
	local f = assert(io.open(path, "r"))
	HOST_ARM()
	local line = f:read("l")
	f:close()
	return line
end

local request_thread = coroutine.running()
local outer
local inner = coroutine.wrap(function(path)
	HOST_SUSPENDED(parked, "parked in coroutine.yield")
	HOST_SUSPENDED(gen_co, "coroutine.wrap generator")
	-- The resumers, innermost first: outer, then the request's thread.
	rawset(_G, "TRUTH_CHAIN", { outer, request_thread })
	local line = wait_read(path)
	return line
end)

outer = coroutine.create(function(path)
	local line = inner(path)
	return line
end)

local ok, line = coroutine.resume(outer, assert(os.getenv("HOST_FIFO")))
assert(ok, line)
lighty.r.resp_body:set({ tostring(line), "\n" })
return 200
