"""The sparsering package as a build tree assembles it (BUILD/python): the benchmarks call the
library through it, as users do, GPU arrays (cupy, torch) included."""
import importlib.util
import os
import sys


def load(build_dir):
    """Imports sparsering from BUILD/python (first on the path) and returns the module."""
    sys.path.insert(0, os.path.join(os.path.abspath(build_dir), "python"))
    import sparsering
    return sparsering


def load_as(build_dir, name):
    """The package of one build under its own module name, so that two builds' packages (and their
    libraries) live side by side in one process (A/B timing). The binding's module keeps its file
    name (_core), which is what its init function is named after."""
    path = os.path.join(os.path.abspath(build_dir), "python", "sparsering")
    spec = importlib.util.spec_from_file_location(name, os.path.join(path, "__init__.py"),
                                                  submodule_search_locations=[path])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
