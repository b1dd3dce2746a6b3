#!/usr/bin/env bash
# The real Codex CLI as a crew teammate: installs the pinned @openai/codex from npm (once, into
# target/interop), then, inside a private network namespace with only loopback (the CLI never
# reaches the internet), runs it as teammate bob against the scripted mock OpenAI Responses API
# (mock_openai.py, codex-real.json): Codex's escalated command must come to crew as a permission
# request, be approved with `crew respond`, run, and end as task_1's commit in review; its file
# change (a new denied.txt) is rejected, and Codex reports it declined (the file never appears);
# a restarted worker resumes the same thread (the model sees its id and history); crew's
# interrupt ends a turn that waits on the model.
# Prints SKIP (exit 0) when npm or `unshare --net` is not available, PASS or FAIL otherwise.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
VERSION=0.171.0
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
CACHE=$TARGET/interop/codex
CREW=$TARGET/debug/crew
CODEX=$CACHE/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex

skip() { echo "SKIP codex-real: $*"; exit 0; }
command -v python3 >/dev/null || skip "python3 is not installed"
unshare --net true 2>/dev/null || skip "cannot make a private network namespace (unshare --net)"
if [ ! -x "$CODEX" ]; then
  command -v npm >/dev/null || skip "npm is not installed"
  mkdir -p "$CACHE"
  (cd "$CACHE" && npm install --no-audit --no-fund --ignore-scripts \
      "@openai/codex@$VERSION" >npm.log 2>&1) ||
    skip "npm could not install @openai/codex@$VERSION (see $CACHE/npm.log)"
  [ -x "$CODEX" ] || skip "the package has no linux-x64 binary at $CODEX"
fi
[ -x "$CREW" ] || (cd "$ROOT" && cargo build --quiet)

WORK=$(mktemp -d)
[ -n "${KEEP:-}" ] && echo "work folder: $WORK" || trap 'rm -rf "$WORK"' EXIT
REPO=$WORK/repo
mkdir -p "$REPO" "$WORK/home/.codex" "$WORK/log"
# Codex's own configuration: the loopback mock as its model provider, nothing sent elsewhere.
cat >"$WORK/home/.codex/config.toml" <<TOML
model = "gpt-5.5"
model_provider = "mock"

[model_providers.mock]
name = "mock"
base_url = "http://127.0.0.1:8766/v1"
wire_api = "responses"
env_key = "OPENAI_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[feedback]
enabled = false
TOML
cat >"$REPO/crew.toml" <<TOML
[team]
name = "interop"
base_branch = "main"

[lead]
name = "lead"
model = { provider = "scripted", scenario = "echo" }

[[teammate]]
name = "bob"
role = "implementer"
writes = true
model = { provider = "codex", model = "gpt-5.5", bin = "$CODEX" }

[permissions]
mode = "ask"

[worker]
idle_poll_secs = 1
idle_timeout_secs = 120
heartbeat_secs = 1
request_timeout_secs = 60
TOML
echo "# interop" >"$REPO/README.md"
git -C "$REPO" init -q -b main
printf '.tasks\n.mailboxes\n.worktrees\n.crew\n' >"$REPO/.git/info/exclude"
git -C "$REPO" add -A
git -C "$REPO" -c user.email=t@t -c user.name=t commit -q -m "interop team"

export HERE REPO CREW WORK VERSION
unshare --net bash -c '
set -euo pipefail
ip link set lo up
python3 "$HERE/mock_openai.py" 8766 "$WORK/log" "$HERE/codex-real.json" >"$WORK/log/mock.out" 2>&1 &
MOCK=$!; trap "kill $MOCK 2>/dev/null" EXIT
for i in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/8766) 2>/dev/null && break; sleep 0.1; done
cd "$REPO"
export HOME="$WORK/home" CODEX_HOME="$WORK/home/.codex" OPENAI_API_KEY=sk-test RUST_LOG=warn
fail() { echo "FAIL codex-real: $*"; "$CREW" down --timeout 5 >/dev/null 2>&1 || true;
  echo "--- bob log"; cat .crew/logs/bob.log 2>/dev/null || cat "$WORK/bob.out";
  echo "--- mock"; cat "$WORK/log/index.log" 2>/dev/null; exit 1; }
