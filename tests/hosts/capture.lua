-- The capture point of the real-host scripts (tests/run-hosts.sh), for a
-- host's own Lua (5.3, 5.4).  Loaded with dofile($HOST_CAPTURE_LUA) into
-- the host's global table; it loads fixtures/lua/truth.lua
-- ($LC_TRUTH_LUA) and defines:
--
--   HOST_SUSPENDED(co, label)   note a coroutine whose frames go into the
--                               truth too (it must stay suspended until
--                               the host is killed)
--   HOST_ARM()                  the next call the running coroutine makes
--                               writes the truth: the script calls
--                               f:read("l") on a FIFO right after, and
--                               blocks there
--
-- The truth is what Lua's own debug.getinfo says inside a call hook, as
-- the blocking read is entered: the same CallInfos, the same savedpc, as
-- when luacore looks at the blocked process.  Lines ($LC_TRUTH):
--   luaversion, frame        as truth.lua writes them: the running
--                            coroutine from the read outward, then the
--                            threads of TRUTH_CHAIN (its resumers)
--   coroutine ADDR STATUS ENDED LABEL   (as fixtures/README.md, "Post
--                            checks"): every thread named in the truth
--   coframe ADDR SEQ WHAT SOURCE CURRENTLINE NAME NAMEWHAT ISTAILCALL
--                            debug.getinfo(co, SEQ) of each suspended one
-- Then $LC_READY is made (by rename), and the read blocks.
dofile(assert(os.getenv("LC_TRUTH_LUA"), "LC_TRUTH_LUA not set"))

-- The globals truth.lua reads, declared (nmap's strict.lua refuses to
-- read undeclared ones): no gettid (the thread id is the pid: every host
-- here runs its Lua on its main thread), no post lines, no chain until the
-- script sets one.
for _, name in ipairs({ "gettid", "TRUTH_POST", "TRUTH_CHAIN", "TRUTH_SUSPENDED" }) do
	if rawget(_G, name) == nil then rawset(_G, name, false) end
end

local getinfo, format = debug.getinfo, string.format
local suspended = {}

local function addr(co)
	return tostring(co):match("0x%x+")
end

local function esc(s)
	if s == nil then return "" end
	return (tostring(s):gsub("[\\\t\n]", { ["\\"] = "\\\\", ["\t"] = "\\t", ["\n"] = "\\n" }))
end

function HOST_SUSPENDED(co, label)
	suspended[#suspended + 1] = { co, label }
end

local function extra_lines()
	local out = {}
	local running = coroutine.running()
	out[#out + 1] = format("coroutine\t%s\trunning\t\trunning\n", addr(running))
	for i, co in ipairs(TRUTH_CHAIN or {}) do
		out[#out + 1] = format("coroutine\t%s\t%s\t\tresumer %d\n", addr(co),
			coroutine.status(co), i)
	end
	for _, s in ipairs(suspended) do
		local co, label = s[1], s[2]
		out[#out + 1] = format("coroutine\t%s\t%s\t\t%s\n", addr(co),
			coroutine.status(co), label)
		for level = 0, 200 do
			local ar = getinfo(co, level, "Slnt")
			if not ar then break end
			out[#out + 1] = format("coframe\t%s\t%d\t%s\t%s\t%d\t%s\t%s\t%d\n", addr(co),
				level, ar.what, esc(ar.source), ar.currentline, esc(ar.name),
				esc(ar.namewhat), ar.istailcall and 1 or 0)
		end
	end
	local f = assert(io.open(assert(os.getenv("LC_TRUTH")), "a"))
	f:write(table.concat(out))
	f:close()
	local ready = assert(os.getenv("LC_READY"), "LC_READY not set")
	f = assert(io.open(ready .. ".tmp", "w"))
	f:write("ready\n")
	f:close()
	assert(os.rename(ready .. ".tmp", ready))
end

local read = getmetatable(io.stdin).__index.read

local function on_call()
	-- Level 2 is the function being called; wait for the read.
	if getinfo(2, "f").func ~= read then return end
	debug.sethook()
	-- Level 1 TRUTH_WRITE, 2 on_call, 3 the read.
	TRUTH_WRITE(0, 3)
	extra_lines()
end

function HOST_ARM()
	debug.sethook(on_call, "c")
end
