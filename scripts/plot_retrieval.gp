# scripts/plot_retrieval.gp — renders the CCQ retrieval demo's CSV (examples/02_ccq_retrieval.cpp) as a PNG.
#
#   gnuplot -e "csv='docs/ccq_retrieval.csv'; png='docs/ccq_retrieval.png'" scripts/plot_retrieval.gp
#
# One panel per write rule: retrieval success rate against context length, for the identity read (λ = 0),
# CCQ at each λ, and float64 softmax attention over the same keys as the reference point.
if (!exists("csv")) csv = 'docs/ccq_retrieval.csv'
if (!exists("png")) png = 'docs/ccq_retrieval.png'

set terminal pngcairo size 1600,1000 font ",12" noenhanced
set output png
set datafile separator ","
set logscale x 2
set xrange [200:20000]
set yrange [-0.03:1.03]
set xtics ("256" 256, "1k" 1024, "4k" 4096, "16k" 16384)
set ytics 0.25
set grid
set key outside right top samplen 2 font ",10"
set xlabel "context length T (tokens)"
set ylabel "success rate (needle value nearest)"

rows(rule, read, lambda) = sprintf("< awk -F, '$1==\"%s\" && $2==\"%s\" && $3==%s' %s", rule, read, lambda, csv)

set multiplot layout 2,2 title "Single-needle retrieval over a low-rank key bulk: identity read vs CCQ (no training)"
do for [rule in "additive gla delta gated_delta"] {
  set title rule
  plot rows("softmax", "softmax", "0")  using 4:7 with linespoints lw 2 dt 2 lc rgb "black" title "softmax (float64)", \
       rows(rule, "identity", "0")      using 4:7 with linespoints lw 3 lc rgb "#d62728" title "identity read", \
       rows(rule, "ccq", "0.5")         using 4:7 with linespoints lw 2 lc rgb "#9ecae1" title "CCQ λ=0.5", \
       rows(rule, "ccq", "1")           using 4:7 with linespoints lw 2 lc rgb "#6baed6" title "CCQ λ=1", \
       rows(rule, "ccq", "2")           using 4:7 with linespoints lw 2 lc rgb "#3182bd" title "CCQ λ=2", \
       rows(rule, "ccq", "4")           using 4:7 with linespoints lw 3 lc rgb "#08519c" title "CCQ λ=4"
}
unset multiplot
