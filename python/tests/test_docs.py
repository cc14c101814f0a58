"""Every code example of the documentation runs, so none goes stale: for each page of docs/ and the
README, its Python blocks in order in one namespace, and each C block compiled against the
library (wrapped in main) and run. A page holds what a reader need not see in HTML comments:

    <!-- doctest-setup         Python run before the page's first block -->
    <!-- doctest-c-setup       C statements (declarations included) run before each C block -->
    <!-- doctest-c-teardown    C statements run after each C block (checks) -->
    <!-- doctest-sh-setup      shell run before the page's command-line sessions -->
    <!-- doctest-check         Python run after the page's blocks (checks) -->

and a block is marked on the line before its fence:

    <!-- doctest: skip REASON -->   not run (it needs two GPUs, a cluster, ...): say why
    <!-- doctest: gpu -->           run only where a CUDA context works
    <!-- doctest: continues -->     (C) one program with the block before it (its variables)

A Python block that asks for sr.Context("cuda") gets the CPU where no GPU is usable. A
command-line session (a plain fence whose lines start with "$ sparsering") runs each command in a
scratch directory beside a link to ../shared (so its data paths hold) with the built program first
on PATH: it must exit 0 (or print what the page shows after "; echo $?"), and its first line of
output must begin as the page's does (timings differ from run to run)."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import CONTEXTS

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOCS = os.path.join(ROOT, "docs")
BLOCK = re.compile(r"(?:<!--\s*doctest:\s*(?P<mark>[^>]*?)\s*-->\s*\n)?^```(?P<lang>python|c)\n(?P<code>.*?)^```$",
                   re.S | re.M)
HIDDEN = re.compile(r"<!--\s*doctest-(?P<kind>setup|c-setup|c-teardown|sh-setup|check)\n(?P<code>.*?)-->", re.S)
SESSION = re.compile(r"(?:<!--\s*doctest:\s*(?P<mark>[^>]*?)\s*-->\s*\n)?^```\n(?P<code>\$ .*?)^```$", re.S | re.M)
SHARED = os.path.abspath(os.path.join(ROOT, "..", "shared"))
HAVE_GPU = len(CONTEXTS) > 1
# What a page may use that the package does not need: a block that imports one of them is skipped,
# with the reason, where it is not installed (CI installs them all).
OPTIONAL_PACKAGES = {"dask", "distributed", "dask_cuda", "cupy", "cupyx", "torch", "umap", "networkx", "pyformlang",
                     "cfpq_data", "matplotlib", "pandas"}


def pages():
    if not os.path.isdir(DOCS):  # an installed package, away from the sources
        return []
    names = sorted(f for f in os.listdir(DOCS) if f.endswith(".md"))
    return [os.path.join("docs", f) for f in names] + ["README.md"]


def blocks(page, lang):
    text = open(os.path.join(ROOT, page), encoding="utf-8").read()
    hidden = {}
    for m in HIDDEN.finditer(text):  # a page's checks (and setups) of one kind run together, in order
        hidden[m["kind"]] = hidden.get(m["kind"], "") + m["code"]
    found = [(m["mark"] or "", m["code"], text.count("\n", 0, m.start("code")) + 1)
             for m in BLOCK.finditer(text) if m["lang"] == lang]
    return hidden, found


def runnable(mark):
    """None when the block runs here, else why not."""
    if mark.startswith("skip"):
        return mark
    if mark == "gpu" and not HAVE_GPU:
        return "needs a GPU"
    return None


@pytest.mark.parametrize("page", [p for p in pages() if blocks(p, "python")[1]])
def test_python_examples(page, tmp_path, monkeypatch):
    hidden, found = blocks(page, "python")
    monkeypatch.chdir(tmp_path)
    scope = {"__name__": "__docs__"}
    if "setup" in hidden:
        exec(compile(hidden["setup"], f"{page} (doctest-setup)", "exec"), scope)
    ran = 0
    for mark, code, line in found:
        if runnable(mark):
            continue
        if not HAVE_GPU:
            code = code.replace('sr.Context("cuda"', 'sr.Context("cpu"')
        # line numbers in tracebacks are the page's
        try:
            exec(compile("\n" * (line - 1) + code, page, "exec"), scope)
        except ModuleNotFoundError as e:
            if (e.name or "").split(".")[0] not in OPTIONAL_PACKAGES:
                raise
            pytest.skip(f"{page}:{line} needs {e.name}, which is not installed here (the page's later blocks "
                        f"did not run either)")
        ran += 1
    if ran == 0:
        pytest.skip("every Python block of the page is marked not to run here")
    if "check" in hidden:
        exec(compile(hidden["check"], f"{page} (doctest-check)", "exec"), scope)


def library_dir():
    """The directory holding libsparsering (the build tree the tests run from), or None."""
    import sparsering
    here = os.path.dirname(os.path.abspath(sparsering.__file__))
    for d in (os.path.join(here, "..", ".."), here):
        if any(f.startswith("libsparsering.so") for f in os.listdir(d)):
            return os.path.abspath(d)
    return None


def c_program(hidden, code):
    """A C block as a program: its #include lines at file scope, the rest inside main between
    the page's setup and teardown."""
    includes = [ln for ln in code.splitlines() if ln.startswith("#include")]
    body = "\n".join(ln for ln in code.splitlines() if not ln.startswith("#include"))
    head = "#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n" \
           "#include \"sparsering.h\"\n" + "\n".join(includes)
    return (f"{head}\nint main(void)\n{{\n{hidden.get('c-setup', '')}\n{body}\n"
            f"{hidden.get('c-teardown', '')}\nreturn 0;\n}}\n")


