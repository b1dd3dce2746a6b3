#!/usr/bin/env bash
# Claude Code's own agent team under crew, with the real pinned Claude Code: `crew claude setup`
# writes the repository's .claude/settings.local.json (nothing else tells Claude Code about teams
# or tmux mode here), then an interactive lead runs in a private tmux server inside a private
# network namespace with only loopback, against the scripted mock Anthropic API
# (claude-teams-real.json): the lead spawns teammate worker1, which must be launched through
# crew's launcher (`crew cc-teammate`, seen as the pane's start command and in its first screen),
# run as Claude Code against the mock in its own worktree (.worktrees/worker1), take a task, write
# a file with Bash (which also tries to write into the lead's checkout: crew's sandbox, where the
# hook runs the approved command, must refuse that), its permission request answered through
# crew's store (`crew respond`, as
# the approvals pane of `crew attach claude`, which runs in a second window, answers), mark the
# task completed (crew holds it for review: Claude Code's task stays in progress), and its
# SendMessage must reach the lead. The person then merges the task from crew's review queue
# (M in the review queue of `crew attach claude`, the screen that runs beside the lead): only then is Claude Code's task completed and the lead told (its next
# request to the API carries crew's word). worker1's file must be on the base branch through
# the merge, never written into the lead's checkout before it. Then `crew claude setup --undo`
# must leave no settings file. Prints SKIP (exit 0) when npm, tmux or `unshare --net` is not
# available, PASS or FAIL otherwise.
set -euo pipefail
NAME=claude-teams-real
. "$(dirname "$0")/pinned-claude.sh"
command -v tmux >/dev/null || skip "tmux is not installed"

