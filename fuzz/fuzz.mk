# Fuzz targets for the trace readers (not part of the normal build).
# Needs a configured tree (for config.h) and clang with libFuzzer:
#   cd fuzz && make -f fuzz.mk && make -f fuzz.mk corpus
#   nice -n 19 ./fuzz_pickle -max_total_time=600 corpus/pickle
# FORMATS: one fuzz_<format> binary each.
CC = clang
FORMATS = csv pickle rmm bin
TOP = ..
CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I$(TOP) -I$(TOP)/..
SRCS = $(TOP)/traces/trace.c $(TOP)/traces/idmap.c $(TOP)/traces/fmt_csv.c \
	$(TOP)/traces/fmt_pickle.c $(TOP)/traces/fmt_rmm.c $(TOP)/traces/fmt_bin.c \
	$(TOP)/sim/error.c

all: $(FORMATS:%=fuzz_%)

fuzz_%: trace_fuzzer.c $(SRCS)
	$(CC) $(CFLAGS) -DFUZZ_FORMAT='"$*"' -o $@ trace_fuzzer.c $(SRCS)

# Seeds: the first rows of real traces in every format, and small
# snapshot pickles in protocols 2 to 5 (fuzz/seeds.py, needs python3).
corpus: $(TOP)/memsim
	mkdir -p corpus/csv corpus/pickle corpus/rmm corpus/bin
	for w in bert_infer_varlen train_eval_emptycache prefetch_2stream; do \
	  head -n 400 $(TOP)/tests/data/traces/$$w.csv > corpus/csv/$$w; \
	  $(TOP)/memsim convert -t rmm corpus/csv/$$w corpus/rmm/$$w >/dev/null; \
	  $(TOP)/memsim convert -t bin corpus/csv/$$w corpus/bin/$$w >/dev/null; \
	done
	python3 seeds.py $(TOP)/tests/data/pickles/resnet50_amp.frames.pickle corpus/pickle/frames
	python3 seeds.py $(TOP)/tests/data/pickles/train_eval_emptycache.pickle corpus/pickle/tee

clean:
	rm -rf $(FORMATS:%=fuzz_%) corpus crashes

.PHONY: all corpus clean
