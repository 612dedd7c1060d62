# scripts/attribution.gp: where each decode token's bytes go, as stacked bars: weights and KV
# cache (engine-accounted, from tensor shapes) and the remainder of the measured DRAM bytes
# (activations and everything else). Run by `memwall report --plot DIR` as
#   gnuplot -e "fmt='png'; note='...'" attribution.gp
# attribution.dat columns: bar weights_MB kv_MB remainder_MB
if (fmt eq 'svg') {
	set terminal svg size 700,560 dynamic background rgb 'white' font 'sans,12'
} else {
	set terminal pngcairo size 700,560 font 'sans,11'
}
set termoption noenhanced
set output 'attribution.'.fmt
set title 'MB per decode token by part ('.note.')'
set ylabel 'MB/token (MB = 10^6 bytes)'
set style data histograms
set style histogram rowstacked
set style fill solid 0.75 border -1
set boxwidth 0.5
set grid ytics lc rgb '#dddddd'
set key outside bottom center horizontal
set yrange [0:*]
plot 'attribution.dat' using 2:xtic(1) lc rgb '#1f77b4' title 'weights', \
     '' using 3 lc rgb '#ff7f0e' title 'KV cache', \
     '' using 4 lc rgb '#2ca02c' title 'activations and the rest'
