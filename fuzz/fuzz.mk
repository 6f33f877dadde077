# Fuzz targets (not part of the normal build).  Needs a configured tree (for
# config.h) and clang with libFuzzer (Debian: clang, libclang-rt-14-dev):
#   cd fuzz && make -f fuzz.mk -j2 && make -f fuzz.mk corpus
#   ./run.sh 600            # every target for 600 s, two at a time
# The library is compiled once more with ASan, UBSan and coverage into obj/.
CC = clang
TOP = ..
READERS = csv pickle rmm bin
TARGETS = $(READERS:%=fuzz_%) fuzz_conf fuzz_replay_csv fuzz_replay_pickle \
	fuzz_replay_bin fuzz_settings fuzz_cmdline fuzz_api
SAN = -fsanitize=address,undefined -fno-sanitize-recover=undefined
CFLAGS = -g -O1 $(SAN) -I$(TOP) -I$(TOP)/.. $(shell pkg-config --cflags gsl sqlite3)
LIBS = $(shell pkg-config --libs gsl sqlite3) -lm -lpthread
LIBSRCS = $(wildcard $(TOP)/sim/*.c $(TOP)/traces/*.c $(TOP)/policies/*.c \
	$(TOP)/lab/*.c $(TOP)/plots/*.c) $(TOP)/validate/torch.c
LIBOBJS = $(patsubst $(TOP)/%.c,obj/%.o,$(LIBSRCS))

all: $(TARGETS)

# -MMD: an object is rebuilt when a header it includes changes.
obj/%.o: $(TOP)/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -fsanitize=fuzzer-no-link -c -o $@ $<

-include $(LIBOBJS:.o=.d)

obj/libfuzzmemsim.a: $(LIBOBJS)
	rm -f $@ && ar rcs $@ $(LIBOBJS)

HDRS = common.h bin_fixup.h

fuzz_%: trace_fuzzer.c $(HDRS) obj/libfuzzmemsim.a
	$(CC) $(CFLAGS) -fsanitize=fuzzer -DFUZZ_FORMAT='"$*"' -o $@ $< obj/libfuzzmemsim.a $(LIBS)

fuzz_conf: conf_fuzzer.c $(HDRS) obj/libfuzzmemsim.a
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< obj/libfuzzmemsim.a $(LIBS)

fuzz_settings: settings_fuzzer.c $(HDRS) obj/libfuzzmemsim.a
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< obj/libfuzzmemsim.a $(LIBS)

fuzz_cmdline: cmdline_fuzzer.c $(HDRS) obj/libfuzzmemsim.a
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< obj/libfuzzmemsim.a $(LIBS)

# The C API: lib/memsim.c and its handles (lib/handle.c) compiled here too
# (the recorder's folder is not reached: no memsim_record() call).
obj/lib/memsim.o: $(TOP)/lib/memsim.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DPYTHON_DIR='"/nonexistent"' -MMD -MP \
		-fsanitize=fuzzer-no-link -c -o $@ $<

fuzz_api: api_fuzzer.c $(HDRS) obj/lib/memsim.o obj/lib/handle.o \
		obj/libfuzzmemsim.a
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< obj/lib/memsim.o \
		obj/lib/handle.o obj/libfuzzmemsim.a $(LIBS)

# Turns a binary finding into the file the target read (its checksums
# fixed up): ./bin_fix crashes/replay_bin/crash-... out.msimtr
bin_fix: bin_fix.c bin_fixup.h
	$(CC) -g -O1 -I$(TOP) -I$(TOP)/.. -o $@ bin_fix.c $(TOP)/.libs/libmemsim_core.a $(LIBS)

fuzz_replay_%: replay_fuzzer.c $(HDRS) obj/libfuzzmemsim.a
	$(CC) $(CFLAGS) -fsanitize=fuzzer -DFUZZ_FORMAT='"$*"' -o $@ $< obj/libfuzzmemsim.a $(LIBS)

# Seeds: the kept corpora (corpus/, the inputs that reached new code in
# earlier runs), plus the first rows of real traces in every format and
# small snapshot pickles in protocols 2 to 5 (fuzz/seeds.py, needs python3).
corpus: $(TOP)/memsim
	mkdir -p work
	for t in $(TARGETS:fuzz_%=%); do mkdir -p work/$$t; \
	  if [ -d corpus/$$t ]; then cp corpus/$$t/* work/$$t/ 2>/dev/null || :; fi; done
	for w in bert_infer_varlen train_eval_emptycache prefetch_2stream; do \
	  head -n 400 $(TOP)/tests/data/traces/$$w.csv > work/csv/$$w; \
	  head -n 60 $(TOP)/tests/data/traces/$$w.csv > work/replay_csv/$$w; \
	  $(TOP)/memsim convert -t rmm work/csv/$$w work/rmm/$$w >/dev/null; \
	  $(TOP)/memsim convert -t bin work/csv/$$w work/bin/$$w >/dev/null; \
	  $(TOP)/memsim convert -t bin work/replay_csv/$$w work/replay_bin/$$w >/dev/null; \
	done
	# Private pools (pool_create flags, pool_restore and the allocs it
	# places), cuda-async across streams, CuPy recordings with addresses.
	for f in restore restore_norow capture ownalloc mempool_del \
	  oom_on.real nosplit_on.real delpool.real checkpoint.real; do \
	  cp $(TOP)/tests/data/pools/$$f.csv work/replay_csv/pools-$$f; \
	  cp $(TOP)/tests/data/pools/$$f.csv work/csv/pools-$$f; \
	  $(TOP)/memsim convert -t bin $(TOP)/tests/data/pools/$$f.csv \
	    work/replay_bin/pools-$$f >/dev/null; \
	done
	cp seeds/*.csv work/replay_csv/
	for f in seeds/*.csv; do $(TOP)/memsim convert -t bin $$f \
	  work/replay_bin/$$(basename $$f .csv) >/dev/null; done
	for r in prefetch_2stream.581713920 resnet50_amp.2122403840; do \
	  cp $(TOP)/tests/data/validate/cupy/rec/$$r.msimtr work/replay_bin/cupy-$$r; \
	  $(TOP)/memsim convert -t csv work/replay_bin/cupy-$$r work/cupy.csv >/dev/null; \
	  head -n 150 work/cupy.csv > work/replay_csv/cupy-$$r; \
	done
	rm -f work/cupy.csv
	for f in pool_late pool_full mempool_live graph_late; do \
	  cp $(TOP)/tests/data/pools/$$f.pickle work/replay_pickle/pools-$$f; \
	  cp $(TOP)/tests/data/pools/$$f.pickle work/pickle/pools-$$f; done
	python3 seeds.py $(TOP)/tests/data/pickles/resnet50_amp.frames.pickle work/pickle/frames
	python3 seeds.py $(TOP)/tests/data/pickles/train_eval_emptycache.pickle work/pickle/tee
	cp work/pickle/* work/replay_pickle/
	printf 'max_split_size_mb:128,garbage_collection_threshold:0.6\n' > work/conf/pt
	printf 'roundup_power2_divisions:[256:1,512:2,>:8],expandable_segments:True\n' > work/conf/rp2
	printf 'model:arch=gpt2,layers=2,hidden=64,heads=2,batch=1,seq=8\n' > work/conf/model
	printf 'max_split_size_mb:128\n# comment\ngarbage_collection_threshold:0.8,cap:1GiB\npolicy:bfc\n' > work/settings/s1
	# Settings that also run into a database (settings_fuzzer.c's mode):
	# once, then skipped; once, then replaced (--force).
	printf 'policy:pytorch,max_split_size_mb:128\npolicy:pytorch,expandable_segments:True\n' > work/settings/run
	printf 'policy:pytorch,max_split_size_mb:256\npolicy:cupy,limit:1073741824\n#\n' > work/settings/force
	# Command lines (cmdline_fuzzer.c: the first byte picks the reader,
	# words by line) and API programs (api_fuzzer.c: calls, then 0xff
	# and a trace).
	printf '\000--fake\n--world-size\n4\n--\npython3\n-u\n-X\ndev\n-m\ntorch.distributed.run\n--nproc-per-node=2\n--nnodes\n1:2\ntrain.py\n--lr\n3' > work/cmdline/torchrun
	printf '\001--rank\n1\n--\ntorchrun\n--standalone\n-m\npkg.train' > work/cmdline/module
	printf '\002B=-9223372036854775807..9223372036854775807' > work/cmdline/vary
	printf '\003B\nseq\n8\n1024\npython3\ntrain.py\n--batch={B}\n{seq}{B}{x}' > work/cmdline/subst
	printf '\000\000\000\002\000pytorch\000max_split_size_mb:64\000\004\000\005\000\000\012\000\001\001\014\000\000\000\015\001\000\004\001\001\001\377' > work/api/prog
	head -n 40 $(TOP)/tests/data/traces/prefetch_2stream.csv >> work/api/prog

clean:
	rm -rf $(TARGETS) bin_fix obj work crashes

.PHONY: all corpus clean
