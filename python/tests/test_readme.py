"""The README's Python example runs as written (on the CPU here; "cuda" becomes "cpu" when no GPU is usable)."""
import os

from conftest import CONTEXTS

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_readme_example_runs(tmp_path, monkeypatch):
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    start = text.index("```python\nimport numpy as np, scipy.sparse as sp, sparsering as sr")
    code = text[start + len("```python\n"):text.index("```\n", start + 10)]
    if len(CONTEXTS) < 2:
        code = code.replace('sr.Context("cuda")', 'sr.Context("cpu")')
    monkeypatch.chdir(tmp_path)
    scope = {}
    exec(compile(code, "README.md", "exec"), scope)
    assert scope["ind"].shape == (100, 5) and scope["D"].shape == (50, 10_000)
    assert (tmp_path / "x.mtx.gz").exists()
