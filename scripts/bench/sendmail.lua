-- wrk script: internal mail, POST /rest/mail/actions/sendFile with one stored file attached (by
-- id, so no bytes are copied) to BENCH_MAIL_RECIPIENTS addresses of accounts. A response counts
-- as good when it is 201 and the email is `sent`.
--
-- Environment: BENCH_TOKEN, BENCH_FILE_ID, BENCH_MAIL_RECIPIENTS (comma-separated addresses).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

local hdrs, to, file
local n = 0

function init(args)
  hdrs = {
    ["Authorization"] = "Bearer " .. (os.getenv("BENCH_TOKEN") or ""),
    ["X-Coffer-Version"] = "28",
    ["Content-Type"] = "application/json",
  }
  local quoted = {}
  for a in (os.getenv("BENCH_MAIL_RECIPIENTS") or ""):gmatch("[^,]+") do
    quoted[#quoted + 1] = '"' .. a .. '"'
  end
  to = table.concat(quoted, ",")
  file = os.getenv("BENCH_FILE_ID") or "missing"
end

function request()
  n = n + 1
  local body = string.format(
    '{"to":[%s],"files":["%s"],"subject":"Bench %d-%d","body":"Figures for <b>review</b>.","acl":"internal"}',
    to, file, id, n)
  return wrk.format("POST", "/rest/mail/actions/sendFile", hdrs, body)
end

function response(status, headers, body)
  record(status == 201 and (body or ""):find('"status":"sent"', 1, true) ~= nil, status, body)
end
