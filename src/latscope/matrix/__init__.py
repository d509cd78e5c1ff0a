"""Matrices of mechanisms measured cell by cell: the IPC matrix and its sweep of message
sizes (`ipc`: `latscope matrix`), and the Python runtimes' mechanisms beside their C
counterparts (`runtime`: `latscope matrix --runtime`)."""
