# memsim: the curve `memsim fit` learned (memsim fit --plot OUT).
#   gnuplot -c fit.gp CURVE.csv OUT.png|OUT.svg|OUT.pdf [TITLE [XLABEL]]
# CURVE.csv: the header, then one row per value tried, in order:
# value,reserved,allocated,capped_reserved,oom,cap,best (bytes; reserved
# and allocated are the peaks the value needs, without a cap;
# capped_reserved its peak under the cap; oom 1 when it ran out of memory
# there; cap and best the same on every row: the cap, the answer).
if (ARGC < 2) { print "usage: gnuplot -c fit.gp CURVE.csv OUT.png [TITLE [XLABEL]]"; exit status 2 }
data = ARG1; out = ARG2
title = (ARGC >= 3 && strlen(ARG3) > 0) ? ARG3 : "memsim fit"
name = (ARGC >= 4 && strlen(ARG4) > 0) ? ARG4 : "the value varied"
ext = out[strlen(out)-2:]
if (ext eq "png") { set terminal pngcairo size 1200,700 noenhanced font ",10" } else {
if (ext eq "svg") { set terminal svg size 1200,700 noenhanced dynamic } else {
if (ext eq "pdf") { set terminal pdfcairo size 8in,4.7in noenhanced } else {
print "fit.gp: OUT must end in .png, .svg or .pdf"; exit status 2 } } }
set output out
set datafile separator ","
GiB = 1024.0**3
set title title
set xlabel name
set ylabel "peak (GiB)"
set key inside left top
set grid
set offsets graph 0.02, graph 0.02, graph 0.05, 0
plot data using 1:($2/GiB) every ::1 with linespoints lw 2 pt 7 lc rgb "#c0392b" title "reserved (needed)", \
     data using 1:($3/GiB) every ::1 with linespoints lw 2 pt 7 lc rgb "#2471a3" title "allocated (needed)", \
     data using 1:($6/GiB) every ::1 with lines lw 2 dt 2 lc rgb "#000000" title "the cap", \
     data using 1:($1 == $7 ? $4/GiB : NaN) every ::1 with points pt 9 ps 2.5 lc rgb "#1e8449" title "the answer (reserved under the cap)", \
     data using 1:($5 > 0 ? $2/GiB : NaN) every ::1 with points pt 2 ps 1.8 lc rgb "#000000" title "out of memory under the cap"
