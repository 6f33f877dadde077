# memsim: the segment map at the peak of reserved memory: every segment
# live at that moment as a bar of its size, in address order, and where the
# run stored them, the blocks inside coloured allocated / free / pending.
#   gnuplot -c segments.gp SEGMENTS.csv OUT.png|OUT.svg|OUT.pdf [TITLE [WxH]]
# SEGMENTS.csv has the header rank,addr,size_mib,pool,offset_mib,block_mib,
# state (pool: small or large; one row per block, or per segment with the
# block columns empty) (`memsim plot --kind segments --export` writes it).
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
set key outside right top
set title title
set xlabel "segment (in address order)"
set ylabel "size (MiB)"
set grid ytics
set style fill solid 0.8 noborder
set boxwidth 0.8
set yrange [0:*]
set xrange [-1:*]
# Blocks: a box from offset to offset + size inside the segment's bar.

blk(st) = strcol(7) eq st
plot data using 1:(strcol(4) eq "large" ? $3 : 1/0) every ::1 with boxes fs empty lc rgb "#2471a3" title "large pool segment", \
     data using 1:(strcol(4) eq "small" ? $3 : 1/0) every ::1 with boxes fs empty lc rgb "#e67e22" title "small pool segment", \
     data using 1:(blk("allocated") ? $5+$6/2 : 1/0):($1-0.4):($1+0.4):5:($5+$6) every ::1 with boxxyerror fs solid 0.85 noborder lc rgb "#2471a3" title "allocated block", \
     data using 1:(blk("free") ? $5+$6/2 : 1/0):($1-0.4):($1+0.4):5:($5+$6) every ::1 with boxxyerror fs solid 0.5 noborder lc rgb "#e74c3c" title "free block", \
     data using 1:(blk("pending") ? $5+$6/2 : 1/0):($1-0.4):($1+0.4):5:($5+$6) every ::1 with boxxyerror fs solid 0.6 noborder lc rgb "#7f8c8d" title "pending block"
