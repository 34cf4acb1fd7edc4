# SPDX-License-Identifier: MIT
# Shell helpers shared by the bench/*.sh scripts (sourced, not run).

# best_time CMD...: the best wall time of 5 runs of CMD, in seconds.
best_time() {
    best=
    for _ in 1 2 3 4 5; do
        t0=$(date +%s.%N)
        "$@" > /dev/null
        t1=$(date +%s.%N)
        best=$(echo "$t0 $t1 $best" | awk '{ d = $2 - $1;
            if ($3 == "" || d < $3) print d; else print $3 }')
    done
    echo "$best"
}
