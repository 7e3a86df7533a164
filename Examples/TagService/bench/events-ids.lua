-- wrk script for the arrival check of `make bench-service`: like events.lua, but every request's song title
-- is unique ("id-<thread>-<n>") and every acknowledged answer's title is appended to
-- $BENCH_ACK_FILE-<thread>, so that the script can check that each acknowledged event reached the stand-in
-- by its id, not by counting.
local counter = 0
thread_id = 0   -- a global: thread:set() sets it in each thread (a local would hide it)
local threads = 0
local out = nil

function setup(thread)
  threads = threads + 1
  thread:set("thread_id", threads)
end

function init(args)
  out = io.open(os.getenv("BENCH_ACK_FILE") .. "-" .. thread_id, "a")
end

function request()
  counter = counter + 1
  local user = (thread_id * 50000 + counter * 7919) % 100000
  local body = string.format(
    '{"user_id":"user-%d","event":"played song","parameters":{"title":"id-%d-%d"}}', user, thread_id, counter)
  return wrk.format("POST", "/v1/events", { ["Content-Type"] = "application/json" }, body)
end

function response(status, headers, body)
  if status == 200 then
    local id = string.match(body, '"title":"(id%-%d+%-%d+)"')
    if id then out:write(id, "\n") end
  end
end

function done(summary, latency, requests)
  io.write(string.format("wrk_ok=%d\n", summary.requests - summary.errors.status))
end
