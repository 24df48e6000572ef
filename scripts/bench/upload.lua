-- wrk script: one-shot uploads of small files, POST /rest/folders/{id}/actions/file, multipart
-- with the file in `body`. Every request is a new file: its name is <prefix>-<thread>-<n>.bin and
-- its content starts with that name (so no two files share a blob), padded to BENCH_SMALL_BYTES.
-- A response counts as good when it is 200 and carries the file's id.
--
-- Environment: BENCH_TOKEN, BENCH_FOLDER_ID, BENCH_SMALL_BYTES (default 4096),
-- BENCH_SMALL_PREFIX (default "s"; one per wrk run, so a warm-up's names are not reused).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

local boundary = "coffer-bench-7d1f0c2a9b"
local path, hdrs, filler, size, prefix
local n = 0

function init(args)
  size = tonumber(os.getenv("BENCH_SMALL_BYTES") or "4096")
  prefix = os.getenv("BENCH_SMALL_PREFIX") or "s"
  path = "/rest/folders/" .. urlencode(os.getenv("BENCH_FOLDER_ID") or "missing") .. "/actions/file"
  hdrs = {
    ["Authorization"] = "Bearer " .. (os.getenv("BENCH_TOKEN") or ""),
    ["X-Coffer-Version"] = "28",
    ["Content-Type"] = "multipart/form-data; boundary=" .. boundary,
  }
  local bytes = {}
  math.randomseed(id * 7919)
  for i = 1, size do bytes[i] = string.char(math.random(0, 255)) end
  filler = table.concat(bytes)
end

function request()
  n = n + 1
  local name = string.format("%s-%d-%d.bin", prefix, id, n)
  local body = "--" .. boundary .. "\r\n"
    .. 'Content-Disposition: form-data; name="body"; filename="' .. name .. '"\r\n'
    .. "Content-Type: application/octet-stream\r\n\r\n"
    .. (name .. filler):sub(1, size)
    .. "\r\n--" .. boundary .. "--\r\n"
  return wrk.format("POST", path, hdrs, body)
end

function response(status, headers, body)
  record(status == 200 and (body or ""):find('"id"', 1, true) ~= nil, status, body)
end
