# Written by make: where libmemsim was installed.
LIBDIR = "/tmp/msim-inst2/lib"
