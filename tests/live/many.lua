-- Many suspended coroutines, each with a few frames: a report of this
-- process takes long enough (the process stopped all the while) to be
-- interrupted in the middle.  Writes its thread's id to $LC_TRUTH.
local n = tonumber(os.getenv("LTHOST_COROUTINES") or "20000")
local function leaf(i) coroutine.yield(i) end
local function mid(i) leaf(i) end
local keep = {}
for i = 1, n do
	local co = coroutine.create(mid)
	coroutine.resume(co, i)
	keep[i] = co
end
local f = assert(io.open(os.getenv("LC_TRUTH"), "w"))
f:write("tid ", gettid(), "\n")
f:close()
ready()
park()
