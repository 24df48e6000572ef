-- wrk script: the search benchmark's requests (scripts/bench-search.sh). Each request takes the
-- next path of a file of paths and the next of several users' bearer tokens, so the requests
-- cycle through users and queries. A response counts as good when it is 200 and JSON with the
-- search answer's totals.
--
-- Environment: BENCH_SEARCH_TOKENS (a file of tokens, one a line), BENCH_SEARCH_PATHS (a file
-- of request paths with their query strings, one a line).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

local function lines(path)
  local out = {}
  for l in io.lines(path) do
    if l ~= "" then out[#out + 1] = l end
  end
  return out
end

local tokens = lines(os.getenv("BENCH_SEARCH_TOKENS"))
local paths = lines(os.getenv("BENCH_SEARCH_PATHS"))
local n = 0

function request()
  n = n + 1
  local i = ((id or 1) * 7919 + n)
  local headers = {
    ["Authorization"] = "Bearer " .. tokens[(i % #tokens) + 1],
    ["X-Coffer-Version"] = "28",
  }
  return wrk.format("GET", paths[(i % #paths) + 1], headers)
end

function response(status, headers, body)
  body = body or ""
  record(status == 200 and (body:find('"totalFiles"', 1, true) or body:find('"metadata"', 1, true)) ~= nil,
    status, body)
end