WORK=$(mktemp -d)
[ -n "${KEEP:-}" ] && echo "work folder: $WORK" || trap 'rm -rf "$WORK"' EXIT
REPO=$WORK/repo
mkdir -p "$WORK/home/.claude" "$WORK/log" "$REPO"
git -C "$REPO" init -q -b main
# Project settings that would switch crew's hook off, as a teammate's earlier life could leave
# in its worktree: the teammate's claude must not read them (crew gives it --setting-sources).
mkdir -p "$REPO/.claude"
echo '{"disableAllHooks": true}' >"$REPO/.claude/settings.json"
git -C "$REPO" add .claude/settings.json
git -C "$REPO" -c user.email=t@t -c user.name=t commit -q -m init
# Onboarding done, the mock's key accepted, the repository trusted: no start-up dialogs.
cat >"$WORK/home/.claude.json" <<JSON
{"hasCompletedOnboarding": true, "theme": "dark", "numStartups": 3, "lastOnboardingVersion": "$VERSION",
 "customApiKeyResponses": {"approved": ["sk-test"], "rejected": []},
 "projects": {"$REPO": {"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true, "allowedTools": []}}}
JSON
fail() { echo "FAIL claude-teams-real: $*"; for f in "$WORK"/screen-*.txt; do echo "--- $f"; cat "$f"; done 2>/dev/null;
  tail -20 "$WORK/log/index.log" 2>/dev/null; exit 1; }
(cd "$REPO" && "$CREW" claude setup) >"$WORK/setup.out" 2>&1 || fail "crew claude setup: $(cat "$WORK/setup.out")"
grep -q 'teammateMode: set to "tmux"' "$WORK/setup.out" || fail "setup did not say it set teammateMode"
LAUNCHER=$REPO/.crew/bin/cc-teammate

export HERE REPO WORK CLAUDE CREW
unshare --net bash -c '
set -uo pipefail
ip link set lo up
python3 "$HERE/mock_anthropic.py" 8765 "$WORK/log" "$HERE/claude-teams-real.json" >"$WORK/mock.out" 2>&1 &
MOCK=$!
for i in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/8765) 2>/dev/null && break; sleep 0.1; done
export HOME="$WORK/home" PATH="$(dirname "$CLAUDE"):$PATH" TERM=xterm-256color \
  ANTHROPIC_BASE_URL=http://127.0.0.1:8765 ANTHROPIC_API_KEY=sk-test DISABLE_TELEMETRY=1 \
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_ERROR_REPORTING=1 \
  XDG_DATA_HOME="$WORK/data"
unset TMUX TMUX_PANE CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS CLAUDE_CODE_TEAMMATE_COMMAND
SOCK=$WORK/tmux.sock
tm() { tmux -S "$SOCK" "$@"; }
tm -f /dev/null new-session -d -s main -x 200 -y 50 "cd $REPO && exec claude"
screen() { tm capture-pane -p -t "$1" 2>/dev/null; }
ready=""
for i in $(seq 60); do
  sleep 1
  s=$(screen main)
  if echo "$s" | grep -qE "trust this folder|Yes, I trust|Yes, proceed"; then tm send-keys -t main Enter; continue; fi
  if echo "$s" | grep -qE "Detected a custom API key|use this API key"; then tm send-keys -t main Up Enter; continue; fi
  if echo "$s" | grep -qE "for shortcuts|\? for help|Try \""; then ready=1; break; fi
done
[ -n "$ready" ] || { screen main >"$WORK/screen-lead-not-ready.txt"; }
TEAM=$(ls "$HOME/.claude/teams" 2>/dev/null | head -1)
MIRROR=$XDG_DATA_HOME/crew/claude-code/$TEAM
echo "$TEAM" >"$WORK/team.txt"
# The person watches the team on the crew screen (which keeps the crew workspace for it in step).
tm new-window -d -n crew "cd $REPO && exec $CREW attach claude $TEAM"
tm send-keys -t main -l "LEAD-START: one teammate please"; sleep 0.5; tm send-keys -t main Enter
# Answer the prompts of the lead (spawning a teammate may ask), and keep what the panes show.
for i in $(seq 90); do
  sleep 1
  for p in $(tm list-panes -a -F "#{pane_id}"); do
    s=$(screen "$p")
    echo "$s" >"$WORK/screen-$p.txt"
    [ -f "$WORK/first-$p.txt" ] || echo "$s" >"$WORK/first-$p.txt"
    if echo "$s" | grep -qE "Do you want to|Allow " && echo "$s" | grep -qE "1\. Yes"; then
      tm send-keys -t "$p" Enter; echo "$p $(date +%T) answered" >>"$WORK/answered.txt"; cp "$WORK/screen-$p.txt" "$WORK/prompt-$p-$i.txt"; fi
  done
  # Requests waiting in the crew store are answered there, as the approvals pane answers them.
  for r in $("$CREW" -C "$MIRROR" requests --pending --json 2>/dev/null |
      python3 -c "import json,sys; [print(r[\"request_id\"], r[\"from\"]) for r in json.load(sys.stdin)[\"requests\"]]" 2>/dev/null |
      tr " " ":"); do
    "$CREW" -C "$MIRROR" respond "${r%%:*}" --as user approve >>"$WORK/crew-answers.txt" 2>&1 &&
      echo "${r#*:}" >>"$WORK/crew-askers.txt"
  done
  tm list-panes -a -F "#{pane_id} #{pane_start_command}" >"$WORK/panes.txt" 2>/dev/null
  grep -rl "WORKER1-REPORT" "$WORK/log" 2>/dev/null | xargs -r grep -l "LEAD-START" 2>/dev/null | grep -q . && break
done
# The task waits in the crew review queue; the checkout of the lead does not have the file yet.
cp "$HOME/.claude/tasks/$TEAM/1.json" "$WORK/task-before-merge.json" 2>/dev/null
[ -e "$REPO/worker1.txt" ] && touch "$WORK/in-checkout-before-merge"
"$CREW" -C "$MIRROR" review list --json >"$WORK/reviews.json" 2>&1
# The person merges it from the review queue of the crew screen: ctrl-r, then M on the review.
for i in $(seq 10); do screen main:crew | grep -q "reviews (1)" && break; sleep 1; done
screen main:crew >"$WORK/crew-screen-review.txt"
tm send-keys -t main:crew C-r; sleep 1; tm send-keys -t main:crew M
for i in $(seq 20); do [ -n "$(git -C "$REPO" show main:worker1.txt 2>/dev/null)" ] && break; sleep 0.5; done
screen main:crew >"$WORK/crew-screen-merged.txt"
for i in $(seq 30); do
  grep -rl "reviewed and merged" "$WORK/log" 2>/dev/null | xargs -r grep -l "LEAD-START" 2>/dev/null | grep -q . && break
  sleep 1
done
cp "$HOME/.claude/tasks/$TEAM/1.json" "$WORK/task-after-merge.json" 2>/dev/null
sleep 2
# What the person sees of the team on the crew screen, and the transcript behind the worker1 pane.
screen main:crew >"$WORK/crew-screen.txt"
cp "$XDG_DATA_HOME/crew/claude-code/$TEAM/.crew/transcripts/worker1/claude-code.jsonl" \
  "$WORK/worker1-transcript.jsonl" 2>/dev/null
tm list-panes -a -F "#{pane_id} #{pane_start_command}" >>"$WORK/panes.txt" 2>/dev/null
tm kill-server 2>/dev/null
# The teammate keeps its work when its pane goes: give crew the moment it takes.
for i in $(seq 20); do git -C "$REPO" rev-parse -q --verify crew/worker1 >/dev/null && \
  [ "$(git -C "$REPO" rev-list --count main..crew/worker1)" != 0 ] && break; sleep 0.5; done
kill $MOCK 2>/dev/null
exit 0
'
grep -q "$LAUNCHER" "$WORK/panes.txt" || fail "no pane was started with crew's launcher: $(cat "$WORK/panes.txt")"
cat "$WORK"/first-*.txt | grep -q "crew cc-teammate: worker1 of team session-.* runs Claude Code $VERSION" ||
  fail "the teammate pane does not show crew checking the launch"
grep -rl "WORKER1-PROMPT" "$WORK/log" | xargs -r grep -L "LEAD-START" | grep -q . ||
  fail "worker1 never asked the API (it did not run as Claude Code)"
grep -rl "WORKER1-REPORT" "$WORK/log" | xargs -r grep -l "LEAD-START" | grep -q . ||
  fail "worker1's message never reached the lead"
echo "PASS claude-teams-real (launch): the real lead launched worker1 through $LAUNCHER; it ran as Claude Code $VERSION and its message reached the lead"
grep -qx worker1 "$WORK/crew-askers.txt" 2>/dev/null ||
  fail "worker1's Bash call never waited in crew's store: $(cat "$WORK/crew-answers.txt" 2>/dev/null)"
echo "PASS claude-teams-real (permissions): worker1's Bash call waited for the person in crew's store and ran once approved there"
[ ! -e "$WORK/in-checkout-before-merge" ] || fail "worker1 wrote into the lead's checkout"
[ "$(git -C "$REPO" show crew/worker1:worker1.txt 2>/dev/null)" = from-worker1 ] ||
  fail "worker1's file is not a commit on crew/worker1: $(cat "$REPO/.crew/logs/cc-teammates.log" 2>/dev/null)"
echo "PASS claude-teams-real (worktree): worker1 worked in its own worktree; its file is a commit on crew/worker1, not in the lead's checkout"
[ ! -e "$REPO/escaped-by-worker1.txt" ] ||
  fail "worker1's command wrote into the lead's checkout: crew's sandbox did not confine it"
echo "PASS claude-teams-real (sandbox): worker1's approved Bash ran in crew's sandbox: its write into the lead's checkout was refused"
python3 - "$WORK/worker1-transcript.jsonl" <<'PY' || fail "worker1's transcript in crew's workspace lacks its Bash call or what it gave: $(cat "$WORK/worker1-transcript.jsonl" 2>/dev/null)"
import json, sys
events = [json.loads(line)["event"] for line in open(sys.argv[1])]
calls = {e["id"]: e for e in events if e["type"] == "tool_use" and e["name"] == "Bash"}
results = [e for e in events if e["type"] == "tool_result" and e["id"] in calls]
assert calls and results and "from-worker1" in json.dumps(list(calls.values())), events
PY
grep -q "from-worker1" "$WORK/crew-screen.txt" ||
  fail "crew's screen does not show worker1's Bash call: $(cat "$WORK/crew-screen.txt")"
echo "PASS claude-teams-real (watch): crew's screen shows worker1's tool calls (its transcript in crew's workspace holds each call and what it gave)"
grep -q '"status": *"in_progress"' "$WORK/task-before-merge.json" 2>/dev/null ||
  fail "Claude Code's task was not held in progress during the review: $(cat "$WORK/task-before-merge.json" 2>/dev/null)"
grep -q "worker1.txt" "$WORK/reviews.json" || fail "the task is not in crew's review queue: $(cat "$WORK/reviews.json")"
grep -q "reviews (1)" "$WORK/crew-screen-review.txt" ||
  fail "the review is not in the queue of the crew screen: $(cat "$WORK/crew-screen-review.txt")"
[ "$(git -C "$REPO" show main:worker1.txt 2>/dev/null)" = from-worker1 ] || fail "worker1's file is not on main after the merge"
grep -q '"status": *"completed"' "$WORK/task-after-merge.json" 2>/dev/null ||
  fail "Claude Code's task is not completed after the merge: $(cat "$WORK/task-after-merge.json" 2>/dev/null)"
grep -rl "reviewed and merged" "$WORK/log" | xargs -r grep -l "LEAD-START" | grep -q . ||
  fail "the lead never heard of the merge"
echo "PASS claude-teams-real (review): worker1's completed task waited in crew's review queue (in progress for Claude Code) until the person merged it from crew's screen; then it was completed and the lead told"
(cd "$REPO" && "$CREW" claude setup --undo) >"$WORK/undo.out" 2>&1 || fail "undo: $(cat "$WORK/undo.out")"
[ ! -e "$REPO/.claude/settings.local.json" ] || fail "undo left $(cat "$REPO/.claude/settings.local.json")"
[ ! -e "$LAUNCHER" ] || fail "undo left the launcher"
echo "PASS claude-teams-real (undo): the settings file the setup created is gone again"
