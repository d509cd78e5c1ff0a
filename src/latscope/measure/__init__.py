"""Making runs: one scenario measured by the probe and kept (`runner`: `measure`, `keep`,
`import_samples`, `load`), what the store knows of a scenario's variation between runs
(`variation`), scenarios interleaved as arms of one process (`arms`, `ab`: `latscope ab`)
and what that resolves on this machine (`trust`).  Importing the package imports none of
them (each is imported where it is used: the probe's runs need none of the statistics)."""
