#!/usr/bin/env bash
# The real Claude Code CLI as a crew teammate: installs the pinned @anthropic-ai/claude-code from
# npm (once, into target/interop), then, inside a private network namespace with only loopback
# (the CLI never reaches the internet), runs it as teammate alice against the scripted mock
# Anthropic API (mock_anthropic.py, claude-real.json): the CLI's Bash call must come to crew as a
# permission request, be approved with `crew respond`, run, and end as task_1's commit in review;
# its second Bash call is rejected, and the rejection reaches the CLI (the command never runs).
# Then Claude Code as the lead: `crew up --headless` gives it `crew mcp --as lead` through
# --mcp-config; scripted by claude-real-lead.json it creates task_1 with mcp__crew__task_create
# (allowed by crew's policy without asking, as crew's own team tools are) and tries
# mcp__crew__send_message, which a deny rule refuses; crew's own teammate alice completes task_1.
# First of all, `crew init --yes` with that CLI on PATH must pick Claude Code for the team.
# Prints SKIP (exit 0) when npm or `unshare --net` is not available, PASS or FAIL otherwise.
set -euo pipefail
NAME=claude-real
. "$(dirname "$0")/pinned-claude.sh"

WORK=$(mktemp -d)
[ -n "${KEEP:-}" ] && echo "work folder: $WORK" || trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/home" "$WORK/log" "$WORK/lead-log"

# Part zero: `crew init --yes` with the pinned CLI on PATH (and no key, no local server) runs
# `claude --version`, accepts the version and gives the whole team Claude Code.
INIT=$WORK/init
mkdir -p "$INIT" && git -C "$INIT" init -q -b main
init_fail() { echo "FAIL claude-real (init): $*"; cat "$WORK/init.out"; exit 1; }
(cd "$INIT" && env -u ANTHROPIC_API_KEY -u OPENAI_API_KEY PATH="$(dirname "$CLAUDE"):/usr/bin:/bin" \
  CREW_LOCAL_MODEL_PORTS= HOME="$WORK/home" unshare --net "$CREW" init --yes) >"$WORK/init.out" 2>&1 ||
  init_fail "crew init failed"
grep -q "^chose: Claude Code $VERSION" "$WORK/init.out" || init_fail "it did not choose Claude Code $VERSION"
[ "$(grep -c '^model = { provider = "claude-code" }' "$INIT/crew.toml")" = 4 ] ||
  init_fail "crew.toml does not give the four agents Claude Code: $(grep '^model' "$INIT/crew.toml")"
echo "PASS claude-real (init): crew init --yes found Claude Code $VERSION on PATH and gave it the team"
# team_repo DIR LEAD_MODEL TEAMMATE_LINES PERMISSION_LINES: a committed repository whose crew.toml
# has that lead and one teammate alice, with crew's folders kept out of git.
team_repo() {
  mkdir -p "$1"
  cat >"$1/crew.toml" <<TOML
[team]
name = "interop"
base_branch = "main"

[lead]
name = "lead"
model = $2

[[teammate]]
name = "alice"
role = "implementer"
$3

[permissions]
mode = "ask"
$4

[worker]
idle_poll_secs = 1
idle_timeout_secs = 120
heartbeat_secs = 1
request_timeout_secs = 60
TOML
  git -C "$1" init -q -b main
  printf '.tasks\n.mailboxes\n.worktrees\n.crew\n' >"$1/.git/info/exclude"
  # Project settings a teammate could have written in its worktree: a hook the CLI would run
  # as the person, outside the sandbox. The CLI crew runs must not read them
  # (--setting-sources user).
  mkdir -p "$1/.claude"
  printf '{"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "touch %s"}]}]}}\n' \
    "$WORK/planted-hook-ran" >"$1/.claude/settings.json"
  git -C "$1" add -A
  git -C "$1" -c user.email=t@t -c user.name=t commit -q -m "interop team"
}
REPO=$WORK/repo
team_repo "$REPO" '{ provider = "scripted", scenario = "echo" }' \
  "writes = true
model = { provider = \"claude-code\", bin = \"$CLAUDE\" }" ""

export HERE REPO CREW WORK VERSION
# in_namespace LOGDIR SCRIPT DIR BODY: runs the shell text BODY in DIR inside a private network
# namespace with only loopback, where the mock API plays SCRIPT on 127.0.0.1:8765 (and ends with
# BODY), with the environment the CLI needs to use it.
in_namespace() {
  unshare --net bash -c '
set -euo pipefail
ip link set lo up
python3 "$HERE/mock_anthropic.py" 8765 "$1" "$2" >"$1/mock.out" 2>&1 &
MOCK=$!; trap "kill $MOCK 2>/dev/null" EXIT
for i in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/8765) 2>/dev/null && break; sleep 0.1; done
cd "$3"
export HOME="$WORK/home" ANTHROPIC_BASE_URL=http://127.0.0.1:8765 ANTHROPIC_API_KEY=sk-test \
  DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 \
  DISABLE_ERROR_REPORTING=1
eval "$4"' ns "$@"
}
in_namespace "$WORK/log" "$HERE/claude-real.json" "$REPO" '
fail() { echo "FAIL claude-real: $*"; "$CREW" down --timeout 5 >/dev/null 2>&1 || true;
  echo "--- alice log"; cat .crew/logs/alice.log 2>/dev/null || cat "$WORK/alice.out"; exit 1; }
