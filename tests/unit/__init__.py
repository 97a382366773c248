"""Fast unit tests: no kernels, no processes, a few seconds in all."""
