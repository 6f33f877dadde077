# memsim: a sweep as a family of lines: a figure (peak reserved by
# default) against one setting, one line per value of another.
#   gnuplot -c sweep.gp SWEEP.csv OUT.png|OUT.svg|OUT.pdf [TITLE [WxH [YLABEL]]]
# SWEEP.csv holds one block per line, blocks separated by two blank lines;
# each block starts with the header <x key>,<line label>,label and has the
# columns x position (0, 1, ...), y, x tick label (`memsim plot --kind
# sweep --export` writes it, y in GiB for byte figures).
if (ARGC < 2) { print "usage: gnuplot -c sweep.gp SWEEP.csv OUT.png [TITLE [WxH [YLABEL]]]"; exit status 2 }
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
ylabel = (ARGC >= 5 && strlen(ARG5) > 0) ? ARG5 : "peak reserved (GiB)"
stats data using 1 every ::1 nooutput
n = STATS_blocks
set key autotitle columnhead outside right
set title title
set ylabel ylabel
set grid
set offsets 0.3, 0.3, 0, 0
set xtics rotate by -30
plot for [i=0:n-1] data index i using 1:2:xticlabels(3) with linespoints lw 2 pt 7 title columnhead(2)
