-- A valid Lua program that names its chunk and functions with what a
-- terminal acts on or a reader takes for a line of the report: ESC
-- sequences (clear screen, colour, a window title ended by BEL), a
-- newline followed by a forged native frame, bytes that are not UTF-8
-- (\255\254) and a C1 control in UTF-8 (U+009B, CSI).  It writes its own
-- debug.traceback to arg[1] and parks in io.read on a stdin that never
-- ends.  tests/run-escape.sh runs it.
local truth = arg[1]
local chunk = "=\27[2J\nfake  #0 0x0 in main () at x.c:1"
local gname = "g\27[31m\nfake\255\254x"
local fname = "f\27]0;t\7\194\155"
-- Names from constants in the code, so that Lua itself names the calls
-- (global and field): %q writes them as Lua literals.
local src = string.format([[
local truth, s = ...
local t = {}
t[%q] = function()
	local f = assert(io.open(truth .. ".tmp", "w"))
	f:write(debug.traceback("", 1), "\n")
	f:close()
	assert(os.rename(truth .. ".tmp", truth))
	io.read("a")
	return s
end
_ENV[%q] = function()
	t[%q]()
	return 1
end
local r = _ENV[%q]()
return r
]], fname, gname, fname, gname)
local main = assert(load(src, chunk))
main(truth, gname)
