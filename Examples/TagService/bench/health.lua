-- wrk script for GET /health: prints the error count at the end.
function done(summary, latency, requests)
  io.write(string.format("wrk_p99_us=%d\n", latency:percentile(99)))
  io.write(string.format("wrk_errors=%d\n", summary.errors.status + summary.errors.connect +
    summary.errors.read + summary.errors.write + summary.errors.timeout))
end
