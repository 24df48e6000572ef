-- wrk script: POST /oauth/token with the JWT assertion grant (RFC 7523). Every assertion is
-- single use (its own jti), so each thread sends its own pre-generated list once, in order:
-- thread n reads $BENCH_JWT_DIR/assert.n (one compact JWT per line). A thread that runs out
-- stops early and counts as "exhausted" (the run's requests/s is then a lower bound).
--
-- Environment: BENCH_JWT_DIR, BENCH_CLIENT_ID.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

local list = {}
local next_index = 0
local prefix
local hdrs = { ["Content-Type"] = "application/x-www-form-urlencoded" }

function init(args)
  for line in io.lines(os.getenv("BENCH_JWT_DIR") .. "/assert." .. id) do
    if line ~= "" then list[#list + 1] = line end
  end
  prefix = "grant_type=" .. urlencode("urn:ietf:params:oauth:grant-type:jwt-bearer")
    .. "&client_id=" .. urlencode(os.getenv("BENCH_CLIENT_ID") or "")
    .. "&assertion="
end

function request()
  next_index = next_index + 1
  if next_index > #list then
    if exhausted == 0 then
      exhausted = 1
      wrk.thread:stop()
    end
    return wrk.format("GET", "/health")
  end
  return wrk.format("POST", "/oauth/token", hdrs, prefix .. list[next_index])
end

function response(status, headers, body)
  if exhausted == 1 then return end
  record(status == 200 and (body or ""):find('"access_token"', 1, true) ~= nil, status, body)
end
