-- wrk script for `make bench-cluster`: POST /v1/events through nginx, the user id in X-User-ID (what nginx
-- hashes on) and in the body. Every event's title is unique (run-thread-counter); on a 200 answer the
-- title is appended to <CLUSTER_ACK_LOG>-<thread>: the acknowledged events, compared later with what
-- reached the /users/track stand-in.
--
-- The users are user-<CLUSTER_USER_BASE> … user-<CLUSTER_USER_BASE + CLUSTER_USERS - 1> (defaults 0 and 20000),
-- drawn as CLUSTER_USER_ORDER says:
--   stride  each thread walks all of them with a stride of 7919 (users come back: after a warm-up, hot users);
--   once    the threads share them out, each id sent once in order (thread t of T sends base + t - 1, then
--           base + T + t - 1, …), wrapping only after the last: with a range larger than the run sends, every
--           event is the first event of a user never seen (cold users); over a small range, a warm-up that
--           touches every user once.
local counter = 0
thread_id = 0   -- a global: thread:set() sets it in each thread (a local would hide it, and every
                 -- thread would send the same titles for the same users)
local log = nil
local run = os.getenv("CLUSTER_RUN") or "r"
local users = tonumber(os.getenv("CLUSTER_USERS") or "20000")
local base = tonumber(os.getenv("CLUSTER_USER_BASE") or "0")
local once = (os.getenv("CLUSTER_USER_ORDER") or "stride") == "once"
local threads = {}
thread_count = 1   -- a global, set in every thread by setup()

function setup(thread)
  thread:set("thread_id", #threads + 1)
  table.insert(threads, thread)
  for _, each in ipairs(threads) do each:set("thread_count", #threads) end
end

function init(args)
  local path = os.getenv("CLUSTER_ACK_LOG")
  if path then log = io.open(path .. "-" .. run .. "-" .. thread_id, "a") end
end

function request()
  counter = counter + 1
  local user
  if once then
    user = base + ((counter - 1) * thread_count + thread_id - 1) % users
  else
    user = base + (thread_id * 7 + counter * 7919) % users
  end
  local body = string.format(
    '{"user_id":"user-%d","event":"played song","parameters":{"title":"ev-%s-%d-%d"}}',
    user, run, thread_id, counter)
  return wrk.format("POST", "/v1/events",
    { ["Content-Type"] = "application/json", ["X-User-ID"] = "user-" .. user }, body)
end

function response(status, headers, body)
  if status == 200 and log then
    for title in string.gmatch(body, '"title":"(ev%-[%w%-]+)"') do
      log:write(title, "\n")
    end
    log:flush()
  end
end

function done(summary, latency, requests)
  io.write(string.format("wrk_p99_us=%d\n", latency:percentile(99)))
  io.write(string.format("wrk_ok=%d\n", summary.requests - summary.errors.status))
  io.write(string.format("wrk_errors=%d\n", summary.errors.status + summary.errors.connect +
    summary.errors.read + summary.errors.write + summary.errors.timeout))
end
