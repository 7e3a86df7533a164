-- wrk script for POST /v1/batch: every request is one batch of BENCH_BATCH_SIZE (default 50) "played song"
-- events, each of a different one of 100,000 users (walked with a stride from a random start, like
-- events.lua). With BENCH_ACK_FILE set, every event's song title is unique ("batch-<thread>-<n>") and the
-- title of every event acknowledged in an answer (its item has status 200) is appended to
-- $BENCH_ACK_FILE-<thread>, for the arrival check by id.
-- Prints wrk_p99_us=, wrk_ok= (answered batches) and wrk_errors= at the end.
local counter = 0
thread_offset = 0   -- globals: thread:set() sets them in each thread (a local would hide them)
thread_id = 0
local threads = 0
local size = tonumber(os.getenv("BENCH_BATCH_SIZE") or "50")
local ack_path = os.getenv("BENCH_ACK_FILE")
local out = nil
local titles = { "So What", "Blue in Green", "All Blues", "Freddie Freeloader", "Flamenco Sketches" }
local headers = { ["Content-Type"] = "application/json" }

function setup(thread)
  threads = threads + 1
  thread:set("thread_id", threads)
  thread:set("thread_offset", math.random(0, 99999))
end

function init(args)
  if ack_path then out = io.open(ack_path .. "-" .. thread_id, "a") end
end

function request()
  local events = {}
  for i = 1, size do
    counter = counter + 1
    local user = (thread_offset + counter * 7919) % 100000
    local title
    if out then title = string.format("batch-%d-%d", thread_id, counter) else title = titles[(counter % #titles) + 1] end
    events[i] = string.format(
      '{"user_id":"user-%d","event":"played song","parameters":{"title":"%s","position":%d}}', user, title, counter)
  end
  return wrk.format("POST", "/v1/batch", headers, '{"events":[' .. table.concat(events, ",") .. ']}')
end

function response(status, headers, body)
  if out and status == 200 then
    -- Each acknowledged item names its title (in its tag and in its records); a refused item does not.
    for item in string.gmatch(body, '{"fired":.-"status":200}') do
      local id = string.match(item, '"title":"(batch%-%d+%-%d+)"')
      if id then out:write(id, "\n") end
    end
  end
end

function done(summary, latency, requests)
  io.write(string.format("wrk_p99_us=%d\n", latency:percentile(99)))
  io.write(string.format("wrk_ok=%d\n", summary.requests - summary.errors.status))
  io.write(string.format("wrk_errors=%d\n", summary.errors.status + summary.errors.connect +
    summary.errors.read + summary.errors.write + summary.errors.timeout))
end