"$CREW" worker --name alice >"$WORK/alice.out" 2>&1 &
"$CREW" task add "write real.txt" >/dev/null
field() { python3 -c "import json,sys; a=[x for x in json.load(sys.stdin)[\"agents\"] if x[\"name\"]==\"alice\"]; print((a[0].get(sys.argv[1]) if a else None) or \"\")" "$1"; }
REQ=""
for i in $(seq 120); do
  if [ "$("$CREW" status --json | field state)" = WAITING ]; then
    REQ=$("$CREW" status --json | field waiting_on); break
  fi
  sleep 0.5
done
[ -n "$REQ" ] || fail "the CLI never asked crew for its Bash call"
"$CREW" respond "$REQ" --as user approve >/dev/null
FIRST=$REQ
REQ=""
for i in $(seq 120); do
  NOW=$("$CREW" status --json | field waiting_on)
  if [ -n "$NOW" ] && [ "$NOW" != "$FIRST" ]; then REQ=$NOW; break; fi
  sleep 0.5
done
[ -n "$REQ" ] || fail "the CLI never asked crew for its second Bash call"
"$CREW" respond "$REQ" --as user reject --note "not that one" >/dev/null
STATUS=""
for i in $(seq 120); do
  STATUS=$(python3 -c "import json; print(json.load(open(\".tasks/task_1.json\"))[\"status\"])")
  [ "$STATUS" = review ] || [ "$STATUS" = failed ] || [ "$STATUS" = completed ] && break
  sleep 0.5
done
[ "$STATUS" = review ] || fail "task_1 is $STATUS, not review: $(cat .tasks/task_1.json)"
DIFF=$("$CREW" review diff task_1)
case "$DIFF" in *real.txt*) ;; *) fail "the commit of task_1 does not hold real.txt: $DIFF" ;; esac
[ ! -e .worktrees/alice/denied.txt ] || fail "the rejected command ran"
# The approved command ran in the sandbox of crew: its write beside the worktree was refused.
[ ! -e escaped-by-alice.txt ] || fail "the approved command wrote outside its worktree: the sandbox of crew did not hold it"
[ ! -e "$WORK/planted-hook-ran" ] || fail "the CLI ran a hook from the project settings in the worktree, outside the sandbox"
# The tool result the CLI itself reports for the rejected call carries the note of the person.
python3 -c "
import glob, json, sys
events = [json.loads(l)[\"event\"] for f in glob.glob(\".crew/transcripts/alice/*.jsonl\") for l in open(f)]
sys.exit(0 if any(e[\"type\"] == \"tool_result\" and e[\"is_error\"] and \"not that one\" in e[\"content\"] for e in events) else 1)
" || fail "the rejection never reached the CLI"
"$CREW" down --timeout 10 >/dev/null
echo "PASS claude-real: Claude Code $VERSION asked crew before its Bash calls; the approved one ran in the sandbox of crew (its write outside the worktree refused) and is the commit of task_1, in review; the rejected one never ran"
'

# Part two: the real CLI as the lead, planning through `crew mcp`.
LEAD_REPO=$WORK/lead-repo
team_repo "$LEAD_REPO" "{ provider = \"claude-code\", bin = \"$CLAUDE\" }" \
  'model = { provider = "scripted", scenario = "echo" }' 'deny = ["send_message"]'

export LEAD_REPO
in_namespace "$WORK/lead-log" "$HERE/claude-real-lead.json" "$LEAD_REPO" '
"$CREW" up --headless --goal "greet the world" >"$WORK/up.out" 2>&1 &
UP=$!
fail() { echo "FAIL claude-real (lead): $*"; kill $UP 2>/dev/null || true;
  echo "--- crew up"; cat "$WORK/up.out"; echo "--- crew log"; tail -50 .crew/logs/crew.log 2>/dev/null; exit 1; }
STATUS=""
for i in $(seq 120); do
  STATUS=$(python3 -c "import json; print(json.load(open(\".tasks/task_1.json\"))[\"status\"])" 2>/dev/null || true)
  [ "$STATUS" = completed ] || [ "$STATUS" = failed ] && break
  sleep 0.5
done
[ "$STATUS" = completed ] || fail "task_1 is ${STATUS:-missing}, not completed"
OWNER=$(python3 -c "import json; print(json.load(open(\".tasks/task_1.json\"))[\"owner\"])")
[ "$OWNER" = alice ] || fail "task_1 was completed by $OWNER, not alice"
[ -z "$("$CREW" requests --json | python3 -c "import json,sys; print(json.load(sys.stdin)[\"requests\"] or \"\")")" ] ||
  fail "crew asked the person: $("$CREW" requests)"
python3 -c "
import glob, json, sys
events = [json.loads(l)[\"event\"] for f in glob.glob(\".crew/transcripts/lead/*.jsonl\") for l in open(f)]
uses = [e[\"name\"] for e in events if e[\"type\"] == \"tool_use\"]
denied = [e for e in events if e[\"type\"] == \"tool_result\" and e[\"is_error\"] and \"send_message\" in e[\"content\"]]
sys.exit(0 if \"mcp__crew__task_create\" in uses and denied else 1)
" || fail "the lead transcript lacks the MCP calls or the denial: $(cat .crew/transcripts/lead/*.jsonl | cut -c1-300)"
kill -TERM $UP; wait $UP || true
echo "PASS claude-real (lead): Claude Code $VERSION as the lead created task_1 through crew mcp, its denied send_message never went out, and alice completed task_1"
'
