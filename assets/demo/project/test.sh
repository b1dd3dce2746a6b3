#!/bin/sh
# Loads every lib/*.sh, runs every tests/*_test.sh, prints "N passed, M failed".
cd "$(dirname "$0")" || exit 2
passed=0
failed=0
check() {
    if [ "$2" = "$3" ]; then
        echo "ok - $1"
        passed=$((passed + 1))
    else
        echo "not ok - $1: got '$2', want '$3'"
        failed=$((failed + 1))
    fi
}
for f in lib/*.sh; do . "./$f"; done
for t in tests/*_test.sh; do . "./$t"; done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
