"""Small snapshot pickles for the fuzz corpus: the first entries of a real
snapshot, with and without frames, in pickle protocols 2 to 5."""
import pickle
import sys

src, out = sys.argv[1], sys.argv[2]
with open(src, "rb") as f:
    snap = pickle.load(f)
for n in (5, 40):
    small = dict(snap)
    small["segments"] = snap["segments"][:2]
    small["device_traces"] = [t[:n] for t in snap["device_traces"]] + [[]]
    for proto in (2, 3, 4, 5):
        with open("%s-%d-p%d.pickle" % (out, n, proto), "wb") as f:
            pickle.dump(small, f, protocol=proto)
