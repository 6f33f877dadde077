# memsim: several runs' reserved bytes over requests, overlaid (one trace
# under several settings).
#   gnuplot -c overlay.gp RUNS.csv OUT.png|OUT.svg|OUT.pdf [TITLE [WxH]]
# RUNS.csv holds one block per run, blocks separated by two blank lines;
# each block starts with the header request,<label>,allocated and has the
# columns request, reserved bytes, allocated bytes (`memsim plot --kind
# overlay --export` writes it).
if (ARGC < 2) { print "usage: gnuplot -c overlay.gp RUNS.csv OUT.png [TITLE [WxH]]"; exit status 2 }
data = ARG1; out = ARG2; title = (ARGC >= 3 && strlen(ARG3) > 0) ? ARG3 : "memsim"
size = (ARGC >= 4 && strlen(ARG4) > 0) ? ARG4 : "1200x700"
w = int(size[1:strstrt(size, "x") - 1]); h = int(size[strstrt(size, "x") + 1:])
ext = out[strlen(out)-2:]
if (ext eq "png") { set terminal pngcairo size w,h noenhanced font ",10" } else {
if (ext eq "svg") { set terminal svg size w,h noenhanced dynamic } else {
if (ext eq "pdf") { set terminal pdfcairo size (w/150.0),(h/150.0) noenhanced } else {
print "OUT must end in .png, .svg or .pdf"; exit status 2 } } }
set output out
set datafile separator ","
stats data using 1 every ::1 nooutput
n = STATS_blocks
set key outside right
set title title
set xlabel "request"
set ylabel "reserved (GiB)"
set grid
GiB = 1024.0**3
plot for [i=0:n-1] data index i using 1:($2/GiB) with lines lw 2 title columnhead(2), \
     data index 0 using 1:($3/GiB) with lines lw 1 dt 2 lc rgb "black" title "allocated"
