# Resolve throughput next to its baselines.  Called by bench/run with
# data (clients, pgbench -N, C, PL/pgSQL, PL/pgSQL without NOTIFY) and
# output file names.
set terminal svg size 760,460 dynamic font "sans,12"
set output outfile
set termoption noenhanced
set title "Resolves of distinct interrupts per second (same cluster, same run)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key below
set ylabel "transactions per second"
set xlabel "clients"
set yrange [0:*]
set grid ytics
plot datafile using 2:xtic(1) title "pgbench -N" lc rgb "#9e9e9e", \
     '' using 3 title "openwop.resolve_interrupt (C)" lc rgb "#1565c0", \
     '' using 4 title "PL/pgSQL resolve (write it yourself)" lc rgb "#ef6c00", \
     '' using 5 title "the same PL/pgSQL without its pg_notify" lc rgb "#ffcc80"
