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
-- Local and upvalue names come from the lexer, which takes identifiers
-- only: those of a dumped function are renamed in its binary chunk (a
-- name is its length and its bytes there, so the same length keeps the
-- chunk loadable).  Its source is an "@file" name with an OSC 8
-- hyperlink.
local park = string.dump(assert(load([[
local lllllll = ...
local f = assert(io.open(lllllll .. ".tmp", "w"))
f:write(debug.traceback("", 1), "\n")
f:close()
assert(os.rename(lllllll .. ".tmp", lllllll))
io.read("a")
return lllllll
]], "@\27]8;;file:///etc\7park.lua\27]8;;\7")))
local function rename(from, to)
	local i, j = park:find(from, 1, true)
	assert(i and #to == #from and not park:find(from, j + 1, true))
	park = park:sub(1, i - 1) .. to .. park:sub(j + 1)
end
rename("lllllll", "\27[1m\n\255L")
rename("_ENV", "\27\n\255_")	-- load still sets the first upvalue
park = assert(load(park, "park", "b"))
local src = string.format([[
local truth, s, park = ...
local t = {}
t[%q] = function()
	park(truth)
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
main(truth, gname, park)
