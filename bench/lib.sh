# SPDX-License-Identifier: MIT
# Shell helpers shared by the bench/*.sh scripts (sourced, not run, from
# the top of the tree).

# bench_setup TARGET...: build what the script runs, as `make bench` does,
# so that a script run on its own from a fresh clone works: each TARGET is
# a file under $BUILD or a make target (bench-venv: $VENV with the
# reference packages and the peers of bench/requirements.txt).  Needs
# BUILD, DATA and VENV set.  With BENCH_DRY_RUN=1 it prints what it would
# build (make -n) and exits 0, which the tests use.  Make's own output goes
# to stderr: stdout is the script's table.
bench_setup() {
    if [ ! -d "$DATA" ]; then
        echo "$0: no data directory '$DATA' (give it as the second argument)" >&2
        exit 1
    fi
    if [ -n "${BENCH_DRY_RUN:-}" ]; then
        make --no-print-directory -n BUILD="$BUILD" VENV="$VENV" "$@"
        exit 0
    fi
    make --no-print-directory BUILD="$BUILD" VENV="$VENV" "$@" >&2 || {
        echo "$0: cannot build $*" >&2
        exit 1
    }
}

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

# wait_quiet: wait (at most $QUIET seconds) for the machine to look idle
# before a timed run (bench/train_cpu_torch.py quiet), adding the seconds
# waited to $waited and counting in $busy the runs that started busy.
wait_quiet() {
    q=$($VENV/bin/python bench/train_cpu_torch.py quiet "$QUIET")
    waited=$((${waited:-0} + ${q% *}))
    [ "${q#* }" = idle ] || busy=$((${busy:-0} + 1))
}

# AWK_MEDIAN: an awk function for the scripts' tables, put before their
# program: med(k, col), the median of v[k, 1..cnt[k], col].
AWK_MEDIAN='
    function med(k, col,   i, j, x, a) {
        for (i = 1; i <= cnt[k]; i++) {
            x = v[k, i, col]
            for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]
            a[j + 1] = x
        }
        i = cnt[k]
        return i % 2 ? a[(i + 1) / 2] : (a[i / 2] + a[i / 2 + 1]) / 2
    }
'
