-- SPDX-License-Identifier: BSD-2-Clause
-- sluice's fleet counter (docs/redis.md): a sliding window counter over
-- windows of W, one hash per key and window, one field per counting node.
-- KEYS[1]: PREFIX.."{"..RULE..":"..KEY.."}:"..WINDOW  (this window)
-- KEYS[2]: the same for WINDOW - 1                  (the previous one)
-- ARGV[1]: the node's id (a field name; sluice uses "HOSTNAME:PID:RANDOM")
-- ARGV[2]: "add": count ARGV[3] more if the fleet estimate stays within
--          ARGV[5] (0: count without checking), the previous window
--          weighing ARGV[6] millionths (1e6 * (W - elapsed) / W);
--          "set": the node's counts are ARGV[3] (this window) and
--          ARGV[4] (the previous one): each field keeps its maximum.
-- ARGV[7]: the keys' lifetime in ms (at least 2 W).
-- KEYS[3], optional: PREFIX.."{"..RULE..":"..KEY.."}:hold", a learned hold
--          (outbound rules with learn, core/http/learn.h): the UNIX time in
--          ms before which no call of the key should leave. ARGV[8]: the
--          node's hold (0: none), kept when later than the one stored, the
--          key then living ARGV[9] ms (until the hold is over).
-- Returns {allowed (1/0), this window's total, the previous window's
-- total, the node's own count in this window, in the previous one}, and
-- with KEYS[3] a sixth element: the hold stored (0: none).
local node, op, n = ARGV[1], ARGV[2], tonumber(ARGV[3])
local function total(key)
  local t = 0
  for _, v in ipairs(redis.call('HVALS', key)) do t = t + tonumber(v) end
  return t
end
local curr, prev = total(KEYS[1]), total(KEYS[2])
local own = tonumber(redis.call('HGET', KEYS[1], node) or 0)
local ownp = tonumber(redis.call('HGET', KEYS[2], node) or 0)
local ok = 1
if op == 'add' then
  local limit = tonumber(ARGV[5])
  if limit > 0 and prev * tonumber(ARGV[6]) + (curr + n) * 1000000 > limit * 1000000 then
    ok = 0
  elseif n > 0 then
    redis.call('HINCRBY', KEYS[1], node, n)
    curr, own = curr + n, own + n
  end
elseif op == 'set' then
  if n > own then
    redis.call('HSET', KEYS[1], node, n)
    curr, own = curr + n - own, n
  end
  local p = tonumber(ARGV[4])
  if p > ownp then
    redis.call('HSET', KEYS[2], node, p)
    prev, ownp = prev + p - ownp, p
    redis.call('PEXPIRE', KEYS[2], ARGV[7])
  end
else
  return redis.error_reply('sluice: ARGV[2] must be add or set')
end
if own > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[7]) end
if KEYS[3] then
  local hold, mine = tonumber(redis.call('GET', KEYS[3]) or 0), tonumber(ARGV[8] or 0)
  if mine > hold then
    redis.call('SET', KEYS[3], ARGV[8], 'PX', ARGV[9])
    hold = mine
  end
  return {ok, curr, prev, own, ownp, hold}
end
return {ok, curr, prev, own, ownp}
