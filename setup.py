"""Optional compiled record codec; everything else is in setup.cfg.

``afkak.records._crecords`` is built from Cython when Cython and a C compiler
are available.  Without them, or with ``AFKAK_NO_EXTENSIONS=1``, afkak
installs as pure Python and uses its reference record code.
"""

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

MODULE = "afkak.records._crecords"
PYX = "afkak/records/_crecords.pyx"
C = "afkak/records/_crecords.c"  # Cython's output, shipped in the sdist


class optional_build_ext(build_ext):
    """build_ext that falls back to pure Python when compiling fails."""

    def run(self):
        try:
            super().run()
        except Exception as e:  # no compiler, missing headers ...
            self._skip(e)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as e:
            self._skip(e)

    def _skip(self, error):
        print(
            f"afkak: building the compiled record codec failed ({error}); "
            "installing the pure-Python record code",
            file=sys.stderr,
        )


def extensions():
    if os.environ.get("AFKAK_NO_EXTENSIONS"):
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        if os.path.exists(C):
            return [Extension(MODULE, [C])]
        print("afkak: Cython is not installed; pure-Python record code only", file=sys.stderr)
        return []
    return cythonize(
        [Extension(MODULE, [PYX])], compiler_directives={"language_level": 3}, quiet=True
    )


setup(ext_modules=extensions(), cmdclass={"build_ext": optional_build_ext})
