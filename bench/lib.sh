# Shared by bench/bench.sh and bench/router.sh.  Sourced, not executed.

# the machine's CPU in use, stolen by the host, and in all, in clock ticks: "busy steal total"
machine_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }

# steady_tps DIR: transactions per second from the pgbench logs in DIR, over
# the window in which every client has finished its first $WARM
# transactions and none has finished its last; nothing if that window is empty
WARM=20
steady_tps() {
	cat "$1"/tx.* | awk -v k=$WARM '
		{ c = $1; t = $5 * 1000000 + $6; n[c]++; at[NR] = t
		  if (n[c] == k) kth[c] = t
		  if (!(c in last) || t > last[c]) last[c] = t }
		END {
			for (c in n) {
				w = (c in kth) ? kth[c] : last[c]
				if (start == "" || w > start) start = w
				if (end == "" || last[c] < end) end = last[c]
			}
			for (i = 1; i <= NR; i++) if (at[i] > start && at[i] <= end) m++
			if (end > start && m > 0) printf "%.3f\n", m * 1000000 / (end - start)
		}'
}
