-- gantry leaky bucket (written for gantry; keys and reply as ShenYu's
-- request_leaky_rate_limiter).
-- KEYS[1] water level, KEYS[2] time of the last admitted request (seconds).
-- ARGV: rate (leak per second), capacity, now (seconds), requested (water per request).
-- Reply: {allowed 1|0, water level with this request (truncated to an integer by Redis)}.
local rate = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local requested = tonumber(ARGV[4])

local level = tonumber(redis.call('GET', KEYS[1])) or 0
local last = tonumber(redis.call('GET', KEYS[2])) or now
local leaked = math.max(0, now - last) * rate
level = math.max(0, level - leaked)

local poured = level + requested
if poured <= capacity then
  -- A refused request stores nothing: the leak keeps counting from the last admitted one.
  local ttl = math.ceil(capacity / rate + 1)
  redis.call('SETEX', KEYS[1], ttl, poured)
  redis.call('SETEX', KEYS[2], ttl, now)
  return { 1, poured }
end
return { 0, poured }
