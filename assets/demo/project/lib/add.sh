# add a b: prints a + b
add() { echo $(( $1 + $2 )); }
