# memsim: where the memory goes, as stacked bars: at peak reserved (and at
# the out-of-memory, if there is one), reserved bytes split into the
# allocated bytes of each category, blocks freed but pending, the free
# pieces of split segments (fragmentation) and whole free segments.
#   gnuplot -c breakdown.gp BREAKDOWN.csv OUT.png|OUT.svg|OUT.pdf [TITLE [WxH]]
# BREAKDOWN.csv has a header naming the parts, then one row per moment:
# moment,part1_mib,part2_mib,... (`memsim explain --plot` writes it).
if (ARGC < 2) { print "usage: gnuplot -c breakdown.gp BREAKDOWN.csv OUT.png [TITLE [WxH]]"; exit status 2 }
data = ARG1; out = ARG2; title = (ARGC >= 3 && strlen(ARG3) > 0) ? ARG3 : "memsim"
size = (ARGC >= 4 && strlen(ARG4) > 0) ? ARG4 : "900x700"
w = int(size[1:strstrt(size, "x") - 1]); h = int(size[strstrt(size, "x") + 1:])
ext = out[strlen(out)-2:]
if (ext eq "png") { set terminal pngcairo size w,h noenhanced font ",10" } else {
if (ext eq "svg") { set terminal svg size w,h noenhanced dynamic } else {
if (ext eq "pdf") { set terminal pdfcairo size (w/150.0),(h/150.0) noenhanced } else {
print "OUT must end in .png, .svg or .pdf"; exit status 2 } } }
set output out
set datafile separator ","
set key outside right top invert
set title title
set ylabel "MiB"
set grid ytics
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border rgb "#ffffff"
set boxwidth 0.5
set yrange [0:*]
stats data using 2 nooutput
n = STATS_columns
colors = "#2471a3 #cb4335 #8e44ad #27ae60 #f39c12 #16a085 #7f8c8d #bdc3c7 #5d6d7e #f1c40f #d5dbdb"
plot for [i=2:n] data using i:xtic(1) title columnheader(i) lc rgb word(colors, i - 1)
