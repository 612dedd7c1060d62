# scripts/batch.gp: batched decode, measured against predicted: MB per generated token and
# aggregate decode tok/s against the batch size N. Run by `memwall report --plot DIR` on a
# record of batch variants as
#   gnuplot -e "fmt='png'; datadir='DIR'; label='...'; src='measured'" batch.gp
# (src: who counted the MB/token series, 'SIMULATED' for the simulated PMU)
# batch.dat columns: N measured_MB_per_token tok_s predicted_MB_per_token predicted_tok_s
# (the prediction is analytic and memory-bound: src/record/report_variants.c)
if (fmt eq 'svg') {
	set terminal svg size 1100,520 dynamic background rgb 'white' font 'sans,12'
} else {
	set terminal pngcairo size 1100,520 font 'sans,11'
}
set termoption noenhanced
set output datadir.'/batch.'.fmt
set multiplot layout 1,2 title label
set xlabel 'batch size N'
set logscale x 2
set grid lc rgb '#dddddd'
set key top right
set yrange [0:*]
set ylabel 'MB per generated token'
if (!exists('src')) src = 'measured'
plot datadir.'/batch.dat' using 1:2 with linespoints lw 2 pt 7 lc rgb '#1f77b4' title src, \
     '' using 1:4 with lines dt 2 lw 2 lc rgb '#555555' title 'predicted (analytic)'
set key top left
set ylabel 'decode tok/s (aggregate)'
plot datadir.'/batch.dat' using 1:3 with linespoints lw 2 pt 7 lc rgb '#2ca02c' title 'measured', \
     '' using 1:5 with lines dt 2 lw 2 lc rgb '#555555' title 'predicted (memory-bound)'
unset multiplot
