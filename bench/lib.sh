# SPDX-License-Identifier: MIT
# Shell helpers shared by the bench/*.sh scripts (sourced, not run).

# best_time CMD...: the best wall time of CMD, in seconds, over at least 5
# runs and at least one second of runs (at most 40 runs).  A run of ours on
# these inputs takes 30-300 ms, so five of them can fall inside one burst
# of noise from the VM's host, while a peer's best of 3 spans several
# seconds; sampling ours over a second at least evens that out.
best_time() {
    best= n=0 start=$(date +%s.%N)
    while :; do
        t0=$(date +%s.%N)
        "$@" > /dev/null
        t1=$(date +%s.%N)
        n=$((n + 1))
        best=$(echo "$t0 $t1 $best" | awk '{ d = $2 - $1;
            if ($3 == "" || d < $3) print d; else print $3 }')
        [ $n -ge 40 ] && break
        [ $n -ge 5 ] && echo "$start $t1" | awk '{ exit !($2 - $1 >= 1) }' &&
            break
    done
    echo "$best"
}
