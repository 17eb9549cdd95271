-- nmap (Lua 5.3): an NSE prerule script, run by tests/run-hosts.sh as
--   nmap -n --script tests/hosts/nmap.nse     (no target: prerules only)
-- Its action spawns a worker (stdnse.new_thread) that sleeps in
-- stdnse.sleep, a C function of nmap's that yields the worker's coroutine
-- from C (nse_yield: lua_yieldk with one value); once the worker sleeps,
-- the action, in a coroutine NSE's engine resumes, arms the capture and
-- blocks reading a FIFO ($HOST_FIFO).  The truth (tests/hosts/capture.lua):
-- the action's frames, those of the main thread that resumed it, and the
-- sleeping worker's.
description = "luacore's real-host test: a worker sleeping in C, the action blocked in a read"
categories = { "safe" }

local stdnse = require "stdnse"

dofile(assert(os.getenv("HOST_CAPTURE_LUA"), "HOST_CAPTURE_LUA not set"))

prerule = function() return true end

local worker_co

local function nap(seconds)
	stdnse.sleep(seconds)
end

local function worker()
	worker_co = coroutine.running()
	nap(100000)
end

local function wait_read(path)
	local f = assert(io.open(path, "r"))
	HOST_ARM()
	local line = f:read("l")
	f:close()
	return line
end

action = function()
	stdnse.new_thread(worker)
	while not worker_co or coroutine.status(worker_co) ~= "suspended" do
		stdnse.sleep(0.01)
	end
	HOST_SUSPENDED(worker_co, "worker in stdnse.sleep")
	-- The engine runs on the main thread (registry[1]); it resumed us.
	rawset(_G, "TRUTH_CHAIN", { debug.getregistry()[1] })
	local line = wait_read(assert(os.getenv("HOST_FIFO")))
	return "read " .. tostring(line)
end