C_PAGES = [p for p in pages() if blocks(p, "c")[1]]


@pytest.mark.parametrize("page", C_PAGES)
def test_c_examples(page, tmp_path):
    lib = library_dir()
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not lib or not cc:
        pytest.skip("needs the build tree's libsparsering and a C compiler")
    hidden, found = blocks(page, "c")
    programs = []  # (code, first line), the blocks that continue others joined to them
    for mark, code, line in found:
        if mark == "continues" and programs:
            programs[-1] = (programs[-1][0] + "\n" + code, programs[-1][1])
        elif not runnable(mark):
            programs.append((code, line))
    ran = 0
    for i, (code, line) in enumerate(programs):
        src = tmp_path / f"block{i}.c"
        src.write_text(c_program(hidden, code))
        exe = tmp_path / f"block{i}"
        build = subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-Wno-unused-variable", "-Wno-unused-but-set-variable",
                                "-I", os.path.join(ROOT, "include"), str(src), "-o", str(exe), "-L", lib,
                                "-lsparsering", f"-Wl,-rpath,{lib}", "-lm"], capture_output=True, text=True)
        assert build.returncode == 0, f"{page}:{line}: the C example does not compile:\n{build.stderr}"
        env = dict(os.environ)
        if not HAVE_GPU:
            env["SPARSERING_BACKEND"] = "cpu"
        run = subprocess.run([str(exe)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
        assert run.returncode == 0, f"{page}:{line}: the C example failed ({run.returncode}):\n{run.stdout}{run.stderr}"
        ran += 1
    if ran == 0:
        pytest.skip("every C block of the page is marked not to run here")


def sessions(page):
    text = open(os.path.join(ROOT, page), encoding="utf-8").read()
    hidden = {m["kind"]: m["code"] for m in HIDDEN.finditer(text)}
    return hidden, [(m["mark"] or "", m["code"]) for m in SESSION.finditer(text) if "$ sparsering" in m["code"]]


def commands(code):
    """(command, the first line the page shows after it, or None)."""
    out, lines = [], code.splitlines()
    for i, ln in enumerate(lines):
        if ln.startswith("$ "):
            after = lines[i + 1] if i + 1 < len(lines) and not lines[i + 1].startswith("$ ") else None
            out.append((ln[2:], after))
    return out


@pytest.mark.parametrize("page", [p for p in pages() if sessions(p)[1]])
def test_command_line_sessions(page, tmp_path):
    lib = library_dir()
    program = os.path.join(lib, "sparsering") if lib else None
    if not program or not os.path.exists(program):
        pytest.skip("needs the build tree's sparsering program")
    if not os.path.isdir(os.path.join(SHARED, "data")):
        pytest.skip("needs ../shared/data")
    work = tmp_path / "work"
    work.mkdir()
    os.symlink(SHARED, tmp_path / "shared")  # ../shared from the scratch directory
    env = dict(os.environ, PATH=lib + os.pathsep + os.environ["PATH"])
    if not HAVE_GPU:
        env["SPARSERING_BACKEND"] = "cpu"
    hidden, found = sessions(page)
    if "sh-setup" in hidden:
        subprocess.run(["bash", "-ec", hidden["sh-setup"]], cwd=work, env=env, check=True)
    ran = 0
    for mark, code in found:
        if runnable(mark):
            continue
        for command, shown in commands(code):
            command = command.split("  #")[0]  # the page's trailing comments
            run = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True,
                                 timeout=600)
            printed = (run.stdout + run.stderr).strip().splitlines()
            if command.rstrip().endswith("echo $?"):  # the page shows the status last, before the next command
                lines = code.splitlines()
                at = lines.index("$ " + command) + 1
                while at + 1 < len(lines) and not lines[at + 1].startswith("$ "):
                    at += 1
                status = run.stdout.strip().splitlines()
                assert status and status[-1] == lines[at].strip(), f"{page}: `{command}` ended {status}"
                continue
            assert run.returncode == 0, f"{page}: `{command}` failed ({run.returncode}):\n{run.stdout}{run.stderr}"
            if shown is not None and printed:
                word = shown.split()[0]
                assert printed[0].startswith(word), f"{page}: `{command}` printed {printed[0]!r}, the page {shown!r}"
            ran += 1
    if ran == 0:
        pytest.skip("every session of the page is marked not to run here")
