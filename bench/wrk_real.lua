-- SPDX-License-Identifier: BSD-2-Clause
-- wrk_real.lua - realistic request heads for wrk (bench/requests.sh): the
-- distribution of bench/insn_client.py's real_heads, drawn by wrk's Lua
-- (so not the same heads byte for byte): a W3C traceparent unique to each
-- request, one of 1,000 API keys of skewed use (the square of a uniform
-- draw), 40 routes, three GETs in four with a query string, the headers of
-- three kinds of SDK (Python with x-stainless-* lines, Node, Go), one
-- request in ten a POST with a JSON body. About 300 bytes of head each.
-- Each wrk thread seeds its own generator from WRK_SEED. wrk's Lua is
-- LuaJIT (Lua 5.1 and its bit library).

local routes = {
  "/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models",
  "/v1/models/m-small", "/v1/models/m-large", "/v1/files", "/v1/files/file-7Qx2/content",
  "/v1/batches", "/v1/batches/batch_91", "/v1/fine_tuning/jobs", "/v1/fine_tuning/jobs/ft-3/events",
  "/v1/images/generations", "/v1/audio/speech", "/v1/audio/transcriptions", "/v1/moderations",
  "/v1/assistants", "/v1/assistants/asst_12", "/v1/threads", "/v1/threads/thread_8/messages",
  "/v1/threads/thread_8/runs", "/v1/vector_stores", "/v1/vector_stores/vs_5/files", "/v1/uploads",
  "/v1/responses", "/v1/responses/resp_77", "/v2/orders", "/v2/orders/184467",
  "/v2/customers", "/v2/customers/cus_0042/invoices", "/v2/payments", "/v2/refunds",
  "/v2/products", "/v2/products/prod_9/prices", "/v2/events", "/v2/webhooks",
  "/api/search", "/api/users/me", "/api/projects/42/usage", "/healthz",
}
local agents = { "OpenAI/Python 1.51.0", "OpenAI/JS 4.67.3", "Go-http-client/1.1" }
local letters = "abcdefghijklmnopqrstuvwxyz"

math.randomseed(tonumber(os.getenv("WRK_SEED") or "1"))

local function hex(n)
  local t = {}
  for i = 1, n do
    t[i] = string.format("%x", math.random(0, 15))
  end
  return table.concat(t)
end

function request()
  local post = math.random(10) == 1
  local route = routes[math.random(40)]
  local u = math.random(0, 999)
  local key = math.floor(u * u / 1000)
  local sdk = math.random(3)
  local body = ""
  if post then
    local t = {}
    for i = 1, math.random(10, 199) do
      local j = math.random(26)
      t[i] = letters:sub(j, j)
    end
    body = '{"model":"m-small","input":"' .. table.concat(t) .. '"}\n'
  end
  local target = route
  if not post and math.random(4) > 1 then
    target = target .. string.format("?limit=%d&order=desc&after=obj_%06d",
      math.random(1, 100), math.random(0, 999999))
  end
  local h = { (post and "POST " or "GET ") .. target .. " HTTP/1.1", "Host: api.example.com",
    "User-Agent: " .. agents[sdk], "Accept: application/json" }
  if post then
    h[#h + 1] = "Content-Type: application/json"
    h[#h + 1] = "Content-Length: " .. #body
  end
  h[#h + 1] = string.format("X-API-Key: sk-live-%08x%08x", key * 2654435761 % 4294967296,
    bit.bxor(key, 0x5bd1e995))
  if sdk == 1 then
    h[#h + 1] = "x-stainless-lang: python"
    h[#h + 1] = "x-stainless-package-version: 1.51.0"
  elseif sdk == 2 then
    h[#h + 1] = "x-stainless-lang: js"
    h[#h + 1] = "x-stainless-os: Linux"
  else
    h[#h + 1] = "Accept-Encoding: gzip"
  end
  h[#h + 1] = "traceparent: 00-" .. hex(32) .. "-" .. hex(16) .. "-01"
  return table.concat(h, "\r\n") .. "\r\n\r\n" .. body
end
