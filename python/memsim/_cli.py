"""The `memsim` command of `pip install` (pyproject.toml): runs the
memsim program built into this package (memsim/_native/bin/memsim,
setup.py), with the recorder (memsim_record, installed beside this
package) and this Python, whose PyTorch `memsim record` then uses; an
MEMSIM_PYTHONPATH or MEMSIM_PYTHON already set wins."""

import os
import sys


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    exe = os.path.join(here, "_native", "bin", "memsim")
    if not os.access(exe, os.X_OK):
        sys.stderr.write("memsim: %s is missing: this memsim package was "
                         "not installed by pip (setup.py builds it)\n"
                         % exe)
        return 127
    os.environ.setdefault("MEMSIM_PYTHONPATH", os.path.dirname(here))
    os.environ.setdefault("MEMSIM_PYTHON", sys.executable)
    os.execv(exe, ["memsim"] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
