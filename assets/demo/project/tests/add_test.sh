check "add 2 3" "$(add 2 3)" 5
check "add -1 1" "$(add -1 1)" 0
