-- Many suspended coroutines, each with a few frames: a report of this
-- process takes long enough (the process stopped all the while) to be
-- interrupted in the middle.  Writes its thread's id to $LC_TRUTH.
local n = tonumber(os.getenv("LTHOST_COROUTINES") or "20000")
local function leaf(i) coroutine.yield(i) end
local function mid(i) leaf(i) end
local keep = {}
-- LTHOST_BALLAST MB of written memory: a copy of the process (inspect's
-- default) that takes long enough to be interrupted too.
local ballast = string.rep("x", (tonumber(os.getenv("LTHOST_BALLAST") or "0")) * 1048576)
for i = 1, n do
	local co = coroutine.create(mid)
	coroutine.resume(co, i)
	keep[i] = co
end
local f = assert(io.open(os.getenv("LC_TRUTH"), "w"))
f:write("tid ", gettid(), "\n")
f:close()
keep.ballast = ballast
ready()
park()
