"""latscope-pyprobe: the Python runtime engine (docs/python-runtime.md).

A second measurement engine beside the C probe, with the same contract (docs/probe-cli.md,
docs/sample-format.md): it measures hand-offs between two threads or two processes as a
Python program makes them (locks, semaphores, queues, pipes, sockets, shared memory, ZeroMQ,
asyncio) and writes the same sample file.  It uses the standard library only (pyzmq where
installed) and imports nothing of the lab, so that any interpreter runs it, by path:

    INTERPRETER path/to/latscope/pyprobe BENCH -p key=value -n N -o FILE
    INTERPRETER path/to/latscope/pyprobe --list

(`python -m latscope.pyprobe` works too where latscope is importable.)  Its modules import
each other as top-level modules (`lp_*`), the directory being the first entry of sys.path
when it is run; the lab never imports them, it runs the engine.
"""
