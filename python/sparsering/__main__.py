"""`python -m sparsering ARGS` runs the sparsering command-line program with ARGS (the same
commands and --help as `sparsering ARGS`); `python -m sparsering show-config` prints
sparsering.show_config()."""
import os
import shutil
import sys


def main(argv):
    if argv[:1] == ["show-config"]:
        from . import show_config
        show_config()
        return 0
    here = os.path.dirname(os.path.abspath(__file__))
    program = next((p for p in (os.path.join(here, "bin", "sparsering"), shutil.which("sparsering"))
                    if p and os.access(p, os.X_OK)), None)
    if program is None:
        print("python -m sparsering: the sparsering program is not installed beside this package or on PATH\n"
              "(build it with: cmake -S . -B build && cmake --build build; it is build/sparsering);\n"
              "python -m sparsering show-config prints this installation's configuration", file=sys.stderr)
        return 2
    os.execv(program, [program] + argv)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
