# memsim: a run's fragmentation curve.
#   gnuplot -c curve.gp TIMELINE.csv OUT.png|OUT.svg|OUT.pdf [TITLE [WxH [CAP [START]]]]
# TIMELINE.csv has the header request,time_ns,allocated,reserved,active,
# requested,largest_free,free,frag,ext_frag (`memsim plot --kind curve
# --export` and memsim run --plot write it).  CAP, bytes: the run's cap,
# drawn as a dashed line; START, a request: where a partial history's
# recorded part begins (the requests before it rebuild its start),
# drawn as a dotted line (`memsim plot` passes both; "" for none).
if (ARGC < 2) { print "usage: gnuplot -c curve.gp TIMELINE.csv OUT.png [TITLE [WxH [CAP [START]]]]"; exit status 2 }
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
cap = (ARGC >= 5 && strlen(ARG5) > 0) ? real(ARG5) : 0
start = (ARGC >= 6 && strlen(ARG6) > 0) ? real(ARG6) : -1
if (cap > 0) {
  set arrow 1 from graph 0, first cap/GiB to graph 1, first cap/GiB nohead lw 2 dt 2 lc rgb "#444444"
  set label 1 sprintf("cap %.2f GiB", cap/GiB) at graph 0.99, first cap/GiB right offset 0,0.8 tc rgb "#444444"
  set yrange [0:*]
  set offsets 0, 0, cap/GiB*0.05, 0
}
if (start >= 0) {
  set arrow 2 from first start, graph 0 to first start, graph 1 nohead lw 1 dt 3 lc rgb "#117a65"
  set label 2 "history starts" at first start, graph 0.97 offset 0.5,0 tc rgb "#117a65"
}
plot data using 1:($4/GiB) with lines lw 2 lc rgb "#c0392b" title "reserved", \
     data using 1:($3/GiB) with lines lw 2 lc rgb "#2471a3" title "allocated", \
     data using 1:9 axes x1y2 with lines lw 1 lc rgb "#7d3c98" title "fragmentation"
