# scripts/mb_per_token.gp: MB/token per run: DRAM reads measured by the memory controllers
# (mean and sd over the run's tokens, idle baseline subtracted) beside the engine-accounted
# bytes. Written into the plot folder and run by `memwall report --plot DIR` as
#   gnuplot -e "fmt='png'; datadir='DIR'; label='...'; note='...'; dram=1" mb_per_token.gp
# (dram=0 when the record has no DRAM reading: the key says so instead of showing a series;
# src names who counted it: 'measured', or 'SIMULATED ...' for the simulated PMU; cal=1 adds
# the calibrated estimate, titled calnote, when a calibration applies)
# runs.dat columns: run warmup dram_MB dram_MB_sd engine_MB engine_MB_sd tok_s dram_cal_MB
# dram_cal_MB_sd
if (fmt eq 'svg') {
	set terminal svg size 900,560 dynamic background rgb 'white' font 'sans,12'
} else {
	set terminal pngcairo size 900,560 font 'sans,11'
}
set termoption noenhanced
set output datadir.'/mb_per_token.'.fmt
set title label."\n".note
set xlabel 'run (hollow: warm-up, not counted)'
set ylabel 'MB/token (MB = 10^6 bytes)'
set xtics 1
set grid ytics lc rgb '#dddddd'
set key outside bottom center horizontal
set offsets 0.5, 0.5, 0, 0
set yrange [0:*]
if (!exists('src')) src = 'measured'
if (!exists('cal')) cal = 0
if (!exists('calnote')) calnote = 'DRAM, calibrated estimate'
calplot = cal ? sprintf(", '%s' using ($2 == 0 ? $1 - 0.1 : 1/0):8:9 with yerrorbars pt 9 ps 1.3 lc rgb '#9467bd' title '%s', '' using ($2 == 1 ? $1 - 0.1 : 1/0):8:9 with yerrorbars pt 8 ps 1.3 lc rgb '#9467bd' notitle", datadir.'/runs.dat', calnote) : ''
eval("plot datadir.'/runs.dat' using ($2 == 0 ? $1 : 1/0):3:4 with yerrorbars pt 7 ps 1.3 lc rgb '#1f77b4' title (dram ? 'DRAM read, '.src.' (mean +/- sd over tokens)' : 'DRAM read: not measured'), '' using ($2 == 1 ? $1 : 1/0):3:4 with yerrorbars pt 6 ps 1.3 lc rgb '#1f77b4' notitle, '' using ($2 == 0 ? $1 + 0.1 : 1/0):5:6 with yerrorbars pt 5 ps 1.1 lc rgb '#d62728' title 'engine-accounted (mean +/- sd over tokens)', '' using ($2 == 1 ? $1 + 0.1 : 1/0):5:6 with yerrorbars pt 4 ps 1.1 lc rgb '#d62728' notitle".calplot)