"$CREW" worker --name bob >"$WORK/bob.out" 2>&1 &
"$CREW" task add "write real.txt" >/dev/null
field() { python3 -c "import json,sys; a=[x for x in json.load(sys.stdin)[\"agents\"] if x[\"name\"]==\"bob\"]; print((a[0].get(sys.argv[1]) if a else None) or \"\")" "$1"; }
wait_request() {
  for i in $(seq 120); do
    NOW=$("$CREW" status --json | field waiting_on)
    if [ -n "$NOW" ] && [ "$NOW" != "${1:-}" ]; then echo "$NOW"; return; fi
    STATUS=$(python3 -c "import json; print(json.load(open(\".tasks/task_1.json\"))[\"status\"])")
    [ "$STATUS" = in_progress ] || [ "$STATUS" = pending ] || return 0
    sleep 0.5
  done
}
FIRST=$(wait_request)
[ -n "$FIRST" ] || fail "Codex never asked crew for its escalated command"
"$CREW" respond "$FIRST" --as user approve >/dev/null
SECOND=$(wait_request "$FIRST")
[ -n "$SECOND" ] || fail "Codex never asked crew for its file change"
"$CREW" respond "$SECOND" --as user reject --note "not that file" >/dev/null
STATUS=""
for i in $(seq 120); do
  STATUS=$(python3 -c "import json; print(json.load(open(\".tasks/task_1.json\"))[\"status\"])")
  [ "$STATUS" = review ] || [ "$STATUS" = failed ] || [ "$STATUS" = completed ] && break
  sleep 0.5
done
[ "$STATUS" = review ] || fail "task_1 is $STATUS, not review: $(cat .tasks/task_1.json)"
DIFF=$("$CREW" review diff task_1)
case "$DIFF" in *real.txt*) ;; *) fail "the commit of task_1 does not hold real.txt: $DIFF" ;; esac
[ ! -e .worktrees/bob/denied.txt ] || fail "the rejected file change was applied"
# What Codex itself reported for the rejected change: the item declined.
python3 -c "
import glob, json, sys
events = [json.loads(l)[\"event\"] for f in glob.glob(\".crew/transcripts/bob/*.jsonl\") for l in open(f)]
sys.exit(0 if any(e[\"type\"] == \"tool_result\" and e[\"name\"] == \"apply_patch\" and e[\"content\"].startswith(\"declined\") for e in events) else 1)
" || fail "the rejection never reached Codex"
# A restarted worker resumes the thread: the model sees the same thread id and the history.
"$CREW" down --timeout 10 >/dev/null
sleep 1
THREAD=$(cat .crew/codex/bob.thread)
"$CREW" worker --name bob >"$WORK/bob2.out" 2>&1 &
"$CREW" send --from user --to bob "check the thread" >/dev/null
for i in $(seq 120); do
  [ "$(ls "$WORK"/log/0*-POST-*.json | wc -l)" -ge 4 ] && break
  sleep 0.5
done
python3 -c "
import glob, json, sys
last = json.load(open(sorted(glob.glob(\"$WORK/log/0*-POST-*.json\"))[-1]))
body = json.dumps(last[\"body\"])
sys.exit(0 if last[\"headers\"].get(\"thread-id\") == \"$THREAD\" and \"write real.txt\" in body else 1)
" || fail "the restarted worker did not resume thread $THREAD"
# An interrupt from the person ends a turn Codex is waiting on the model for (turn/interrupt).
for i in $(seq 60); do [ "$("$CREW" status --json | field state)" = IDLE ] && break; sleep 0.5; done
"$CREW" send --from user --to bob "take your time" >/dev/null
for i in $(seq 60); do [ "$("$CREW" status --json | field state)" = WORK ] && break; sleep 0.5; done
sleep 2
"$CREW" interrupt bob >/dev/null
interrupted() { python3 -c "
import glob, json, sys
events = [json.loads(l)[\"event\"] for f in glob.glob(\".crew/transcripts/bob/*.jsonl\") for l in open(f)]
sys.exit(0 if any(e[\"type\"] == \"turn_end\" and e[\"result\"][\"stop_reason\"] == \"interrupted\" for e in events) else 1)
"; }
for i in $(seq 20); do interrupted && break; sleep 0.5; done
interrupted || fail "the interrupt did not end the Codex turn within 10 s"
"$CREW" down --timeout 10 >/dev/null
echo "PASS codex-real: Codex $VERSION asked crew before its escalated command and its file change; the approved command is the commit of task_1, in review; the rejected change never landed; a restarted worker resumed thread $THREAD; an interrupt ended a turn"
'
