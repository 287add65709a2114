"""Run a command in a child process held at a barrier: `python barrier.py MODULE:QUALNAME N -- ARGV`
runs `rag-assets ARGV` (or, with `-c CODE`, that code), and after the N-th call of the named
function returns, prints BARRIER_LINE on stdout and waits for ever. The parent reads that line
and then knows exactly where the child is: a kill test acts on a child that is at the right
point, not on one that raced past it or has not got there yet."""

import importlib
import sys
import threading

BARRIER_LINE = "AT-BARRIER"


def hold_after(target: str, calls: int) -> None:
    module_name, qualname = target.split(":")
    owner = importlib.import_module(module_name)
    *path, name = qualname.split(".")
    for part in path:
        owner = getattr(owner, part)
    real = getattr(owner, name)
    seen = {"n": 0}

    def held(*args, **kwargs):
        result = real(*args, **kwargs)
        seen["n"] += 1
        if seen["n"] == calls:
            print(BARRIER_LINE, flush=True)
            threading.Event().wait()  # until the parent kills this process
        return result

    setattr(owner, name, held)


def wait_at_barrier(proc, timeout: float = 300) -> None:
    """Read the child's stdout until it reports the barrier (it then waits to be killed)."""
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        for line in proc.stdout:
            if line.strip() == BARRIER_LINE:
                return
        raise AssertionError(f"the child ended (code {proc.wait()}) before it reached the barrier")
    finally:
        timer.cancel()


if __name__ == "__main__":
    target, calls, separator, *rest = sys.argv[1:]
    assert separator == "--"
    hold_after(target, int(calls))
    if rest[:1] == ["-c"]:
        sys.argv = ["-c", *rest[2:]]
        exec(compile(rest[1], "<barrier -c>", "exec"), {"__name__": "__main__"})
    else:
        from rag_assets.app.cli import main

        sys.exit(main(rest))
