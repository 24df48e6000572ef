-- wrk script: POST /oauth/token with grant_type=refresh_token, one rotating token chain per
-- connection. Refresh tokens rotate on every use and a reused one revokes its family, so each
-- wrk thread must own exactly one connection (wrk -t N -c N) and its own token: it sends its
-- current token and keeps the new one from the response.
--
-- Environment: BENCH_TOKENS_FILE (one refresh token per line, at least one per thread),
-- BENCH_CLIENT_ID, BENCH_CLIENT_SECRET.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

-- main state: hand thread n the n-th token of the file.
local tokens = {}
function setup_thread(thread, n)
  if #tokens == 0 then
    for line in io.lines(os.getenv("BENCH_TOKENS_FILE")) do
      if line ~= "" then tokens[#tokens + 1] = line end
    end
  end
  thread:set("token", tokens[n] or "missing-token")
end

-- each thread
local prefix
local hdrs = { ["Content-Type"] = "application/x-www-form-urlencoded" }

function init(args)
  prefix = "grant_type=refresh_token&client_id=" .. urlencode(os.getenv("BENCH_CLIENT_ID") or "")
    .. "&client_secret=" .. urlencode(os.getenv("BENCH_CLIENT_SECRET") or "")
    .. "&refresh_token="
end

function request()
  return wrk.format("POST", "/oauth/token", hdrs, prefix .. urlencode(token))
end

function response(status, headers, body)
  local new = nil
  if status == 200 then new = (body or ""):match('"refresh_token"%s*:%s*"([^"]+)"') end
  if new then token = new end
  record(new ~= nil, status, body)
end
