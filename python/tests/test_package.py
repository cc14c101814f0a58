"""The package's own face: show_config, python -m sparsering, the last search's path."""
import os
import subprocess
import sys

import sparsering as sr


def test_show_config_names_version_and_backends(capsys):
    sr.show_config()
    out = capsys.readouterr().out
    assert out.startswith(f"sparsering {sr.__version__}")
    for backend in ("cpu", "cuda", "opencl"):
        assert f"  {backend}" in out
    assert "cpu     usable" in out


def test_python_m_sparsering_show_config_and_missing_program():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-m", "sparsering", "show-config"], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert "default context" in out
    env["PATH"] = ""  # no sparsering program to hand the arguments to: a clear message, exit 2
    r = subprocess.run([sys.executable, "-m", "sparsering", "--help"], capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "not installed" in r.stderr


def test_last_method_names_the_path():
    import numpy as np
    import scipy.sparse as sp
    X = sp.random(50, 20, density=0.2, format="csr", random_state=1, dtype=np.float32)
    sr.kneighbors(X, X, 3, "cosine", context=sr.Context("cpu"))
    assert sr.last_method().startswith("knn: ")
