"""Build step of `pip install .` (pyproject.toml): the project's own
./configure and make build libmemsim and the memsim command, and their
installed files go into the package, so one `pip install` gives:

    memsim/                  the Python package (python/memsim)
    memsim/_native/bin/memsim          the command (run by memsim._cli,
                                       the `memsim` script pip installs)
    memsim/_native/lib/libmemsim.so.1  the library memsim/__init__.py loads
    memsim/_native/share/memsim/plots  the gnuplot scripts
    memsim_record/           the recorder (traces/memsim_record)

The command finds the library through its RUNPATH ($ORIGIN/../lib,
configure.ac) and the plots beside itself (../share/memsim/plots), so the
layout under _native is that of an installed prefix.

Where the source tree is configured already (config.status: a developer's
tree), Automake refuses a second build beside it, so the files git tracks
are copied to a scratch folder and built there (autoreconf first, as a
clone has no ./configure).  The tarball of `make dist` is built in place,
out of tree.  Needs what ./configure needs: a C11 compiler, make,
pkg-config, GSL and SQLite's development files (build-aux/setup-debian
installs them), and autoconf, automake and libtool for a git tree.
"""

import os
import re
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

TOP = os.path.dirname(os.path.abspath(__file__))


def version():
    """The version of AC_INIT in configure.ac: one place for it."""
    with open(os.path.join(TOP, "configure.ac")) as f:
        m = re.search(r"AC_INIT\(\[memsim\], \[([^]]+)\]", f.read())
    if not m:
        sys.exit("setup.py: configure.ac: no AC_INIT([memsim], [VERSION])")
    return m.group(1)


def sh(cmd, cwd):
    print("memsim build: (cd %s && %s)" % (cwd, " ".join(cmd)), flush=True)
    try:
        subprocess.run(cmd, cwd=cwd, check=True)
    except FileNotFoundError:
        sys.exit("setup.py: %s: not found (see the README's set-up)"
                 % cmd[0])
    except subprocess.CalledProcessError as e:
        sys.exit("setup.py: %s failed (exit %d) in %s"
                 % (" ".join(cmd), e.returncode, cwd))


def source_tree(scratch):
    """A source tree configure can build out of tree: the tree itself, or
    a copy of the files git tracks (or would: those not ignored) when the
    tree is configured already or has no ./configure."""
    configured = os.path.exists(os.path.join(TOP, "config.status"))
    if not configured and os.path.exists(os.path.join(TOP, "configure")):
        return TOP
    try:
        files = subprocess.run(["git", "ls-files", "-z", "--cached",
                                "--others", "--exclude-standard"], cwd=TOP,
                               check=True, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL).stdout
    except (OSError, subprocess.CalledProcessError):
        sys.exit("setup.py: %s is %s and no git checkout; run `make "
                 "distclean` there, or pip install the tarball of `make "
                 "dist`" % (TOP, "configured" if configured else
                            "without ./configure"))
    src = os.path.join(scratch, "src")
    shutil.rmtree(src, ignore_errors=True)
    for name in files.decode().split("\0"):
        if not name or not os.path.isfile(os.path.join(TOP, name)):
            continue
        dst = os.path.join(src, name)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(os.path.join(TOP, name), dst)
    if not os.path.exists(os.path.join(src, "configure")):
        sh(["autoreconf", "-fi"], src)
    return src


class BuildPy(build_py):
    """build_py, then libmemsim and memsim into memsim/_native."""

    def find_package_modules(self, package, package_dir):
        # python/memsim/_build.py is make's (where `make install` put the
        # library): not this package's.
        return [m for m in super().find_package_modules(package,
                                                        package_dir)
                if m[:2] != ("memsim", "_build")]

    def run(self):
        super().run()
        scratch = os.path.abspath(os.path.join(
            self.get_finalized_command("build").build_temp, "memsim-native"))
        os.makedirs(scratch, exist_ok=True)
        src = source_tree(scratch)
        build = os.path.join(scratch, "build")
        stage = os.path.join(scratch, "stage")
        shutil.rmtree(stage, ignore_errors=True)
        os.makedirs(build, exist_ok=True)
        # Configured each time (an unchanged config.h keeps its date, so
        # a second build makes only what changed), as ./configure is by
        # default (`memsim validate` uses the CUDA runtime where it is
        # found).  Python and PyTorch are not looked for: the packages
        # are setuptools', and the recorder's tests are not run here.
        # The prefix /usr is a system one, so libtool gives memsim no
        # RUNPATH but its own $ORIGIN/../lib (configure.ac): none naming
        # this scratch folder.
        sh([os.path.join(src, "configure"), "--prefix=/usr",
            "--disable-static", "PYTHON=:",
            "MEMSIM_PYTHON="], build)
        jobs = str(min(os.cpu_count() or 1, 8))
        sh(["make", "-j" + jobs, "libmemsim.la", "memsim"], build)
        sh(["make", "DESTDIR=" + stage, "install-libLTLIBRARIES",
            "install-binPROGRAMS", "install-dist_plotsDATA"], build)
        stage = os.path.join(stage, "usr")
        native = os.path.join(self.build_lib, "memsim", "_native")
        shutil.rmtree(native, ignore_errors=True)
        for sub in ("bin", "lib", os.path.join("share", "memsim")):
            os.makedirs(os.path.join(native, sub), exist_ok=True)
        shutil.copy2(os.path.join(stage, "bin", "memsim"),
                     os.path.join(native, "bin", "memsim"))
        # The real file under the soname the package and the command
        # load (a wheel holds no symbolic links).
        shutil.copyfile(os.path.realpath(os.path.join(
            stage, "lib", "libmemsim.so.1")),
            os.path.join(native, "lib", "libmemsim.so.1"))
        shutil.copytree(os.path.join(stage, "share", "memsim", "plots"),
                        os.path.join(native, "share", "memsim", "plots"))
        os.chmod(os.path.join(native, "bin", "memsim"), 0o755)


class BinaryDistribution(Distribution):
    """A wheel for this platform: it holds a compiled library."""

    def has_ext_modules(self):
        return True


setup(
    version=version(),
    packages=["memsim", "memsim_record"],
    package_dir={"memsim": "python/memsim",
                 "memsim_record": "traces/memsim_record"},
    # the GPU table the recorder reads (memsim devices --json)
    package_data={"memsim_record": ["devices.json"]},
    cmdclass={"build_py": BuildPy},
    distclass=BinaryDistribution,
)
