# memsim: policies compared on one trace (memsim compare --plot).
#   gnuplot -c compare.gp SUMMARY.csv TIMELINES.csv OUT.png|OUT.svg|OUT.pdf [TITLE]
# SUMMARY.csv (no header): policy,peak_reserved,peak_allocated,frag_at_peak,device_calls,
# time_ms (one row per policy).  TIMELINES.csv: one block per policy,
# blocks separated by two blank lines, each headed "request,<policy>" and
# then request,reserved rows.
if (ARGC < 3) { print "usage: gnuplot -c compare.gp SUMMARY.csv TIMELINES.csv OUT.png [TITLE]"; exit status 2 }
summary = ARG1; tl = ARG2; out = ARG3
title = (ARGC >= 4 && strlen(ARG4) > 0) ? ARG4 : "memsim compare"
ext = out[strlen(out)-2:]
if (ext eq "png") { set terminal pngcairo size 1400,900 noenhanced font ",10" } else {
if (ext eq "svg") { set terminal svg size 1400,900 noenhanced dynamic } else {
if (ext eq "pdf") { set terminal pdfcairo size 10in,6.4in noenhanced } else {
print "compare.gp: OUT must end in .png, .svg or .pdf"; exit status 2 } } }
set output out
set datafile separator ","
GiB = 1024.0**3
stats summary using 0 nooutput
n = STATS_records

set multiplot title title
# Top: reserved bytes over the trace, one curve per policy.
set origin 0, 0.42
set size 1, 0.55
set key outside right top
set xlabel "request"
set ylabel "reserved GiB"
set grid
# gnuplot cycles 8 colours; 12 distinct ones, so every policy has its own.
colors = "#9400d3 #009e73 #56b4e9 #e69f00 #f0e442 #0072b2 #d55e00 #000000 #cc79a7 #8c564b #7f7f7f #17becf"
plot for [i=0:n-1] tl index i using 1:($2/GiB) with lines lw 2 lc rgb word(colors, i % 12 + 1) title columnheader(2)

# Bottom: one bar chart per figure.
unset key
set style fill solid 0.7 border -1
set boxwidth 0.7
set xtics rotate by -45 nomirror
set xlabel ""
set grid ytics
set size 0.25, 0.42
set origin 0, 0
set title "peak reserved (GiB)"
set ylabel ""
set yrange [0:*]
plot summary using 0:($2/GiB):xtic(1) with boxes lc rgb "#c0392b"
set origin 0.25, 0
set title "fragmentation at peak"
set yrange [0:1]
plot summary using 0:4:xtic(1) with boxes lc rgb "#7d3c98"
set origin 0.5, 0
set title "device calls (log)"
set logscale y
set yrange [1:*]
plot summary using 0:($5 > 0 ? $5 : 1):xtic(1) with boxes lc rgb "#2471a3"
set origin 0.75, 0
set title "modelled allocator time, ms (log)"
set yrange [0.01:*]
plot summary using 0:($6 > 0.01 ? $6 : 0.01):xtic(1) with boxes lc rgb "#1e8449"
unset multiplot
