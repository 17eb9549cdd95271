-- Runs Lua without a pause: the sampler's target.
local function work(n)
	local x = 0
	for i = 1, n do x = x + i % 7 end
	return x
end

ready()
while true do work(100000) end
