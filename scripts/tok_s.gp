# scripts/tok_s.gp: decode tokens per second of each run, warm-ups in grey, with the mean of
# the measured runs and its 95% confidence interval. Run by `memwall report --plot DIR` as
#   gnuplot -e "fmt='png'; datadir='DIR'; label='...'; note='...'; m=..; lo=..; hi=.." tok_s.gp
# runs.dat columns: run warmup dram_MB dram_MB_sd engine_MB engine_MB_sd tok_s
if (fmt eq 'svg') {
	set terminal svg size 900,560 dynamic background rgb 'white' font 'sans,12'
} else {
	set terminal pngcairo size 900,560 font 'sans,11'
}
set termoption noenhanced
set output datadir.'/tok_s.'.fmt
set title label."\n".note
set xlabel 'run'
set ylabel 'decode tokens/s'
set xtics 1
set grid ytics lc rgb '#dddddd'
set key outside bottom center horizontal
set style fill solid 0.6 border -1
set boxwidth 0.6
set offsets 0.5, 0.5, 0, 0
set yrange [0:*]
if (m == m) {
	set object 1 rect from graph 0, first lo to graph 1, first hi fc rgb '#2ca02c' fs transparent solid 0.15 noborder behind
	set arrow 1 from graph 0, first m to graph 1, first m nohead dt 2 lc rgb '#2ca02c' lw 1.5
}
plot datadir.'/runs.dat' using 1:($2 == 0 ? $7 : 1/0) with boxes lc rgb '#2ca02c' \
	title 'measured run (dashed: mean, band: 95% CI)', \
     '' using 1:($2 == 1 ? $7 : 1/0) with boxes lc rgb '#bbbbbb' title 'warm-up (not counted)'
