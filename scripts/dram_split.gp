# scripts/dram_split.gp: DRAM bytes per decode token by memory-controller instance (gross:
# before the idle baseline is subtracted), over every measured run. Drawn only when DRAM was
# measured. Run by `memwall report --plot DIR` as
#   gnuplot -e "fmt='png'; datadir='DIR'; label='...'" dram_split.gp
# instances.dat columns: pmu read_MB_per_token write_MB_per_token total_MB_per_token; a
# figure the backend does not measure is NaN there (resctrl and amd_df have no read/write
# split), and its bars are left out
if (fmt eq 'svg') {
	set terminal svg size 900,560 dynamic background rgb 'white' font 'sans,12'
} else {
	set terminal pngcairo size 900,560 font 'sans,11'
}
set termoption noenhanced
set output datadir.'/dram_split.'.fmt
set title label
set ylabel 'MB/token (MB = 10^6 bytes), gross'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.7 border -1
set grid ytics lc rgb '#dddddd'
set key outside bottom center horizontal
set xtics rotate by -30
set yrange [0:*]
# cols: which columns hold a figure (1 read, 2 written, 4 total); a backend without a
# read/write split (resctrl, amd_df) has only the total, and a column that is NaN throughout
# cannot be drawn as a histogram.
if (!exists('cols')) cols = 7
f = datadir.'/instances.dat'
cmd = ''
if (cols & 1) { cmd = cmd.sprintf("'%s' using 2:xtic(1) lc rgb '#1f77b4' title 'read'", f) }
if (cols & 2) { cmd = cmd.(strlen(cmd) ? ', ' : '').sprintf("'%s' using 3%s lc rgb '#ff7f0e' title 'written'", f, strlen(cmd) ? '' : ':xtic(1)') }
if (cols & 4) { cmd = cmd.(strlen(cmd) ? ', ' : '').sprintf("'%s' using 4%s lc rgb '#2ca02c' title 'read + written'", f, strlen(cmd) ? '' : ':xtic(1)') }
eval('plot '.cmd)
