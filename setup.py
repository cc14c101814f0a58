"""pip install . : CMake builds the C library and the extension (python/sparsering/_core.c)
straight into the package; setuptools adds the Python files. Needs CMake >= 3.22, a C compiler,
OpenMP and Python's headers; the CUDA backend is built when nvcc is found (SPARSERING_CUDA=0
turns it off). CMAKE_ARGS passes more options, e.g. CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=90"."""
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        cmake = shutil.which("cmake")
        if cmake is None:
            sys.exit("sparsering: building the package needs CMake >= 3.22 on PATH "
                     "(apt install cmake, or python3 -m pip install cmake)")
        package_dir = os.path.dirname(os.path.abspath(self.get_ext_fullpath(ext.name)))
        build_dir = os.path.abspath(os.path.join(self.build_temp, "cmake"))
        args = [f"-DSR_PYTHON_DIR={package_dir}", f"-DPython3_EXECUTABLE={sys.executable}",
                "-DSPARSERING_TESTS=OFF", "-DCMAKE_BUILD_TYPE=Release"]
        if os.environ.get("SPARSERING_CUDA") == "0":
            args.append("-DSPARSERING_CUDA=OFF")
        args += shlex.split(os.environ.get("CMAKE_ARGS", ""))
        subprocess.check_call([cmake, "-S", ROOT, "-B", build_dir] + args)
        subprocess.check_call([cmake, "--build", build_dir, "--target", "sparsering_python", "-j",
                               str(os.cpu_count() or 2)])


setup(ext_modules=[Extension("sparsering._core", sources=[])], cmdclass={"build_ext": CMakeBuild},
      options={"build": {"build_base": "build-python"}})
