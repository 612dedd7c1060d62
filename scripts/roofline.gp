# scripts/roofline.gp: the roofline of a decode step (Williams, Waterman and Patterson, CACM
# 2009): attainable GFLOP/s against arithmetic intensity (FLOPs per byte moved), the memory
# roof (bw x intensity) and the compute roof (peak), with the analytic step and the measured
# point. Run by `memwall roofline --plot DIR` as
#   gnuplot -e "fmt='png'; label='...'; bw=GBPS; peak=GFLOPS; ai=FLOPS_PER_BYTE" roofline.gp
# roofline.dat columns: label flops_per_byte gflops. bw or peak 0: that roof is unknown.
if (fmt eq 'svg') {
	set terminal svg size 900,600 dynamic background rgb 'white' font 'sans,12'
} else {
	set terminal pngcairo size 900,600 font 'sans,11'
}
set termoption noenhanced
set output 'roofline.'.fmt
set title label
set logscale xy 10
set xlabel 'arithmetic intensity (FLOPs per byte; a multiply-add is 2 FLOPs)'
set ylabel 'attainable GFLOP/s'
set grid xtics ytics mxtics mytics lc rgb '#dddddd'
set key top left
xmin = ai / 100.0
xmax = ai * 1000.0
set xrange [xmin:xmax]
set samples 400
mem(x) = bw > 0 ? bw * x : NaN
roof(x) = bw > 0 && peak > 0 ? (bw * x < peak ? bw * x : peak) : (bw > 0 ? mem(x) : peak)
set arrow from ai, graph 0 to ai, graph 1 nohead dt 2 lc rgb '#999999'
set label 'decode step' at ai, graph 0.05 offset 0.5, 0 tc rgb '#666666'
roof_title = (bw > 0 ? sprintf('%.1f GB/s', bw) : 'bandwidth unknown').', '.(peak > 0 ? sprintf('%.1f GFLOP/s', peak) : 'compute roof unknown')
plot roof(x) lw 2 lc rgb '#1f77b4' title 'roof: '.roof_title, \
     'roofline.dat' using 2:3 with points pt 7 ps 1.6 lc rgb '#d62728' notitle, \
     '' every ::0::0 using 2:3:1 with labels offset 1, 1 left notitle, \
     '' every ::1::1 using 2:3:1 with labels offset 1, -1 left notitle
