-- gantry concurrency limiter (written for gantry; keys and reply as ShenYu's
-- concurrent_request_rate_limiter).
-- KEYS[1] a sorted set of requests in flight scored by their start second, KEYS[2] this
-- request's unique member (removed with ZREM when the request ends).
-- ARGV: rate (unused), capacity, now (seconds), requested (unused), slot ttl (seconds).
-- Reply: {allowed 1|0, requests in flight including this one if admitted}.
local capacity = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local slot_ttl = tonumber(ARGV[5])

-- A slot older than the ttl belongs to a request that never released it (a crash, a lost
-- connection): free it (ShenYu keeps such slots forever).
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - slot_ttl)
local count = redis.call('ZCARD', KEYS[1])

local allowed = 0
if count < capacity then
  redis.call('ZADD', KEYS[1], now, KEYS[2])
  count = count + 1
  allowed = 1
end
redis.call('EXPIRE', KEYS[1], slot_ttl)
return { allowed, count }
