-- SPDX-License-Identifier: BSD-2-Clause
-- wrk_real.lua - realistic request heads for wrk (bench/requests.sh): the
-- requests bench/heads.py writes (its real_heads, the generator of
-- bench/insn.sh's realistic case, so the same heads byte for byte) from
-- the file WRK_HEADS names, each framed as its length, a newline and its
-- bytes. wrk sends them in turn from the one at WRK_SEED (modulo their
-- count) and begins again after the last: the file holds enough that no
-- head repeats within thousands of requests (the memory of a head holds
-- the last one a thread read).

local reqs = {}
local at = 1

local function load(path)
  local f = assert(io.open(path, "rb"), "wrk_real.lua: cannot open WRK_HEADS " .. tostring(path))
  local data = f:read("*a")
  f:close()
  local pos = 1
  while pos <= #data do
    local nl = data:find("\n", pos, true)
    if not nl then break end
    local n = tonumber(data:sub(pos, nl - 1))
    reqs[#reqs + 1] = data:sub(nl + 1, nl + n)
    pos = nl + 1 + n
  end
  assert(#reqs > 0, "wrk_real.lua: no requests in " .. path)
end

load(os.getenv("WRK_HEADS"))
at = tonumber(os.getenv("WRK_SEED") or "0") % #reqs + 1

function request()
  local r = reqs[at]
  at = at % #reqs + 1
  return r
end
