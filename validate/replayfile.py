"""The two files memsim's GPU scripts replay, read in one place.

requests(PATH) reads the request file `memsim validate --mode torch`
hands its bridge (validate/torch.c writes it, validate/torch_replay.py
and the scripts of validate/device/ replay it), one request a line:

    a ID SIZE STREAM     malloc SIZE bytes on STREAM (0 = default stream)
    x ID SIZE STREAM     a malloc the recording saw fail (expected OOM)
    f ID                 free the block ID
    e                    torch.cuda.empty_cache()

and yields Request(op, id, size, stream): id a string, size and stream
integers; an f has size 0 and stream None, an e id None, size 0 and
stream None.  Blank lines are skipped; any other line raises ValueError
naming the file and line.

trace_requests(PATH) reads a device-trace CSV (docs/ "Formats" in
memsim(1): seq,time_us,action,addr,size,stream,...) and yields its alloc
and free_completed rows, in order, as csv.DictReader's dicts: the
requests caching_allocator_alloc and caching_allocator_delete would see.

Standard library only: it runs on a GPU machine with no memsim build,
and is installed beside torch_replay.py.
"""
import collections
import csv

Request = collections.namedtuple("Request", "op id size stream")

REQUEST_ACTIONS = ("alloc", "free_completed")


def requests(path):
    """Yields the requests of a request file, in order."""
    with open(path) as fp:
        for n, line in enumerate(fp, 1):
            op = line.split()
            if not op:
                continue
            try:
                if op[0] in ("a", "x") and len(op) == 4:
                    yield Request(op[0], op[1], int(op[2]), int(op[3]))
                    continue
                if op[0] == "f" and len(op) == 2:
                    yield Request("f", op[1], 0, None)
                    continue
                if op[0] == "e" and len(op) == 1:
                    yield Request("e", None, 0, None)
                    continue
            except ValueError:
                pass
            raise ValueError("%s:%d: not a request: %r"
                             % (path, n, line.rstrip("\n")))


def trace_requests(path):
    """Yields the alloc and free_completed rows of a device-trace CSV."""
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row.get("action") in REQUEST_ACTIONS:
                yield row
