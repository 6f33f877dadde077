"""memsim_record: record a PyTorch program's GPU allocations for memsim.

    python3 -m memsim_record -o OUT.csv [--fake | --gpu] [options] -- SCRIPT ARGS...

(`memsim record` starts it.)  --fake (the default) runs the unmodified script
under PyTorch's FakeTensorMode: no GPU, no compute, only shapes; every CUDA
storage's birth and death becomes an alloc / free_completed row of the CSV
trace memsim reads.  --gpu runs it for real with the caching allocator's
history on and writes the recorded device trace in the same CSV.
PyTorch is needed only here, to record.
"""
__version__ = "0.1.0"
