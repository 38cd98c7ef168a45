-- gantry token bucket (written for gantry; keys and reply as ShenYu's request_rate_limiter).
-- KEYS[1] tokens left, KEYS[2] time of the last refill (seconds).
-- ARGV: rate (tokens/s), capacity, now (seconds), requested.
-- Reply: {allowed 1|0, tokens left (truncated to an integer by Redis)}.
local rate = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local requested = tonumber(ARGV[4])

-- Twice the time to fill the bucket, but at least 1 s: SETEX refuses 0, and a refused write
-- must not turn into "allowed" (ShenYu's floor(2c/r) is 0 when c/r < 0.5).
local ttl = math.max(1, math.floor(2 * capacity / rate))

local tokens = tonumber(redis.call('GET', KEYS[1])) or capacity
local last = tonumber(redis.call('GET', KEYS[2])) or 0
local filled = math.min(capacity, tokens + math.max(0, now - last) * rate)

local allowed = 0
if filled >= requested then
  filled = filled - requested
  allowed = 1
end

redis.call('SETEX', KEYS[1], ttl, filled)
redis.call('SETEX', KEYS[2], ttl, now)
return { allowed, filled }
