"""cfpq-data's graph generators (labelled two-cycles and scale-free graphs) without the rest of
the package: `import cfpq_data` loads its data-set modules, which need pandas, rdflib and
requests; the generators need only networkx, so they are loaded from their files.
Install with `pip install --no-deps cfpq-data==5.0.0`."""
import importlib.util
import os


def _generator(name):
    spec = importlib.util.find_spec("cfpq_data")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(spec.submodule_search_locations[0], "graphs", "generators", f"{name}.py")
    if not os.path.exists(path):
        return None
    module_spec = importlib.util.spec_from_file_location(f"cfpq_data_{name}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, name)


def cfpq_data_generators():
    """(labeled_two_cycles_graph, labeled_scale_free_graph) from cfpq-data, or None when it is not
    installed."""
    two_cycles, scale_free = _generator("labeled_two_cycles_graph"), _generator("labeled_scale_free_graph")
    return (two_cycles, scale_free) if two_cycles and scale_free else None
