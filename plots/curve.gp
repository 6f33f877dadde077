# memsim: a run's fragmentation curve.
#   gnuplot -c curve.gp TIMELINE.csv OUT.png|OUT.svg|OUT.pdf [TITLE [WxH]]
# TIMELINE.csv has the header request,time_ns,allocated,reserved,active,
# requested,largest_free,free,frag,ext_frag (`memsim plot --kind curve
# --export` and memsim run --plot write it).
if (ARGC < 2) { print "usage: gnuplot -c curve.gp TIMELINE.csv OUT.png [TITLE [WxH]]"; exit status 2 }
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
set key autotitle columnhead top left
set title title
set xlabel "request"
set ylabel "GiB"
set y2label "fragmentation (1 - allocated/reserved)"
set y2range [0:1]
set ytics nomirror
set y2tics 0.1
set grid
GiB = 1024.0**3
plot data using 1:($4/GiB) with lines lw 2 lc rgb "#c0392b" title "reserved", \
     data using 1:($3/GiB) with lines lw 2 lc rgb "#2471a3" title "allocated", \
     data using 1:9 axes x1y2 with lines lw 1 lc rgb "#7d3c98" title "fragmentation"
