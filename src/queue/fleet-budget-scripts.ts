/**
 * The Lua of a run's fleet-wide request budget (see FleetBudgets). A budget is four keys on the
 * queue prefix's hash tag:
 *
 * - `state`, a hash: `level` (the slots the fleet may hold: the run's --concurrency, or where
 *   `auto` got to), `used` (slots held now), and `auto`'s rules' own state (AdaptiveSlots's fields);
 * - `held`, a hash: slots held per holder (a worker process, in one epoch of its lease);
 * - `leases`, a sorted set: each holder's lease end (Redis's clock, ms);
 * - `queue`, a list: one holder per request waiting for a slot, first come first served.
 *
 * A holder is `<process token>/<epoch>`; a slot freed goes to the request queued first, as an
 * entry `<holder>\n<state key>` pushed to `<grants prefix><process token>`, which that process
 * reads with a blocking pop: waiting requests are woken by the release itself, not by polling.
 * Every script first returns the slots of holders whose lease ran out (a dead worker's) and hands
 * out what is free. Each takes KEYS state, held, leases, queue and ARGV grants prefix, lease ms,
 * holder, initial level, then its own arguments.
 */
/** A budget's keys outlive the last worker that used them by this long (an hour: a run paused longer starts `auto` afresh). */
const KEEP_MS = 3_600_000;

const PRELUDE = `
local state, held, leases, queue = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local grantsPrefix, leaseMs, holder = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if redis.call('HSETNX', state, 'level', ARGV[4]) == 1 then redis.call('HSET', state, 'used', 0) end

-- A holder's slots go back to the fleet, and its lease with them. An idle holder holds 0, and
-- HINCRBY refuses '-0', what negating it would write: only a count above 0 is taken back.
local function forget(h)
  local n = tonumber(redis.call('HGET', held, h) or '0')
  if n > 0 then redis.call('HINCRBY', state, 'used', -n) end
  redis.call('HDEL', held, h)
  redis.call('ZREM', leases, h)
end

for _, h in ipairs(redis.call('ZRANGEBYSCORE', leases, '-inf', now)) do
  forget(h)
end

local function pump()
  local level = tonumber(redis.call('HGET', state, 'level'))
  local used = tonumber(redis.call('HGET', state, 'used'))
  while used < level do
    local h = redis.call('LPOP', queue)
    if not h then break end
    -- A request of a holder that is gone has nobody to run it.
    if redis.call('ZSCORE', leases, h) then
      redis.call('HINCRBY', held, h, 1)
      used = used + 1
      local grants = grantsPrefix .. string.match(h, '^(.*)/')
      redis.call('RPUSH', grants, h .. '\\n' .. state)
      redis.call('PEXPIRE', grants, ${KEEP_MS})
    end
  end
  redis.call('HSET', state, 'used', used)
  return level
end

local function keep()
  for _, k in ipairs(KEYS) do redis.call('PEXPIRE', k, ${KEEP_MS}) end
end
`;

/**
 * A slot for one request: `{1, level}` when taken, `{0, level}` when queued (a grant follows),
 * `{-1, level}` when the holder's lease is gone and ARGV[5] (join) is not 1: the caller's slots
 * under it were returned, so it goes on as a new holder.
 */
export const ACQUIRE = `${PRELUDE}
local level = pump()
if not redis.call('ZSCORE', leases, holder) and ARGV[5] ~= '1' then return {-1, level} end
redis.call('ZADD', leases, now + leaseMs, holder)
keep()
local used = tonumber(redis.call('HGET', state, 'used'))
if used < level then
  redis.call('HINCRBY', held, holder, 1)
  redis.call('HSET', state, 'used', used + 1)
  return {1, level}
end
redis.call('RPUSH', queue, holder)
return {0, level}
`;

/** Gives a slot back (nothing when the holder's lease is gone: its slots were returned); answers the level. */
export const RELEASE = `${PRELUDE}
if redis.call('ZSCORE', leases, holder) and tonumber(redis.call('HGET', held, holder) or '0') > 0 then
  redis.call('HINCRBY', held, holder, -1)
  redis.call('HINCRBY', state, 'used', -1)
  redis.call('ZADD', leases, now + leaseMs, holder)
end
return pump()
`;

/** Extends the holder's lease: `{1, level}`, or `{0, level}` when it was gone already. */
export const RENEW = `${PRELUDE}
local alive = 0
if redis.call('ZSCORE', leases, holder) then
  redis.call('ZADD', leases, now + leaseMs, holder)
  alive = 1
end
keep()
return {alive, pump()}
`;

/** Gives back every slot of the holder at once (a worker shutting down); answers the level. */
export const LEAVE = `${PRELUDE}
if redis.call('ZSCORE', leases, holder) then forget(holder) end
return pump()
`;

/**
 * `--concurrency auto` for the fleet: AdaptiveSlots.observe's rules (see request-slots.ts; a test
 * holds the two to the same answers), applied to attempts of any worker in the order they come.
 * ARGV[5..7] min, max, PROBE_AFTER_MS; then per attempt its outcome, ms ('' when unknown) and
 * when it ended (the worker's ms). Answers the level, after handing out the slots it added.
 */
export const ADAPT = `${PRELUDE}
local s = redis.call('HMGET', state, 'level', 'answered', 'lastOverload', 'ceiling', 'roundTripMs')
local level = tonumber(s[1])
local answered = tonumber(s[2]) or 0
local lastOverload = tonumber(s[3]) or -math.huge
local ceiling = tonumber(s[4]) or math.huge
local rtt = tonumber(s[5]) or 0
local min, max, probe = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
for i = 8, #ARGV, 3 do
  local outcome, ms, t = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  if outcome == 'answered' then
    if ms then
      if rtt == 0 then rtt = ms else rtt = 0.8 * rtt + 0.2 * ms end
    end
    answered = answered + 1
    if answered >= level and level < max then
      answered = 0
      if level + 1 < ceiling or t - lastOverload >= probe then level = level + 1 end
    end
  elseif outcome == 'overloaded' then
    answered = 0
    local since = t - lastOverload
    if since >= 2 * rtt then
      lastOverload = t
      if ceiling == math.huge or since >= probe then ceiling = level else ceiling = math.min(ceiling, level) end
      local nextLevel
      if since < 10 * rtt then nextLevel = math.floor(level / 2) else nextLevel = level - 1 end
      level = math.max(min, nextLevel)
    end
  end
end
redis.call('HSET', state, 'level', level, 'answered', answered, 'roundTripMs', string.format('%.17g', rtt))
if lastOverload ~= -math.huge then redis.call('HSET', state, 'lastOverload', string.format('%.17g', lastOverload)) end
if ceiling ~= math.huge then redis.call('HSET', state, 'ceiling', ceiling) end
return pump()
`;
