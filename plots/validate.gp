# memsim: simulated against measured peak reserved bytes, one pair of bars
# per measured run (`memsim report --compare -o OUT`).
#   gnuplot -c validate.gp PAIRS.csv OUT.png|OUT.svg|OUT.pdf [TITLE]
# PAIRS.csv: label,measured_bytes,simulated_bytes rows (no header).
if (ARGC < 2) { print "usage: gnuplot -c validate.gp PAIRS.csv OUT.png [TITLE]"; exit status 2 }
data = ARG1; out = ARG2; title = (ARGC >= 3 && strlen(ARG3) > 0) ? ARG3 : "simulated vs measured"
ext = out[strlen(out)-2:]
if (ext eq "png") { set terminal pngcairo size 1400,800 noenhanced font ",9" } else {
if (ext eq "svg") { set terminal svg size 1400,800 noenhanced dynamic } else {
if (ext eq "pdf") { set terminal pdfcairo size 9.3in,5.3in noenhanced } else {
print "validate.gp: OUT must end in .png, .svg or .pdf"; exit status 2 } } }
set output out
set datafile separator ","
set title title
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set xtics rotate by -60 left
set bmargin 14
set rmargin 10
set ylabel "peak reserved (GiB)"
set key top left
set grid ytics
GiB = 1024.0**3
plot data using ($2/GiB):xtic(1) title "measured" lc rgb "#2471a3", \
     '' using ($3/GiB) title "simulated" lc rgb "#c0392b"
