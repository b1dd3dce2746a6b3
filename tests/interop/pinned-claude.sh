# Sourced by the interop scripts that run the real Claude Code: with NAME set to the script's
# name, it sets HERE ROOT VERSION CREW CLAUDE, prints SKIP (exit 0) when python3, `unshare --net`
# or the pinned CLI (npm-installed once into target/interop) is not available, and builds crew
# when it is not built.
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
VERSION=2.1.197
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
CACHE=$TARGET/interop/claude-code
CREW=$TARGET/debug/crew
CLAUDE=$CACHE/node_modules/@anthropic-ai/claude-code-linux-x64/claude

skip() { echo "SKIP $NAME: $*"; exit 0; }
command -v python3 >/dev/null || skip "python3 is not installed"
unshare --net true 2>/dev/null || skip "cannot make a private network namespace (unshare --net)"
if [ ! -x "$CLAUDE" ]; then
  command -v npm >/dev/null || skip "npm is not installed"
  mkdir -p "$CACHE"
  (cd "$CACHE" && npm install --no-audit --no-fund --ignore-scripts \
      "@anthropic-ai/claude-code@$VERSION" >npm.log 2>&1) ||
    skip "npm could not install @anthropic-ai/claude-code@$VERSION (see $CACHE/npm.log)"
  [ -x "$CLAUDE" ] || skip "the package has no linux-x64 binary at $CLAUDE"
fi
[ -x "$CREW" ] || (cd "$ROOT" && cargo build --quiet)
