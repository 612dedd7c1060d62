# scripts/latency.gp: per-token decode latency of the measured runs. Top: the empirical CDF
# with p50 and p99 marked. Bottom: every token's latency in run order with a rolling mean
# +/- one sd (window w tokens), the jitter figure of "Bare-Metal Tensor Virtualization".
# Run by `memwall report --plot DIR` as
#   gnuplot -e "fmt='png'; datadir='DIR'; label='...'; p50=..; p99=..; w=.." latency.gp
# latency_ecdf.dat: ms fraction     rolling.dat: token ms rolling_mean rolling_sd
if (fmt eq 'svg') {
	set terminal svg size 900,800 dynamic background rgb 'white' font 'sans,12'
} else {
	set terminal pngcairo size 900,800 font 'sans,11'
}
set termoption noenhanced
set output datadir.'/latency.'.fmt
set multiplot layout 2, 1 title label
set grid lc rgb '#dddddd'
set key bottom right
set xlabel 'latency per token (ms)'
set ylabel 'fraction of tokens'
set yrange [0:1.05]
set arrow 1 from first p50, graph 0 to first p50, graph 1 nohead dt 2 lc rgb '#1f77b4'
set arrow 2 from first p99, graph 0 to first p99, graph 1 nohead dt 2 lc rgb '#d62728'
set label 1 sprintf(' p50 %.4g ms', p50) at first p50, graph 0.25 tc rgb '#1f77b4'
set label 2 sprintf('p99 %.4g ms ', p99) at first p99, graph 0.55 right tc rgb '#d62728'
plot datadir.'/latency_ecdf.dat' using 1:2 with steps lw 2 lc rgb '#333333' title 'empirical CDF'
unset arrow
unset label
set key top right
set xlabel 'token (measured runs in order)'
set ylabel 'latency (ms)'
set yrange [0:*]
plot datadir.'/rolling.dat' using 1:($3 - $4):($3 + $4) with filledcurves fc rgb '#1f77b4' fs transparent solid 0.25 noborder \
	title sprintf('rolling mean +/- sd (%d tokens)', w), \
     '' using 1:2 with points pt 7 ps 0.3 lc rgb '#888888' title 'token', \
     '' using 1:3 with lines lw 2 lc rgb '#1f77b4' title 'rolling mean'
unset multiplot
