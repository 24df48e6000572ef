-- Shared by the benchmark's wrk scripts, each of which loads it first with
--   dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")
--
-- Gives every wrk thread an `id` (1..threads), counts good and bad responses per thread with
-- record(), and prints when the run is done:
--   BENCH_SCRIPT ok=N errors=N exhausted=N
--   BENCH_FIRST_ERROR thread N: HTTP status body...      (only when there was an error)
-- A script may define setup_thread(thread, n) for its own per-thread values.

function urlencode(s)
  return (s:gsub("[^%w%-%._~]", function(c) return string.format("%%%02X", string.byte(c)) end))
end

-- setup / done (the main Lua state) ------------------------------------------------------------
local threads = {}

function setup(thread)
  local n = #threads + 1
  threads[n] = thread
  thread:set("id", n)
  if setup_thread then setup_thread(thread, n) end
end

function done(summary, latency, requests)
  local good, errors, out, first = 0, 0, 0, ""
  for _, t in ipairs(threads) do
    good = good + (t:get("ok") or 0)
    errors = errors + (t:get("bad") or 0)
    out = out + (t:get("exhausted") or 0)
    local e = t:get("first_error") or ""
    if first == "" and e ~= "" then first = e end
  end
  io.write(string.format("BENCH_SCRIPT ok=%d errors=%d exhausted=%d\n", good, errors, out))
  if first ~= "" then io.write("BENCH_FIRST_ERROR " .. first .. "\n") end
end

-- each thread ----------------------------------------------------------------------------------
ok, bad, exhausted, first_error = 0, 0, 0, ""

-- record(good, status, body): count one response; keep the first bad one for the report.
function record(good, status, body)
  if good then
    ok = ok + 1
    return
  end
  bad = bad + 1
  if first_error == "" then
    first_error = "thread " .. tostring(id) .. ": HTTP " .. tostring(status) .. " "
      .. (body or ""):sub(1, 300):gsub("%s+", " ")
  end
end
