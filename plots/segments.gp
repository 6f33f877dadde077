# memsim: the segment map at the peak of reserved memory: every segment
# live at that moment as a bar of its size, in address order.
#   gnuplot -c segments.gp SEGMENTS.csv OUT.png|OUT.svg|OUT.pdf [TITLE [WxH]]
# SEGMENTS.csv has the header rank,addr,size_mib,pool (pool: small or
# large) (`memsim plot --kind segments --export` writes it).
if (ARGC < 2) { print "usage: gnuplot -c segments.gp SEGMENTS.csv OUT.png [TITLE [WxH]]"; exit status 2 }
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
set key top left
set title title
set xlabel "segment (in address order)"
set ylabel "size (MiB)"
set grid ytics
set style fill solid 0.8 noborder
set boxwidth 0.8
set yrange [0:*]
set xrange [-1:*]
plot data using 1:(strcol(4) eq "large" ? $3 : 1/0) every ::1 with boxes lc rgb "#2471a3" title "large pool segment", \
     data using 1:(strcol(4) eq "small" ? $3 : 1/0) every ::1 with boxes lc rgb "#e67e22" title "small pool segment"
