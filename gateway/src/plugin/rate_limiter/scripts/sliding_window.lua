-- gantry sliding window (written for gantry; keys and reply as ShenYu's
-- sliding_window_request_rate_limiter).
-- KEYS[1] a sorted set of admitted requests scored by their second, KEYS[2] this request's
-- unique member. ARGV: rate, capacity, now (seconds), requested (unused, as in ShenYu).
-- At most `capacity` requests per window of capacity / rate seconds.
-- Reply: {allowed 1|0, capacity minus the requests counted before this one}.
local rate = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local window = capacity / rate

-- Evict what left the window before counting (ShenYu counts first, so the first request after
-- a quiet window is judged against stale entries).
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
local remaining = capacity - count

local allowed = 0
if count < capacity then
  redis.call('ZADD', KEYS[1], now, KEYS[2])
  allowed = 1
end
redis.call('EXPIRE', KEYS[1], math.max(1, math.ceil(window)))
return { allowed, remaining }
