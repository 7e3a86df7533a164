-- wrk script for POST /v1/events: each request is a "played song" event of one of 100,000 users. A thread
-- walks the users with a stride from a random start, so within one 10 s run nearly every request is a new
-- user's first event (a session is created and the container's once-per-load tag fires too: about two
-- records per event); later rounds meet users an earlier round created.
-- Prints the 99th percentile latency in microseconds at the end (wrk_p99_us=...).
local counter = 0
thread_offset = 0   -- a global: thread:set() sets it in each thread (a local would hide it)

function setup(thread)
  thread:set("thread_offset", math.random(0, 99999))
end

function init(args)
  math.randomseed(os.time() + thread_offset)
end

local titles = { "So What", "Blue in Green", "All Blues", "Freddie Freeloader", "Flamenco Sketches" }

function request()
  counter = counter + 1
  local user = (thread_offset + counter * 7919) % 100000
  local body = string.format(
    '{"user_id":"user-%d","event":"played song","parameters":{"title":"%s","position":%d}}',
    user, titles[(counter % #titles) + 1], counter)
  return wrk.format("POST", "/v1/events", { ["Content-Type"] = "application/json" }, body)
end

function done(summary, latency, requests)
  io.write(string.format("wrk_p99_us=%d\n", latency:percentile(99)))
  io.write(string.format("wrk_ok=%d\n", summary.requests - summary.errors.status))
  io.write(string.format("wrk_errors=%d\n", summary.errors.status + summary.errors.connect +
    summary.errors.read + summary.errors.write + summary.errors.timeout))
end
